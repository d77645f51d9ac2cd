"""The headless view: a line per notable event on stderr, the solution on stdout."""

from __future__ import annotations

import sys
from typing import TextIO

from ..event_bus import Subscription
from ..models.state import DebateState, Solution
from ..safety.sanitize import terminal_safe
from .describe import describe


async def print_events(sub: Subscription, out: TextIO | None = None, *,
                       skip: tuple[type, ...] = ()) -> None:
    """A line per event on `out` (stderr); events of the `skip` types are left to the caller."""
    out = out or sys.stderr
    async for event in sub:
        if isinstance(event, skip):
            continue
        line = describe(event)
        if line is not None:
            print(line.text, file=out, flush=True)


def solution_text(state: DebateState) -> str:
    """The final solution as plain text, safe for a terminal."""
    sol = state.final_solution
    if sol is None:
        return ""
    # Cleaned before it is stripped: a reply that opens with an escape sequence and a newline
    # would otherwise start stdout with a blank line.
    lines = [terminal_safe(sol.description).strip() or "(the judge's answer held no text)", ""]
    if sol.tally is not None:
        lines.append(f"Decided by {sol.synthesized_by}: {sol.tally.summary()}")
    if sol.confidence is not None or sol.tally is None:
        lines.append(f"Confidence: {sol.confidence if sol.confidence is not None else 'n/a'}" + _not_convergence(state))
    for title, items in (("Trade-offs", sol.tradeoffs), ("Recommendations", sol.recommendations),
                         ("Unresolved", sol.unresolved)):
        if items:
            lines.append(f"\n{title}:")
            lines += [f"- {x}" for x in items]
    return terminal_safe("\n".join(lines) + "\n")


def _not_convergence(state: DebateState) -> str:
    """After a convergence check, which number is which: the two are both 0–100 from the judge."""
    scored = [s for s in state.convergence if s.confidence is not None]
    if not scored:
        return ""
    last = scored[-1]
    word = "turn" if state.protocol == "conversation" else "round"
    return (f" (the judge's confidence in this final answer; the convergence score, how far the agents "
            f"agreed, was {last.confidence} after {word} {last.round})")


def solution_markdown(solution: Solution) -> str:
    """The solution's body as markdown: the answer, then its lists under headings."""
    parts = [solution.description.strip()]
    for title, items in (("Trade-offs", solution.tradeoffs), ("Recommendations", solution.recommendations),
                         ("Unresolved", solution.unresolved)):
        if items:
            parts += ["", f"### {title}", ""] + [f"- {x}" for x in items]
    return "\n".join(parts) + "\n"


def solution_document(state: DebateState) -> str:
    """The final solution as a markdown file (`moot run -o x.md`, the TUI's /save), terminal-safe:
    the problem's first line as its title, the answer, the confidence and where it came from."""
    sol = state.final_solution
    if sol is None:
        return ""
    first = next((line.strip() for line in state.problem.splitlines() if line.strip()), "")
    title = first.lstrip("#").strip() or state.id  # a problem that is itself a heading: not "# # Title"
    conf = f"{sol.confidence}/100" if sol.confidence is not None else "n/a"
    body = [f"# {title}", "", solution_markdown(sol), f"*Confidence {conf} · moot debate {state.id}*", ""]
    return terminal_safe("\n".join(body))

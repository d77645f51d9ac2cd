"""The headless view: a line per phase and per contribution on stderr."""

from __future__ import annotations

import sys
from typing import TextIO

from core.events import Event, Subscription
from core.models import DebateState


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def describe(event: Event) -> str | None:
    """One human line for an event, or None for events the headless view skips."""
    t = event.type
    if t == "debate_started":
        names = ", ".join(f"{a.name} ({a.role})" for a in event.agents)
        demo = " [DEMO provider: offline, scripted answers]" if "demo" in event.provider_label else ""
        return f"debate {event.debate_id}: {event.total_rounds} rounds, agents {names}; judge {event.judge.role}{demo}"
    if t == "debate_resumed":
        return f"resuming debate {event.debate_id} at round {event.from_round}"
    if t == "round_started":
        return f"── round {event.round}"
    if t == "phase_started":
        return f"   {event.phase}…" if event.phase != "summarize" else None
    if t == "contribution_added":
        c = event.contribution
        target = f" → {c.target_agent_id}" if c.target_agent_id else ""
        carried = " (carried from last refinement)" if c.carried_from else ""
        m = c.metadata
        return (f"   {c.type:<10} {c.agent_id}{target}{carried}: {len(c.content)} chars, "
                f"{_k(m.prompt_tokens)} in / {_k(m.completion_tokens)} out, {m.latency_ms} ms")
    if t == "summary_added":
        s = event.summary
        md = s.metadata
        who = "judge" if event.judge else s.agent_id
        fb = f" (fallback: {md.fallback_reason})" if md.fallback_reason else ""
        return (f"   summary    {who} [{s.trigger}, {s.method}/{s.strategy}]: "
                f"{_k(md.before_tokens)} → {_k(md.after_tokens)} tokens{fb}")
    if t == "summary_requested":
        return f"   summary requested for {event.agent_id} (at its next call)"
    if t == "call_failed" and event.will_retry:
        return f"   retry      {event.agent_id}: {event.error}"
    if t == "warning":
        return f"   warning    {event.message}"
    if t == "synthesis_completed":
        conf = event.solution.confidence
        return f"── synthesis: confidence {conf if conf is not None else 'n/a'}"
    if t == "clarifications_answered":
        n = sum(1 for a in event.answers if a.answer)
        return f"   clarify    {len(event.answers)} question(s), {n} answered"
    if t == "note_injected":
        return f"   note       moderator: {event.note.text}"
    if t == "convergence_scored":
        c = event.score.confidence
        return f"   converge?  round {event.score.round}: judge confidence {c if c is not None else 'n/a'}"
    if t == "converged":
        return f"── converged after round {event.round} (confidence {event.confidence} ≥ {event.threshold})"
    if t == "budget_reached":
        return f"── budget reached: {event.reason}; the judge synthesizes from what exists"
    if t == "control":
        return f"   {event.action} requested"
    if t == "debate_completed":
        cost = f", ${event.totals.cost_usd:.4f}" if event.totals.cost_usd else ""
        return (f"debate {event.status}: {_k(event.totals.prompt_tokens)} prompt + "
                f"{_k(event.totals.completion_tokens)} completion tokens{cost}")
    if t == "debate_interrupted":
        return f"debate {event.status}: {event.reason}"
    if t == "debate_failed":
        return f"debate failed: {event.error}"
    return None


async def print_events(sub: Subscription, out: TextIO | None = None) -> None:
    out = out or sys.stderr
    async for event in sub:
        line = describe(event)
        if line:
            print(line, file=out, flush=True)


def solution_text(state: DebateState) -> str:
    sol = state.final_solution
    if sol is None:
        return ""
    lines = [sol.description.strip(), ""]
    lines.append(f"Confidence: {sol.confidence if sol.confidence is not None else 'n/a'}")
    for title, items in (("Trade-offs", sol.tradeoffs), ("Recommendations", sol.recommendations),
                         ("Unresolved", sol.unresolved)):
        if items:
            lines.append(f"\n{title}:")
            lines += [f"- {x}" for x in items]
    return "\n".join(lines) + "\n"

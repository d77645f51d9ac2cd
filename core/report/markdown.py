"""`moot report`: a saved debate as one markdown document.

The report is rendered from the folded DebateState alone (no provider, no network),
so it can be produced for any debate on disk, finished or not. Contribution texts
are markdown themselves; their headings are demoted below the report's own outline.
A long debate's report is made a step at a time (`report_chunks`, from the steps read
back from its log), so its size is never held in memory.

Just over 400 lines: the report's sections are one document's outline, and the steps, the
judge's material, the summaries and the experiments under their calls are written in its order.
The experiments' own rendering is in `experiments.py`; the next split is the cost tables.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import TYPE_CHECKING

from ..models.provider_kinds import any_scripted
from ..models.state import (
    AdaptiveDecision,
    CallMetadata,
    Contribution,
    ConvergenceScore,
    DebateState,
    ModeratorNote,
    Round,
    Summary,
    Usage,
)
from ..safety.sanitize import one_line_safe, terminal_safe
from .dropped import facts_markdown
from .experiments import by_call, leftover_markdown, markdown_lines
from .grounding import report_section

if TYPE_CHECKING:
    from ..experiments import Experiment

_HEADING = re.compile(r"^( {0,3})(#{1,6})(?=\s|$)")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
STATUS_TEXT = {
    "completed": "completed",
    "running": "running (or ended without a final event)",
    "failed": "failed",
    "interrupted": "interrupted (resumable)",
    "stopped": "stopped by the user",
    "stopped_budget": "stopped: the token/cost budget was reached",
}


# --------------------------------------------------------------------------- helpers


def _outside_code(lines: list[str]) -> tuple[list[bool], str]:
    """Per line: is it prose (not inside or opening/closing a fenced block)? Plus an unclosed fence."""
    flags: list[bool] = []
    fence = ""
    for line in lines:
        if f := _FENCE.match(line):
            fence = f.group(1) if not fence else ("" if f.group(1) == fence else fence)
            flags.append(False)
        else:
            flags.append(not fence)
    return flags, fence


def _empty_heading(line: str) -> bool:
    """`##`, `# ` or `### ###`: a heading with no text (a closing run of #s is no text)."""
    m = _HEADING.match(line)
    return m is not None and not re.sub(r"(?:^|\s)#+\s*$", "", line[m.end():]).strip()


def demote_headings(text: str, top: int) -> str:
    """Shift markdown headings so the shallowest one sits at level `top` (max 6).

    Headings inside fenced code blocks are left alone, text that is already deep
    enough keeps its levels, a heading with no text is dropped (a model's empty `##`
    would be an empty entry in the report's outline), and a code fence left open is closed."""
    lines = text.splitlines()
    prose, open_fence = _outside_code(lines)
    kept = [(line, ok) for line, ok in zip(lines, prose) if not (ok and _empty_heading(line))]
    lines, prose = [line for line, _ in kept], [ok for _, ok in kept]
    levels = [len(m.group(2)) for line, ok in zip(lines, prose) if ok and (m := _HEADING.match(line))]
    shift = max(0, top - min(levels)) if levels else 0
    out: list[str] = []
    for line, ok in zip(lines, prose):
        if ok and shift and (m := _HEADING.match(line)):
            line = m.group(1) + "#" * min(6, len(m.group(2)) + shift) + line[m.end():]
        out.append(line)
    if open_fence:  # an unclosed code block would swallow the rest of the report
        out.append(open_fence)
    return "\n".join(out).strip()


def looks_like_json(text: str) -> bool:
    """A reply that is JSON (or was meant to be: a streamed object cut short), not prose."""
    return text.lstrip().startswith(("{", "["))


def code_block(text: str, info: str = "") -> str:
    """`text` as a fenced code block, shown as written: the fence is longer than any run of
    backticks inside, so nothing in it can close the block early."""
    runs = [len(r) for r in re.findall(r"`+", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}{info}\n{text.strip()}\n{fence}"


def cell(value: object) -> str:
    """A value made safe for one markdown table cell."""
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip() or " "


def table(header: Iterable[str], rows: Iterable[Iterable[object]], right: Iterable[int] = ()) -> list[str]:
    """Markdown table lines; columns listed in `right` are right-aligned (numbers)."""
    header, right = list(header), set(right)
    align = ["---:" if i in right else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def _usd(value: float) -> str:
    return f"${value:.4f}"


def _meta_line(m: CallMetadata) -> str:
    cost = f" · {_usd(m.cost_usd)}" if m.cost_usd else ""
    tries = f" · {m.attempts} attempts" if m.attempts > 1 else ""
    cached = f" ({m.cached_tokens} cached)" if m.cached_tokens else ""
    return (f"_model {m.model or 'n/a'} · {m.prompt_tokens} prompt{cached} + {m.completion_tokens} completion tokens"
            f" · latency {m.latency_ms} ms{cost}{tries}_")


def uses_demo(state: DebateState) -> bool:
    people = [*state.agents, *([state.judge] if state.judge else [])]
    return any_scripted(a.provider for a in people)


# --------------------------------------------------------------------------- sections


def _header(state: DebateState) -> list[str]:
    title = state.problem.strip().splitlines()[0] if state.problem.strip() else state.id
    status = STATUS_TEXT.get(state.status, state.status)
    if state.error:
        status += f" — {'by ' if state.status == 'interrupted' else ''}{state.error}"
    created = time.strftime("%Y-%m-%d %H:%M", time.localtime(state.created_at))
    out = [f"# Debate report: {title.lstrip('# ')}", "",
           f"**Status:** {status} · **Rounds:** {state.round_count}/{state.total_rounds} · "
           f"**Debate:** `{state.id}` · **Created:** {created}", ""]
    if uses_demo(state):
        out += ["> **DEMO** — agents in this debate used the offline demo provider: every answer below is "
                "scripted, not written by a language model.", ""]
    return out + ["## Problem", "", demote_headings(state.problem, 3), ""]


def _agents(state: DebateState) -> list[str]:
    rows = [(a.id, a.name, a.role, a.model, a.provider, f"{a.temperature:g}") for a in state.agents]
    if state.judge:
        j = state.judge
        rows.append((j.id if j.id == "judge" else f"{j.id} (judge)", j.name, j.role, j.model, j.provider, f"{j.temperature:g}"))
    return ["## Agents", "", *table(["Id", "Name", "Role", "Model", "Provider", "Temperature"], rows), ""]


def _clarifications(state: DebateState) -> list[str]:
    items = list(state.clarifications)
    if not items:
        return []
    out = ["## Clarifications", ""]
    for c in items:
        answer = c.answer.strip() or "_(no answer)_"
        out += [f"- **{c.agent_id}** asked: {c.question}", f"  - Answer: {answer}"]
    return out + [""]


def _contribution(c: Contribution, verbose: bool, names: dict[str, str] | None = None) -> list[str]:
    if c.type == "critique":
        title = f"### Critique: {c.agent_id} → {c.target_agent_id or '?'}"
    elif c.type == "message":
        title = f"### Turn {c.round} · {(names or {}).get(c.agent_id, c.agent_id)} ({c.role})"
    else:
        title = f"### {c.type.capitalize()}: {c.agent_id}"
    out = [title, ""]
    if c.carried_from:
        out += [f"_Carried over from its previous refinement ({c.carried_from}); no new call._", ""]
    if c.metadata.clipped_at is not None:
        out += [f"_The model's answer ran far past its output limit; moot stopped reading it at "
                f"{c.metadata.clipped_at:,} bytes._", ""]
    elif c.metadata.server_truncated:
        out += ["_The server ended the model's answer early: the request filled its context window._", ""]
    elif c.metadata.finish_reason == "length":
        out += ["_The model's answer was cut at its output limit._", ""]
    elif verbose:
        out += [_meta_line(c.metadata), ""]
    return out + [demote_headings(c.content, 4) or "_(empty)_", ""]


def _summary_rows(summaries: Iterable[Summary], replaced: set[str] | None = None) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for s in summaries:
        m = s.metadata
        who = f"{s.agent_id} (replaced later this round)" if replaced and s.id in replaced else s.agent_id
        trigger = f"{s.trigger}: {s.focus}" if s.focus else s.trigger
        rows.append((who, trigger, f"{s.written_by}/{s.strategy}", f"{m.before_tokens} → {m.after_tokens}",
                     f"{m.before_chars} → {m.after_chars}", s.covered_count, m.fallback_reason or "—"))
    return rows


_SUMMARY_HEAD = ["Agent", "Trigger", "Method/strategy", "Tokens before → after", "Chars before → after",
                 "Items covered", "Fallback"]


def _summary_texts(summaries: Iterable[Summary], verbose: bool) -> list[str]:
    out: list[str] = []
    for s in summaries:
        meta = f" {_meta_line_summary(s)}" if verbose else ""
        out += ["<details>", f"<summary>Summary for {s.agent_id}{meta}</summary>", "",
                demote_headings(s.summary, 5) or "_(empty)_", "", "</details>", "", *facts_markdown(s)]
    return out


def _meta_line_summary(s: Summary) -> str:
    m = s.metadata
    return f"(model {m.model or 'none'}, {m.prompt_tokens}+{m.completion_tokens} tokens, {m.latency_ms} ms)"


def _rounds(state: DebateState, verbose: bool, steps: Iterable[Round],
            exps: dict[str, list[Experiment]], placed: set[str]) -> Iterator[list[str]]:
    """Each round's lines in turn; under each contribution the experiments on its call (noted in `placed`)."""
    notes = list(state.notes)
    scores = {s.round: s for s in state.convergence}
    if state.protocol == "conversation":
        yield from _transcript(state, verbose, steps, exps, placed)
        return
    for rnd in steps:
        out = [f"## Round {rnd.number}", ""]
        if rnd.summaries or rnd.replaced_summaries:
            summaries = [*rnd.replaced_summaries, *rnd.summaries.values()]
            replaced = {s.id for s in rnd.replaced_summaries}
            out += ["### Summaries", "", *table(_SUMMARY_HEAD, _summary_rows(summaries, replaced), right=(5,)), ""]
            out += _summary_texts(summaries, verbose)
        order = {"proposal": 0, "answer": 0, "critique": 1, "ranking": 1, "refinement": 2}
        views = {v.call_id: v for v in rnd.calls if v.phase == "rank"}
        authors = {c.id: c.agent_id for c in rnd.contributions}
        shown = {v.call_id: v for v in rnd.calls if v.phase == "answer" and v.task_params.get("anonymous")}
        every = {c.id: c.agent_id for r in state.rounds for c in r.contributions} if shown else {}
        for c in sorted(rnd.contributions, key=lambda c: order.get(c.type, 3)):
            out += _contribution(c, verbose) + _experiments(c, exps, placed)
            view = views.get(c.metadata.call_id or "") if c.type == "ranking" else None
            if view is not None:  # the council's anonymized labels, revealed to the reader
                labels = ", ".join(f"Response {chr(65 + k)} = {authors.get(i, '?')}"
                                   for k, i in enumerate(view.task_contribution_ids))
                out += [f"_Anonymized as: {labels}._", ""]
            seen = shown.get(c.metadata.call_id or "") if c.type == "answer" else None
            if seen is not None and seen.task_contribution_ids:  # `adaptive`: whose answers it read
                labels = ", ".join(f"Answer {chr(65 + k)} = {every.get(i, '?')}"
                                   for k, i in enumerate(seen.task_contribution_ids))
                out += [f"_Read anonymized: {labels}._", ""]
        if not rnd.contributions:
            out += ["_No contributions recorded in this round._", ""]
        for d in (d for d in state.adaptive if d.round == rnd.number):
            out += [f"**Adaptive decision after round {d.round}:** {_adaptive_text(d)}", ""]
        out += _after_step(rnd.number, "round", scores, notes)
        yield out


def _transcript(state: DebateState, verbose: bool, steps: Iterable[Round],
                exps: dict[str, list[Experiment]], placed: set[str]) -> Iterator[list[str]]:
    """A conversation: every turn in order, each rolling summary where it was made."""
    names = {a.id: a.name for a in state.agents}
    notes = list(state.notes)
    scores = {s.round: s for s in state.convergence}
    yield ["## Transcript", ""]
    for rnd in steps:
        out: list[str] = []
        summaries = [*rnd.replaced_summaries, *rnd.summaries.values()]
        if summaries:
            out += [f"#### Rolling summary before turn {rnd.number}", "",
                    *table(_SUMMARY_HEAD, _summary_rows(summaries), right=(5,)), ""]
            out += _summary_texts(summaries, verbose)
        for c in rnd.contributions:
            out += _contribution(c, verbose, names) + _experiments(c, exps, placed)
        out += _after_step(rnd.number, "turn", scores, notes)
        yield out


def _experiments(c: Contribution, exps: dict[str, list[Experiment]], placed: set[str]) -> list[str]:
    call_id = c.metadata.call_id
    if call_id is None or call_id not in exps or c.carried_from:
        return []
    placed.add(call_id)
    return markdown_lines(exps[call_id])


def _after_step(number: int, word: str, scores: dict[int, ConvergenceScore], notes: list[ModeratorNote]) -> list[str]:
    """What closes a round or turn: the judge's convergence score, the moderator's notes."""
    out: list[str] = []
    if number in scores:
        out += [f"**Convergence score after {word} {number}:** {_score_text(scores[number])}", ""]
    for n in notes:
        if n.after_round == number:
            out += [f"> **Moderator note:** {n.text}", ""]
    return out


def _adaptive_text(d: AdaptiveDecision) -> str:
    counts = ", ".join(f"`{one_line_safe(a, 40)}` ×{n}" for a, n in d.counts.items()) or "no answer in the asked form"
    return (f"{d.decision} — {one_line_safe(d.reason, 300)} (answers: {counts}"
            + (f", {d.unparsed} unparsed" if d.unparsed else "")
            + f"; this {d.step} cost {d.calls} call{'s' if d.calls != 1 else ''}, {d.tokens:,} tokens)")


def _score_text(s: ConvergenceScore) -> str:
    if s.confidence is None:
        return "not parsed" + (f" (the judge answered: {' '.join((s.raw or '').split())[:200]})" if s.raw else "")
    return f"{s.confidence} — {s.reason}"


def _synthesis(state: DebateState, verbose: bool) -> list[str]:
    out: list[str] = []
    if state.judge_summary:
        s = state.judge_summary
        out += ["## Judge summary", "", "The judge's synthesis read this summary of the final round.", "",
                *table(_SUMMARY_HEAD, _summary_rows([s]), right=(5,)), "", *_summary_texts([s], verbose)]
    sol = state.final_solution
    if sol is None:
        return out + ["## Final synthesis", "", "_No final synthesis: the debate did not finish._", ""]
    conf = f"{sol.confidence}/100" if sol.confidence is not None else "n/a"
    out += ["## Final synthesis", "", f"**Confidence:** {conf} · synthesized by {sol.synthesized_by}", ""]
    if sol.tally is not None:
        out += [f"**Decided by {sol.synthesized_by}:** {sol.tally.summary()}", ""]
    if state.convergence:
        out += ["_The confidence is the judge's in this final answer; the convergence scores above rate how far "
                "the agents agreed._", ""]
    if verbose:
        out += [_meta_line(sol.metadata), ""]
    if not sol.parsed and looks_like_json(sol.description):  # cut short, or not the fields asked for
        out += ["_The judge's reply could not be read as the synthesis it was asked for; it is shown as "
                "written._", "", code_block(sol.description, "json"), ""]
    elif not sol.parsed:
        out += ["_The judge's reply was not structured JSON; it is shown as written._", "",
                demote_headings(sol.description, 3), ""]
    else:
        out += [demote_headings(sol.description, 3), ""]
    for title, items in (("Trade-offs", sol.tradeoffs), ("Recommendations", sol.recommendations),
                         ("Unresolved", sol.unresolved)):
        if items:
            out += [f"### {title}", "", *(f"- {i.strip()}" for i in items), ""]
    return out


def _totals(state: DebateState) -> list[str]:
    """Per-agent usage as the state totals it (every kind of call: clarify, summaries, scores)."""
    people = [a.id for a in state.agents] + ([state.judge.id] if state.judge else [])
    people += [p for p in state.agent_totals if p not in people]
    t = state.totals
    cache = t.cached_tokens > 0  # a column only where a server reported its prompt cache

    def row(who: str, u: Usage) -> tuple[object, ...]:
        cached = (f"{u.cached_tokens} ({u.cached_tokens / u.prompt_tokens:.0%})" if u.prompt_tokens else "0",)
        return (who, u.calls, u.prompt_tokens, *(cached if cache else ()), u.completion_tokens, u.summary_tokens,
                _usd(u.cost_usd))

    rows = [row(who, state.agent_totals.get(who, Usage())) for who in people]
    rows.append(row("**Total**", t))
    head = ["Agent", "Calls", "Prompt", *(["Prompt from cache"] if cache else []), "Completion",
            "Summarization (included)", "Cost (USD)"]
    out = ["## Tokens and cost", "",
           f"**{t.total_tokens} tokens** ({t.prompt_tokens} prompt + "
           f"{t.completion_tokens} completion) · **cost {_usd(t.cost_usd)}**", "",
           *table(head, rows, right=tuple(range(1, len(head)))), ""]
    if cache:
        out += [f"_Of the prompt tokens, {t.cached_tokens} ({t.cached_tokens / t.prompt_tokens:.0%}) were served "
                "from the provider's prompt cache, as its usage reported them, and are priced at the model's "
                "cached-input rate._", ""]
    if uses_demo(state):
        out += ["_Demo provider calls are free; token counts are real tiktoken counts of the scripted text._", ""]
    return out


_BLANK_RUNS = re.compile(r"\n{3,}")


def report_chunks(state: DebateState, verbose: bool = False, steps: Iterable[Round] | None = None,
                  experiments: Iterable[Experiment] = ()) -> Iterator[str]:
    """The report as consecutive pieces of text, one per step: `steps` are the debate's steps
    (default: those `state` holds; a long debate's come from `DebateFolder.steps()`);
    `experiments` (the folder's re-runs) go under the contributions of the calls they vary.

    Without control characters: it quotes models and servers, and is read in terminals. Runs of
    blank lines are collapsed and the end is trimmed across pieces, as in the whole text."""
    parts: Iterable[list[str]] = [_header(state), _agents(state), report_section(state), _clarifications(state)]
    held, first = "", True
    exps, placed = by_call(experiments), set[str]()
    rounds = _rounds(state, verbose, state.rounds if steps is None else steps, exps, placed)
    step = "turn" if state.protocol == "conversation" else "round"
    rest = (leftover_markdown(exps, placed, step) for _ in (1,))  # once the steps have placed theirs
    # Chained, not a list: the steps' lines are made (and let go of) one step at a time.
    for part in chain(parts, rounds, (_synthesis(state, verbose),), rest, (_totals(state),)):
        if not part:
            continue
        text = held + ("" if first else "\n") + terminal_safe("\n".join(part))
        first = False
        text = _BLANK_RUNS.sub("\n\n", text)
        body = text.rstrip()
        held = text[len(body):]  # trailing whitespace waits: the end of the report drops it
        if body:
            yield body
    yield "\n"


def render_report(state: DebateState, verbose: bool = False, steps: Iterable[Round] | None = None) -> str:
    """The whole debate as markdown: pure, so the TUI or a library user can call it too."""
    return "".join(report_chunks(state, verbose, steps))

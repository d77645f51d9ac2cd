"""One line of text per event: what the headless printer prints and the TUI's event log shows.

`describe` is the one place an event becomes words, so the two views cannot drift.
The `kind` lets a view style the line (the TUI colours it by theme); the text is
made terminal-safe here, since events carry text from models and servers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, assert_never

from .. import events as ev
from ..models.provider_kinds import any_scripted, listed
from ..models.state import AdaptiveDecision, Contribution
from ..safety.sanitize import one_line_safe, terminal_safe

LineKind = Literal["phase", "contribution", "summary", "manual", "warning", "error", "done", "control"]

PHASE_LABELS = {
    "summarize": "summarization",
    "proposal": "proposals",
    "critique": "critiques",
    "refinement": "refinements",
    "synthesis": "synthesis",
    "turn": "conversation",
    "answer": "answers",
    "rank": "rankings",
    "clarify": "clarifications",
    "score": "convergence check",
}


@dataclass(frozen=True)
class Line:
    kind: LineKind
    text: str


def k(n: int | float) -> str:
    """Compact token counts: 812, 5.2k, 7k, 1.3M."""
    n = int(n)
    if abs(n) < 1000:
        return str(n)
    if abs(n) < 1_000_000:
        v = n / 1000
        return f"{v:.0f}k" if v >= 100 or v == int(v) else f"{v:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def usd(amount: float) -> str:
    """Dollars: $0.0123 below a dollar, $0.05 for whole cents, $12.34 from a dollar up."""
    cents = amount * 100
    if amount >= 1 or abs(cents - round(cents)) < 1e-9:
        return f"${amount:.2f}"
    return f"${amount:.4f}"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _cut(c: Contribution) -> str:
    if c.metadata.clipped_at is not None:
        return f" · clipped: read no further than {c.metadata.clipped_at:,} bytes"
    if c.metadata.server_truncated:
        return " · ended by the server: its window was full"
    return " · cut at its token limit" if c.metadata.finish_reason == "length" else ""


def _safe(text: str, limit: int | None = None) -> str:
    return one_line_safe(text, limit)


def adaptive_line(d: AdaptiveDecision) -> str:
    """One `adaptive` decision: what the step saw and cost, then what comes next and why."""
    counts = ", ".join(f"{_safe(a, 40)} ×{n}" for a, n in d.counts.items()) or "no answer in the asked form"
    if d.unparsed:
        counts += f", {d.unparsed} unparsed"
    nxt = {"stop": "stop", "draw": "draw more", "debate": "debate"}[d.decision]
    return (f"⚖ {d.step} in round {d.round} ({d.calls} call{_s(d.calls)}, {k(d.tokens)} tokens): {counts} → "
            f"{nxt}: {_safe(d.reason, 300)}")


def describe(event: ev.Event) -> Line | None:
    """The line for an event, or None for events no view lists (tokens, call starts).

    Made safe as a whole: ids and names come from the log, which a watcher may be reading
    from anywhere, so no field reaches the terminal raw (and a line stays one line)."""
    line = _describe(event)
    if line is None:
        return None
    return Line(line.kind, terminal_safe(line.text).replace("\n", " ").replace("\t", " "))


def _describe(event: ev.Event) -> Line | None:
    match event:
        case ev.DebateStarted():
            demo = " · DEMO provider (offline, scripted answers)" if any_scripted(listed(event.provider_label)) else ""
            names = ", ".join(_safe(a.id) for a in event.agents)
            unit = "turn" if event.protocol == "conversation" else "round"
            steps = f"{event.total_rounds} {unit}{'' if event.total_rounds == 1 else 's'}"
            shape = "" if event.protocol == "rounds" else f"{event.protocol}, "
            judge = "no judge" if event.protocol in ("single", "vote", "adaptive") else f"judge {_safe(event.judge.id)}"
            return Line("phase", f"▶ debate {event.debate_id} started: {shape}{steps}, "
                                 f"agents {names}; {judge}{demo}")
        case ev.DebateResumed(from_round=r):
            return Line("phase", f"▶ debate {event.debate_id} resumed at round {r}")
        case ev.RoundStarted(step="turn"):
            return None  # a conversation's message line says its turn
        case ev.RoundStarted(round=r):
            return Line("phase", f"── round {r} ──")
        case ev.PhaseStarted(phase=phase):
            return Line("phase", f"   {PHASE_LABELS.get(phase, phase)}")
        case ev.ContributionAdded(contribution=c) if c.type == "message":
            m = c.metadata
            return Line("contribution", f"✎ turn {c.round} {c.agent_id}: {len(c.content)} chars, "
                                        f"{k(m.prompt_tokens)} in / {k(m.completion_tokens)} out{_cut(c)}")
        case ev.ContributionAdded(contribution=c):
            target = f" → {c.target_agent_id}" if c.target_agent_id else ""
            if c.carried_from:
                return Line("contribution", f"✎ {c.agent_id} {c.type}{target}: carried from its last refinement")
            m = c.metadata
            secs = f", {m.latency_ms / 1000:.1f}s" if m.latency_ms else ""
            return Line("contribution", f"✎ {c.agent_id} {c.type}{target}: {len(c.content)} chars, "
                                        f"{k(m.prompt_tokens)} in / {k(m.completion_tokens)} out{secs}{_cut(c)}")
        case ev.SummaryAdded(summary=s, judge=judge):
            md = s.metadata
            who = ("judge (final round)" if judge else f"the conversation ({s.agent_id}'s)" if s.scope == "conversation"
                   else s.agent_id)
            how = "MANUAL" if s.trigger == "manual" else ("judge" if s.trigger == "judge" else "automatic")
            why = f" ({s.trigger})" if s.trigger in ("chars", "tokens", "turns") else ""
            focus = f" · focus: {_safe(s.focus, 80)}" if s.focus else ""
            fb = f" · fallback: {_safe(md.fallback_reason, 160)}" if md.fallback_reason else ""
            return Line("manual" if s.trigger == "manual" else "summary",
                        f"⇣ summary of {who}, {how}{why}: {k(md.before_tokens)} → {k(md.after_tokens)} tokens, "
                        f"{s.written_by}/{s.strategy}{focus}{fb}")
        case ev.SummaryRequested(agent_id=agent_id, focus=focus, from_step=since):
            about = f", focus: {_safe(focus, 80)}" if focus else ""
            before = f" of everything before step {since}" if since else ""
            return Line("manual", f"⇣ summary{before} requested for {agent_id} (at its next call{about})")
        case ev.SeatAnswered(agent_id=agent_id, via=via, chars=chars, phase=phase, round=r):
            where = {"editor": "in the editor", "stdin": "on stdin", "ctl": "with moot ctl say", "library": ""}[via]
            return Line("manual", f"✎ {agent_id} answered ({'message' if phase == 'turn' else phase}, "
                                  f"{'turn' if phase == 'turn' else 'round'} {r}){' ' + where if where else ''}: "
                                  f"{chars} chars")
        case ev.CallFailed(agent_id=agent_id, error=error, will_retry=True):
            return Line("warning", f"↻ {agent_id}: {_safe(error, 300)} (retrying)")
        case ev.CallFailed(agent_id=agent_id, error=error):
            return Line("error", f"✗ {agent_id}: {_safe(error, 300)}")
        case ev.Warning_(message=message):
            return Line("warning", f"⚠ {_safe(message, 400)}")
        case ev.SynthesisCompleted(solution=solution) if solution.tally is not None and solution.confidence is None:
            return Line("done", f"★ final answer ({_safe(solution.synthesized_by)}): {solution.tally.summary()}")
        case ev.SynthesisCompleted(solution=solution):
            conf = solution.confidence
            ranks = f" · {solution.tally.summary()}" if solution.tally is not None else ""
            return Line("done", f"★ synthesis: confidence {conf if conf is not None else 'n/a'}{ranks}")
        case ev.ClarificationsAsked(questions=questions, round=r):
            n = len(questions)
            agents = len({q.agent_id for q in questions})
            follow = " (follow-up)" if r > 1 else ""
            return Line("manual", f"? {n} clarifying question{_s(n)}{follow} from {agents} agent{_s(agents)}: "
                                  "waiting for the user's answers")
        case ev.ClarificationsAnswered(answers=answers, round=r):
            n = len(answers)
            answered = sum(1 for a in answers if a.answer)
            which = f"clarify (round {r})" if r > 1 else "clarify"
            if not n:
                return Line("manual", f"{which}: no questions")
            return Line("manual", f"{which}: {n} question{_s(n)}, {answered} answered")
        case ev.PinChanged(pin=pin):
            if pin.active:
                return Line("manual", f"▣ pinned {_safe(pin.label, 80)}: kept verbatim in every later view")
            return Line("manual", f"▢ unpinned {_safe(pin.label, 80)}: later views may summarize it")
        case ev.NoteInjected(note=note):
            return Line("manual", f"✉ moderator note (agents see it from their next call): {_safe(note.text, 400)}")
        case ev.ConvergenceScored(score=score):
            value = score.confidence
            # "convergence score", never "confidence": that word is the synthesis's own.
            return Line("summary", f"≈ convergence after round {score.round}: convergence score "
                                   f"{value if value is not None else 'not parsed'} (how far the agents agree)")
        case ev.Converged(round=r, confidence=conf, threshold=threshold):
            return Line("done", f"✓ converged after round {r} (convergence score {conf} ≥ {threshold}): "
                                "the judge synthesizes")
        case ev.AdaptiveDecided(decision=d):
            return Line("done" if d.decision == "stop" else "summary", adaptive_line(d))
        case ev.WindowLearned(endpoint=endpoint, model=model, window=window, source=source, ratio=ratio, reason=why):
            size = f"window {window} tokens" if window else "window unknown"
            count = f", the server counts ×{ratio:.2f} moot's tokens" if ratio > 1 else ""
            because = f" ({_safe(why, 200)})" if why else ""
            return Line("control", f"⚙ {_safe(model, 80)} at {_safe(endpoint, 80)}: {size}, {source}{count}{because}")
        case ev.BudgetReached(reason=reason):
            return Line("warning", f"$ budget reached: {reason}; the judge synthesizes from what exists")
        case ev.ControlChanged(action="pause", effective=True):
            return Line("control", "⏸ paused: no call in flight; nothing runs until /resume")
        case ev.ControlChanged(action=action, command_id=command_id):
            text = {"pause": "⏸ pause requested", "resume": "▶ resumed", "stop": "■ stop requested"}[action]
            by = " (from another process)" if command_id else ""
            return Line("control", text + (" (at the next call boundary)" if action != "resume" else "") + by)
        case ev.DebateCompleted(status=status, totals=tot):
            cost = f", {usd(tot.cost_usd)}" if tot.cost_usd > 0 else ""
            how = "✓ debate completed" if status == "completed" else "■ debate stopped at its budget"
            return Line("done" if status == "completed" else "warning",
                        f"{how}: {k(tot.prompt_tokens)} prompt + {k(tot.completion_tokens)} completion tokens{cost}")
        case ev.DebateInterrupted(status="stopped"):
            return Line("warning", "■ debate stopped by the user")
        case ev.DebateInterrupted():
            cause = f" ({_safe(event.cause, 80)})" if event.cause else ""
            return Line("warning", f"■ debate interrupted{cause}")
        case ev.DebateFailed(error=error):
            return Line("error", f"✗ debate failed: {_safe(error, 400)}")
        case ev.ToolCalled(agent_id=agent_id, tool=tool):
            how = " (written as text)" if tool.from_text else ""
            return Line("contribution", f"  ⚒ {agent_id} → {_safe(tool.name, 64)}({_safe(tool.arguments, 120)}){how}")
        case ev.ToolReturned(agent_id=agent_id, name=name, ok=ok, summary=summary):
            return Line("contribution" if ok else "warning",
                        f"  {'↳' if ok else '✗'} {agent_id} ← {_safe(name, 64)}: {_safe(summary, 160)}")
        case ev.ToolsReady(setup=setup):
            files = len(setup.references)
            where = ", ".join(_safe(r, 60) for r in setup.roots[:4]) + (" …" if len(setup.roots) > 4 else "")
            servers = "".join(f"; MCP {_safe(s.name, 24)}: " + (f"{len(s.tools)} tools" if s.error is None else
                                                              f"failed ({_safe(s.error, 120)})") for s in setup.servers)
            refs = f"{files} reference file{'s' if files != 1 else ''} from {where}" if setup.roots else "no references"
            skipped = f" ({len(setup.skipped)} skipped)" if setup.skipped else ""
            return Line("control", f"⚒ {refs}{skipped}{servers}")
        case ev.IndexRebuilding(done=done, total=total, texts=texts):
            if done >= total:
                return Line("control", f"⌕ search index: rebuilt ({texts:,} texts)")
            return Line("control", f"⌕ search index: rebuilding {done * 100 // max(1, total)} % …")
        case ev.Token() | ev.CallStarted() | ev.PhaseCompleted() | ev.CallContinued():
            return None
        case _:
            assert_never(event)

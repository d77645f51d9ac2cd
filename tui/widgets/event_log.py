"""The event log: phases, contributions, summarizations, warnings and errors, newest last."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import RichLog

from core.events import Event
from tui.format import PHASE_LABELS, clock_time, k, usd

STYLES = {
    "phase": ("", "bold"),
    "summary": ("accent", ""),
    "manual": ("accent", "bold"),
    "warning": ("warning", ""),
    "error": ("error", "bold"),
    "done": ("success", "bold"),
    "control": ("primary", ""),
}
"""kind → (theme colour, text style); colours follow the theme in use when the line is written."""


def describe(event: Event) -> tuple[str, str] | None:
    """(kind, text) for an event, or None for events the log skips."""
    t = event.type
    if t == "debate_started":
        demo = " · DEMO provider (offline, scripted answers)" if "demo" in event.provider_label else ""
        return "phase", (f"▶ debate started: {len(event.agents)} agents, {event.total_rounds} rounds, "
                         f"judge {event.judge.role}{demo}")
    if t == "debate_resumed":
        return "phase", f"▶ debate resumed at round {event.from_round}"
    if t == "round_started":
        return "phase", f"── round {event.round} ──"
    if t == "phase_started":
        return "phase", f"   {PHASE_LABELS.get(event.phase, event.phase)}"
    if t == "contribution_added":
        c = event.contribution
        target = f" → {c.target_agent_id}" if c.target_agent_id else ""
        if c.carried_from:
            return "contribution", f"✎ {c.agent_id} {c.type}{target}: carried from its last refinement"
        m = c.metadata
        secs = f", {m.latency_ms / 1000:.1f}s" if m.latency_ms else ""
        return "contribution", (f"✎ {c.agent_id} {c.type}{target}: {k(m.prompt_tokens)} in / "
                                f"{k(m.completion_tokens)} out{secs}")
    if t == "summary_added":
        s = event.summary
        md = s.metadata
        who = "judge (final round)" if event.judge else s.agent_id
        how = "MANUAL" if s.trigger == "manual" else ("automatic" if s.trigger != "judge" else "judge")
        why = f" ({s.trigger})" if s.trigger in ("chars", "tokens") else ""
        fb = f" · fallback: {md.fallback_reason}" if md.fallback_reason else ""
        return ("manual" if s.trigger == "manual" else "summary"), (
            f"⇣ summary of {who}, {how}{why}: {k(md.before_tokens)} → {k(md.after_tokens)} tokens, "
            f"{s.method}/{s.strategy}{fb}")
    if t == "summary_requested":
        return "manual", f"⇣ summary requested for {event.agent_id} (at its next call)"
    if t == "call_failed":
        if event.will_retry:
            return "warning", f"↻ {event.agent_id}: {event.error} (retrying)"
        return "error", f"✗ {event.agent_id}: {event.error}"
    if t == "warning":
        return "warning", f"⚠ {event.message}"
    if t == "synthesis_completed":
        conf = event.solution.confidence
        return "done", f"★ synthesis: confidence {conf if conf is not None else 'n/a'}"
    if t == "clarifications_asked":
        n = len(event.questions)
        agents = len({q.agent_id for q in event.questions})
        follow = " (follow-up)" if event.round > 1 else ""
        return "manual", (f"? {n} clarifying question{_s(n)}{follow} from {agents} agent{_s(agents)}: "
                          "waiting for the user's answers")
    if t == "clarifications_answered":
        n = len(event.answers)
        answered = sum(1 for a in event.answers if a.answer)
        which = f"clarify (round {event.round})" if event.round > 1 else "clarify"
        if not n:
            return "manual", f"{which}: no questions"
        return "manual", f"{which}: {n} question{_s(n)}, {answered} answered"
    if t == "note_injected":
        text = " ".join(event.note.text.split())
        return "manual", f"✉ moderator note (agents see it from their next call): {text}"
    if t == "convergence_scored":
        c = event.score.confidence
        conf = c if c is not None else "n/a"
        return "summary", f"≈ convergence after round {event.score.round}: judge confidence {conf}"
    if t == "converged":
        return "done", (f"✓ converged after round {event.round} (confidence {event.confidence} ≥ "
                        f"{event.threshold}): the judge synthesizes")
    if t == "budget_reached":
        return "warning", f"$ budget reached: {event.reason}; the judge synthesizes from what exists"
    if t == "control":
        icon = {"pause": "⏸ paused", "resume": "▶ resumed", "stop": "■ stop requested"}[event.action]
        return "control", f"{icon} (at the next call boundary)" if event.action != "resume" else icon
    if t == "debate_completed":
        tot = event.totals
        cost = f", {usd(tot.cost_usd)}" if tot.cost_usd > 0 else ""
        return ("done" if event.status == "completed" else "warning"), (
            f"✓ debate {event.status.replace('_', ' ')}: {k(tot.prompt_tokens)} prompt + "
            f"{k(tot.completion_tokens)} completion tokens{cost}")
    if t == "debate_interrupted":
        return "warning", f"■ debate {event.status}: {event.reason}"
    if t == "debate_failed":
        return "error", f"✗ debate failed: {event.error}"
    return None


def _s(n: int) -> str:
    return "" if n == 1 else "s"


class EventLog(RichLog):
    """A bounded log (the oldest lines go first), one line per notable event."""

    MAX_LINES = 1000

    def __init__(self, **kwargs) -> None:
        super().__init__(max_lines=self.MAX_LINES, wrap=True, markup=False, highlight=False, **kwargs)
        self.start_ts: float | None = None

    def add_event(self, event: Event) -> None:
        if event.type == "debate_started" or self.start_ts is None:
            self.start_ts = event.ts
        described = describe(event)
        if described is None:
            return
        kind, text = described
        self.add_line(text, kind, event.ts)

    def add_line(self, text: str, kind: str = "info", ts: float | None = None) -> None:
        offset = clock_time(ts - self.start_ts) if ts is not None and self.start_ts is not None else "--:--"
        line = Text(f"{offset} ", style="dim")
        line.append(text, style=self._style(kind))
        self.write(line)

    def _style(self, kind: str) -> str:
        colour, style = STYLES.get(kind, ("", ""))
        value = getattr(self.app.current_theme, colour, None) if colour else None
        return f"{style} {value}".strip() if value else style

"""What an agent is doing now, from the events about it: waiting, thinking, streaming, summarizing…

Pure (no Textual), so the roster rows, the panes and the tests share one reading of the events.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from ..core.events import (
    CallFailed,
    CallStarted,
    ClarificationsAsked,
    ContributionAdded,
    ConvergenceScored,
    DebateCompleted,
    DebateFailed,
    DebateInterrupted,
    DebateResumed,
    Event,
    SummaryAdded,
    SynthesisCompleted,
)

Status = Literal["waiting", "thinking", "streaming", "summarizing", "done", "error"]
STATUS_ICONS: dict[str, str] = {"waiting": "○", "thinking": "◔", "streaming": "●", "summarizing": "◑", "done": "✓",
                                "error": "✗"}
STATUS_COLORS: dict[str, str] = {"waiting": "$text-muted", "thinking": "$warning", "streaming": "$primary",
                                 "summarizing": "$accent", "done": "$success", "error": "$error"}


@dataclass
class Activity:
    """One agent's calls in flight and what they are."""

    calls: dict[str, str] = field(default_factory=dict)
    """call id → phase, for the calls started and not yet ended."""
    started_at: dict[str, float] = field(default_factory=dict)
    """call id → when it started (the event's time), for the calls in `calls`."""
    streaming: set[str] = field(default_factory=set)
    error: str | None = None
    finished_any: bool = False

    def started(self, call_id: str, phase: str, ts: float | None = None) -> None:
        self.calls[call_id] = phase
        if ts is not None:
            self.started_at[call_id] = ts
        self.error = None

    @property
    def since(self) -> float | None:
        """When the oldest call still in flight started (None: none, or not known)."""
        times = [self.started_at[c] for c in self.calls if c in self.started_at]
        return min(times) if times else None

    def token(self, call_id: str) -> None:
        if call_id in self.calls:
            self.streaming.add(call_id)

    def ended(self, call_id: str | None = None) -> None:
        """A call finished (its contribution, summary or score arrived); None: every summary call."""
        if call_id is None:
            for cid in [c for c, p in self.calls.items() if p == "summarize"]:
                self.calls.pop(cid, None)
        else:
            self.calls.pop(call_id, None)
            self.streaming.discard(call_id or "")
        self._forget()
        self.finished_any = True

    def ended_phase(self, phase: str) -> None:
        """Every call of `phase` ended (clarifying questions arrive all at once)."""
        for cid in [c for c, p in self.calls.items() if p == phase]:
            self.calls.pop(cid, None)
            self.streaming.discard(cid)
        self._forget()

    def failed(self, call_id: str, error: str) -> None:
        self.calls.pop(call_id, None)
        self.streaming.discard(call_id)
        self.error = error
        self._forget()

    def _forget(self) -> None:
        for cid in [c for c in self.started_at if c not in self.calls]:
            del self.started_at[cid]

    def phase_over(self) -> None:
        """A new phase began: a finished agent waits again."""
        if not self.calls and self.error is None:
            self.finished_any = False

    def stopped(self) -> None:
        self.calls.clear()
        self.streaming.clear()
        self.started_at.clear()

    @property
    def status(self) -> Status:
        if self.error is not None and not self.calls:
            return "error"
        if any(p != "summarize" for p in self.calls):
            return "streaming" if self.streaming & {c for c, p in self.calls.items() if p != "summarize"} else "thinking"
        if self.calls:
            return "summarizing"
        return "done" if self.finished_any else "waiting"


def calls_in_flight(events: Iterable[Event]) -> list[CallStarted]:
    """The calls started and not ended in `events` (a watched debate's recent log), oldest first,
    so a screen opened mid-call shows them running."""
    open_: dict[str, CallStarted] = {}
    for e in events:
        match e:
            case CallStarted(view=view):
                open_[view.call_id] = e
            case ContributionAdded(contribution=c):
                open_.pop(c.metadata.call_id or "", None)
            case SynthesisCompleted(solution=solution):
                open_.pop(solution.metadata.call_id or "", None)
            case ConvergenceScored(usage=usage):
                open_.pop(usage.call_id or "", None)
            case CallFailed(call_id=call_id, will_retry=False):
                open_.pop(call_id, None)
            case SummaryAdded(summary=summary):
                for cid in [c for c, s in open_.items() if s.view.phase == "summarize"
                            and s.view.agent_id == summary.agent_id]:
                    del open_[cid]
            case ClarificationsAsked():
                for cid in [c for c, s in open_.items() if s.view.phase == "clarify"]:
                    del open_[cid]
            case DebateCompleted() | DebateFailed() | DebateInterrupted() | DebateResumed():
                open_.clear()
            case _:
                pass
    return list(open_.values())

"""What an agent is doing now, from the events about it: waiting, thinking, streaming, summarizing…

Pure (no Textual), so the roster rows, the panes and the tests share one reading of the events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

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
    streaming: set[str] = field(default_factory=set)
    error: str | None = None
    finished_any: bool = False

    def started(self, call_id: str, phase: str) -> None:
        self.calls[call_id] = phase
        self.error = None

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
        self.finished_any = True

    def ended_phase(self, phase: str) -> None:
        """Every call of `phase` ended (clarifying questions arrive all at once)."""
        for cid in [c for c, p in self.calls.items() if p == phase]:
            self.calls.pop(cid, None)
            self.streaming.discard(cid)

    def failed(self, call_id: str, error: str) -> None:
        self.calls.pop(call_id, None)
        self.streaming.discard(call_id)
        self.error = error

    def phase_over(self) -> None:
        """A new phase began: a finished agent waits again."""
        if not self.calls and self.error is None:
            self.finished_any = False

    def stopped(self) -> None:
        self.calls.clear()
        self.streaming.clear()

    @property
    def status(self) -> Status:
        if self.error is not None and not self.calls:
            return "error"
        if any(p != "summarize" for p in self.calls):
            return "streaming" if self.streaming & {c for c, p in self.calls.items() if p != "summarize"} else "thinking"
        if self.calls:
            return "summarizing"
        return "done" if self.finished_any else "waiting"

"""What a command's feedback line turns into when the debate shows the command took effect.

`/pause` says "pausing…" at once; the line must not stay true-looking after the pause took
effect, nor after the debate ended. Each command leaves `Followup`s: a test on the events
that follow and the line to show when one passes. A command sent to another process
(attach) is known by its id: the event that carries it says it was picked up.

Pure (no Textual): the debate screen feeds it every event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.events import (
    ControlChanged,
    DebateCompleted,
    DebateFailed,
    DebateInterrupted,
    Event,
    NoteInjected,
    PinChanged,
    SummaryAdded,
    SummaryRequested,
    Warning_,
)
from ..core.safety.sanitize import one_line_safe
from .format import k


@dataclass
class Followup:
    matches: Callable[[Event], bool]
    line: Callable[[Event], str]
    command_id: str | None = None
    """The command (sent to another process) it waits on: a refusal of it drops the followup."""


def tagged(command_id: str | None, items: list[Followup]) -> list[Followup]:
    for item in items:
        item.command_id = command_id
    return items


@dataclass
class Followups:
    """The followups waiting, oldest first; each fires once."""

    waiting: list[Followup] = field(default_factory=list)

    def add(self, *items: Followup) -> None:
        self.waiting.extend(items)

    def clear(self) -> None:
        self.waiting.clear()

    def on_event(self, event: Event) -> str | None:
        """The line to show now (the last followup this event fires), or None."""
        if isinstance(event, Warning_) and event.command_id is not None:
            refused = [f for f in self.waiting if f.command_id == event.command_id]
            if refused:  # the debate's process would not apply it: nothing else will follow
                self.waiting = [f for f in self.waiting if f not in refused]
                return f"refused: {event.message}"
        shown: str | None = None
        for item in list(self.waiting):
            if item.matches(event):
                self.waiting.remove(item)
                shown = item.line(event)
        if isinstance(event, (DebateCompleted, DebateFailed, DebateInterrupted)) and self.waiting:
            self.waiting.clear()
            shown = shown or ""  # nothing pending is true any more
        return shown


def _carries(command_id: str | None) -> Callable[[Event], bool]:
    def test(e: Event) -> bool:
        return command_id is not None and getattr(e, "command_id", None) == command_id
    return test


def picked_up(command_id: str | None, what: str) -> list[Followup]:
    """A command sent to another process: say when that process recorded it."""
    if command_id is None:
        return []
    return tagged(command_id, [Followup(_carries(command_id), lambda e: f"{what}: taken by the debate's process")])


def after_pause(command_id: str | None) -> list[Followup]:
    return tagged(command_id, [
        *([Followup(_carries(command_id), lambda e: "pausing: the calls in flight finish first…")]
          if command_id else []),
        Followup(lambda e: isinstance(e, ControlChanged) and e.action == "pause" and e.effective,
                 lambda e: "paused: no call in flight — /resume (or p) continues"),
    ])


def after_resume(command_id: str | None) -> list[Followup]:
    return tagged(command_id, [Followup(_carries(command_id), lambda e: "resumed")]) if command_id else []


def after_stop(debate_id: str, command_id: str | None) -> list[Followup]:
    return tagged(command_id, [
        *picked_up(command_id, "stop"),
        Followup(lambda e: isinstance(e, DebateInterrupted),
                 lambda e: f"stopped and saved — continue with `moot resume {debate_id}`"),
    ])


def after_inject(command_id: str | None) -> list[Followup]:
    if command_id is None:
        return []
    return tagged(command_id, [Followup(lambda e: isinstance(e, NoteInjected) and e.command_id == command_id,
                                        lambda e: "moderator note added: every agent sees it from its next call on")])


def after_pin(command_id: str | None) -> list[Followup]:
    """A pin or unpin sent to another process: say when it took effect."""
    if command_id is None:
        return []
    return tagged(command_id, [Followup(lambda e: isinstance(e, PinChanged) and e.command_id == command_id,
                                        lambda e: pin_line(e) if isinstance(e, PinChanged) else "")])


def pin_line(e: PinChanged) -> str:
    label = one_line_safe(e.pin.label, 80)
    return (f"pinned {label}: kept verbatim in every later view" if e.pin.active
            else f"unpinned {label}: later views may summarize it")


def after_summarize(agent_ids: list[str], command_id: str | None) -> list[Followup]:
    """One line when the request is recorded (attach), one per summary made, a last one for all."""
    from ..core.protocols.conversation import NOTHING_TO_SUMMARIZE  # the engine: not before the first screen

    left = set(agent_ids)
    made: list[str] = []

    def is_mine(e: Event) -> bool:
        if isinstance(e, Warning_):  # asked, but there was nothing to summarize
            return e.agent_id in left and e.message.startswith(NOTHING_TO_SUMMARIZE)
        return isinstance(e, SummaryAdded) and e.summary.trigger == "manual" and e.summary.agent_id in left

    def line(e: Event) -> str:
        if isinstance(e, Warning_):
            left.discard(e.agent_id or "")
            return e.message
        assert isinstance(e, SummaryAdded)
        s = e.summary
        left.discard(s.agent_id)
        made.append(s.agent_id)
        md = s.metadata
        text = f"{s.agent_id} summarized: {k(md.before_tokens)} → {k(md.after_tokens)} tokens, {s.written_by}"
        if left:
            return f"{text} ({len(left)} to go)"
        return text if len(made) == 1 else f"{len(made)} agents summarized; last {text}"

    out = [Followup(is_mine, line) for _ in agent_ids]
    if command_id is not None:
        out.insert(0, Followup(lambda e: isinstance(e, SummaryRequested) and e.command_id == command_id,
                               lambda e: "summary requested: made at each agent's next call boundary"))
    return tagged(command_id, out)

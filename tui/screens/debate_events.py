"""The debate screen's events: each part of the screen subscribes to the event classes it shows.

The screen (`debate.py`) is made of parts — the header's status line (`debate_status.py`), the
roster rows (`debate_roster.py`), the agent panes (`debate_panes.py`), a person's seat
(`debate_seats.py`), the run controls and the command line (`debate_controls.py`) — small objects
that each own their state and say which events they handle: `subscriptions()` returns typed
`handle(ev.CallStarted, self._call_started)` pairs (`TokenChunk` for streamed text), read once
into an `EventTable` by class.

`EventFeed` takes what the `Bridge` posts: it folds each event into the screen's `DebateState` with
the engine's own `Fold`, whatever the runtime (live, watch, replay), so the screen is the same in
all three; adds it to the event log; and hands it to the parts that subscribed to its class, in
the order the screen lists its parts. The events that no part takes are named in `LOG_ONLY` (the
header and the event log show them); a test (`tests/tui/test_debate_parts.py`) keeps every class
of the event union in one or the other, so a new event fails until someone decides which part
shows it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from textual.screen import Screen

from ...core import events as ev
from ...core.context.fold import Fold
from ...core.context.index import DebateIndex
from ...core.models.state import DebateState
from ...core.storage.state import new_state
from ..activity import calls_in_flight
from ..bridge import TokenChunk
from ..followups import Followups
from ..runtime.base import Runtime, Snapshot
from ..widgets.event_log import EventLog

E = TypeVar("E")
Handler = Callable[[Any], Awaitable[None] | None]
"""A part's handler of one event class: plain, or a coroutine the feed awaits."""

LOG_ONLY: tuple[type[Any], ...] = (
    ev.DebateResumed, ev.RoundStarted, ev.PhaseCompleted, ev.Token, ev.Warning_, ev.NoteInjected,
    ev.PinChanged, ev.SeatAnswered, ev.Converged, ev.AdaptiveDecided, ev.BudgetReached, ev.WindowLearned,
    ev.ToolsReady, ev.IndexRebuilding)
"""Events no part needs to see in general (the header and the event log show them). A part may
still take one for its own reasons: a person's seat reads the `Warning_` and `SeatAnswered` that
answer what it sent."""


@dataclass(frozen=True)
class Subscription:
    """One event class and the part's handler for it."""

    kind: type[Any]
    handler: Handler


def handle(kind: type[E], handler: Callable[[E], Awaitable[None] | None]) -> Subscription:
    """`handler` takes the events of class `kind` (typed: the handler's parameter is that class)."""
    return Subscription(kind, cast(Handler, handler))


def handle_end(handler: Callable[[ev.TerminalEvent], Awaitable[None] | None]) -> list[Subscription]:
    """`handler` takes each of the events that end a run of the debate (completed, interrupted, failed)."""
    return [handle(ev.DebateCompleted, handler), handle(ev.DebateInterrupted, handler), handle(ev.DebateFailed, handler)]


@dataclass
class Debate:
    """What the screen knows of its debate, shared by the parts: the state and the index (moved
    together by one `Fold`, exactly as the engine moves its own) and where events come from."""

    runtime: Runtime
    state: DebateState = field(default_factory=lambda: new_state(""))
    index: DebateIndex = field(default_factory=DebateIndex)
    fold: Fold = field(init=False)
    loaded: bool = False
    """The runtime's snapshot arrived (until then the screen says STARTING or LOADING)."""

    def __post_init__(self) -> None:
        self.fold = Fold(self.state, self.index)

    def reset(self, state: DebateState) -> None:
        """Start over from a snapshot's state (its index rebuilt from it)."""
        self.state = state
        self.fold = Fold(state)
        self.index = self.fold.index


class DebatePart:
    """A part of the debate screen: it owns its state and handles the events it shows.

    A new part subclasses this, takes what it needs in its constructor (the screen for its
    widgets, the shared `Debate`, the parts it works with), lists its handlers in
    `subscriptions()` (an event class, or `TokenChunk` for streamed text) and joins the screen's
    list of parts (`DebateScreen.__init__`)."""

    def __init__(self, screen: Screen[None], debate: Debate) -> None:
        self.screen = screen
        self.debate = debate

    def subscriptions(self) -> Iterable[Subscription]:
        return ()

    async def loaded(self, snapshot: Snapshot) -> None:
        """The runtime's snapshot is in `debate.state`: show it (before the calls in flight are
        handed over as their `CallStarted`)."""


class EventTable:
    """Event class → the handlers subscribed to it, in the order of the parts: built once."""

    def __init__(self, parts: Sequence[DebatePart]) -> None:
        self._by_kind: dict[type[Any], list[Handler]] = {}
        for part in parts:
            for sub in part.subscriptions():
                self._by_kind.setdefault(sub.kind, []).append(sub.handler)

    @property
    def kinds(self) -> set[type[Any]]:
        return set(self._by_kind)

    async def dispatch(self, item: ev.Event | TokenChunk) -> None:
        for handler in self._by_kind.get(type(item), ()):
            if (pending := handler(item)) is not None:
                await pending


class EventFeed:
    """What the bridge posts, into the state, the event log and the parts."""

    def __init__(self, screen: Screen[None], debate: Debate, parts: Sequence[DebatePart],
                 followups: Followups, feedback: Callable[[str], None]) -> None:
        self.screen = screen
        self.debate = debate
        self.parts = parts
        self.table = EventTable(parts)
        self.followups = followups
        """What the feedback line becomes when a command takes effect."""
        self.feedback = feedback

    async def load(self, snapshot: Snapshot) -> None:
        """The state so far and the recent events: every part shows them, then the calls still
        running are handed over as they started (opened mid-call: shown running, with its time)."""
        debate = self.debate
        debate.reset(snapshot.state)
        log = self.screen.query_one(EventLog)
        if debate.state.problem:
            log.start_ts = debate.state.created_at
        for event in snapshot.backlog:
            log.add_event(event)
        for part in self.parts:
            await part.loaded(snapshot)
        if debate.state.status == "running":
            for started in calls_in_flight(snapshot.backlog):
                await self.table.dispatch(started)

    async def apply(self, items: Iterable[ev.Event | TokenChunk]) -> None:
        """One batch, in order: streamed text to the parts that show it; each event folded,
        logged, checked against the commands awaiting it, and handed to its subscribers."""
        log = self.screen.query_one(EventLog)
        for item in items:
            if isinstance(item, TokenChunk):
                await self.table.dispatch(item)
                continue
            self.debate.fold.apply(item)
            log.add_event(item)
            if (line := self.followups.on_event(item)) is not None:
                self.feedback(line)
            await self.table.dispatch(item)

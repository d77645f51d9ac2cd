"""The event bus: each event of a debate fanned out to its subscribers' queues (the log's writer,
a printer, the TUI) and to synchronous listeners (the state fold, the search index)."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Callable

from .events import Event, Token


class Subscription:
    """One subscriber's queue. Token deltas are dropped when it falls behind; other events never,
    nor a token that restarts a call's text (a view that missed it would keep the failed
    attempt's text in front of the retry's).

    With a `limit`, the debate waits at its next call boundary while more than that many
    events wait here (`EventBus.caught_up`): a consumer slower than the engine (the event
    log's writer behind a zero-delay demo) then holds a bounded backlog, not the whole debate."""

    TOKEN_BACKLOG = 2000

    def __init__(self, name: str, limit: int | None = None) -> None:
        self.name = name
        self.queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self.dropped_tokens = 0
        self.limit = limit
        self.room = asyncio.Event()
        """Set while the backlog is within `limit` (cleared past it, set again at half)."""
        self.room.set()
        self._ended = False

    def offer(self, event: Event) -> None:
        queue = self.queue
        if isinstance(event, Token) and not event.restart:
            if queue.qsize() > self.TOKEN_BACKLOG:
                self.dropped_tokens += 1
            else:
                queue.put_nowait(event)
            return
        queue.put_nowait(event)
        if self.limit is not None and queue.qsize() > self.limit:
            self.room.clear()

    def _taken(self) -> None:
        if self.limit is None or self.queue.qsize() <= self.limit // 2:
            self.room.set()

    async def __aiter__(self) -> AsyncIterator[Event]:
        while True:
            event = await self.queue.get()
            self._taken()
            if event is None:
                self._ended = True
                return
            yield event

    async def batch(self, most: int) -> list[Event]:
        """The next events: waits for one, then takes those already waiting (at most `most`).
        Empty once the subscription has ended."""
        if self._ended:
            return []
        out: list[Event] = []
        event = await self.queue.get()
        while event is not None:
            out.append(event)
            if len(out) >= most or self.queue.empty():
                break
            event = self.queue.get_nowait()
        self._ended = event is None
        self._taken()
        return out


class EventBus:
    """Fan-out of events to subscribers, each with its own queue, so none stalls the debate.

    Synchronous listeners (`listen`) run inline and must be cheap: the state fold uses it.
    """

    def __init__(self, debate_id: str = "") -> None:
        self.debate_id = debate_id
        self._subs: list[Subscription] = []
        self._listeners: list[Callable[[Event], None]] = []
        self._seq = 0
        self._pending: collections.deque[Event] = collections.deque()
        self._dispatching = False

    def set_seq(self, seq: int) -> None:
        self._seq = seq

    @property
    def seq(self) -> int:
        return self._seq

    def subscribe(self, name: str, limit: int | None = None) -> Subscription:
        """A new queue of every event from now on; `limit`: see `Subscription`."""
        sub = Subscription(name, limit)
        self._subs.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)
        sub.queue.put_nowait(None)
        sub.room.set()

    async def caught_up(self) -> None:
        """Wait until no subscriber with a limit is behind by more than it."""
        for sub in list(self._subs):
            if sub in self._subs:
                await sub.room.wait()

    def listen(self, fn: Callable[[Event], None]) -> None:
        self._listeners.append(fn)

    def emit(self, event: Event) -> Event:
        event.debate_id = event.debate_id or self.debate_id
        if not isinstance(event, Token):
            self._seq += 1
            event.seq = self._seq
        # A listener may emit (a hook that injects a note): queue it, so every
        # subscriber still sees events in sequence order.
        self._pending.append(event)
        if self._dispatching:
            return event
        self._dispatching = True
        try:
            while self._pending:
                e = self._pending.popleft()
                for fn in self._listeners:
                    fn(e)
                for sub in self._subs:
                    sub.offer(e)
        finally:
            self._dispatching = False
        return event

    def close(self) -> None:
        for sub in self._subs:
            sub.queue.put_nowait(None)
            sub.room.set()
        self._subs.clear()

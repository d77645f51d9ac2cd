"""Engine events → Textual messages: what arrives between two frames goes to the screen as one batch.

The bridge is not a widget (as in Toad, the agent side posts messages to the screen).
Events and streamed text are kept in the order they came (a call's text merged into one
chunk until another event comes), so a pane always sees a call's text before the
contribution that ends it. A batch with events goes at once, one with text only at most
~20 times a second, and never more than one batch a frame: the screen says when it has
drawn the last one (`drawn`). When agents finish together, their events and text reach
the screen as one update and one repaint, with the loop free between batches for keys
and frames; when the screen is slow, batches grow instead of queueing up.

It is also where untrusted text enters the UI: every event and the starting state are
posted as copies with their text made terminal-safe (`safe_copy`), so no widget ever
holds an escape sequence from a model, a server or a log file. Streamed deltas stay
raw here (a sequence can straddle two deltas); the transcript cleans the whole text
it renders.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from textual.message import Message
from textual.message_pump import MessagePump

from ..core.events import Event, Token
from ..core.safety.sanitize import safe_copy
from .runtime.base import Runtime, Snapshot

log = logging.getLogger(__name__)

FLUSH_INTERVAL_S = 0.05
"""Streamed text goes to the screen at most ~20 times a second (and no faster than it draws)."""
DRAWN_WAIT_S = 0.5
"""How long a batch may go unacknowledged before the next one is posted anyway (a screen
that is not drawn, e.g. under a dialog, still takes its events)."""
MAX_BATCH_EVENTS = 256
"""Events in one batch at most: a long backlog is handed over a frame at a time."""


@dataclass
class TokenChunk:
    """All the text one call streamed since the last flush."""

    call_id: str
    agent_id: str
    text: str = ""
    restart: bool = False
    """The call started over: drop what it streamed before this text."""


class DebateLoaded(Message):
    """The runtime started: the state so far and the recent events."""

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot


BatchItem = Event | TokenChunk


class EngineBatch(Message):
    """What arrived since the last batch, in order: events, and each call's streamed text."""

    def __init__(self, items: list[BatchItem]) -> None:
        super().__init__()
        self.items = items


class RuntimeFailed(Message):
    """The event source broke (a bug or an unreadable log)."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


@dataclass
class BridgeStats:
    events: int = 0
    tokens: int = 0
    flushes: int = 0
    """Batches posted."""
    started: float = field(default_factory=time.perf_counter)


class Bridge:
    """Reads a runtime's events and posts them to `target` (the debate screen) in batches."""

    def __init__(self, runtime: Runtime, target: MessagePump, interval: float = FLUSH_INTERVAL_S) -> None:
        self.runtime = runtime
        self.target = target
        self.interval = interval
        self._items: list[BatchItem] = []
        self._open: dict[str, TokenChunk] = {}
        """Chunks since the last event, by call: text merges into them."""
        self._events = 0
        self._text_since: float | None = None
        """When the oldest text not posted yet arrived (loop time)."""
        self._in_flight = False
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._unacknowledged: asyncio.TimerHandle | None = None
        self.stats = BridgeStats()

    @property
    def pending(self) -> int:
        """Items read from the runtime and not posted yet."""
        return len(self._items)

    async def run(self) -> None:
        try:
            snapshot = await self.runtime.start()
            self.target.post_message(DebateLoaded(Snapshot(safe_copy(snapshot.state),
                                                           [safe_copy(e) for e in snapshot.backlog])))
            async for event in self.runtime.events():
                if isinstance(event, Token):
                    self._add_token(event)
                else:
                    self._add_event(event)
            self._post(force=True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("event source failed")
            self._post(force=True)
            self.target.post_message(RuntimeFailed(f"{type(exc).__name__}: {exc}"))
        finally:
            self._cancel()

    def _add_event(self, event: Event) -> None:
        self.stats.events += 1
        self._items.append(safe_copy(event))
        self._open.clear()
        self._events += 1
        self._schedule(0.0)

    def _add_token(self, event: Token) -> None:
        self.stats.tokens += 1
        chunk = self._open.get(event.call_id)
        if chunk is None:
            chunk = self._open[event.call_id] = TokenChunk(event.call_id, event.agent_id)
            self._items.append(chunk)
        if event.restart:
            chunk.text = ""
            chunk.restart = True
        chunk.text += event.delta
        if self._text_since is None:
            self._text_since = asyncio.get_running_loop().time()
            self._schedule(self.interval)

    def _schedule(self, delay: float) -> None:
        """Post in `delay` seconds (or sooner if already due sooner), once the last batch is drawn."""
        if self._in_flight:
            return  # `drawn` schedules what is waiting
        loop = asyncio.get_running_loop()
        due = loop.time() + delay
        if self._handle is not None:
            if self._due <= due:
                return
            self._handle.cancel()
        self._due = due
        self._handle = loop.call_later(delay, self._post)

    def _post(self, force: bool = False) -> None:
        self._handle = None
        if not self._items or (self._in_flight and not force):
            return
        if self._events > MAX_BATCH_EVENTS:
            cut, seen = len(self._items), 0
            for i, item in enumerate(self._items):
                if not isinstance(item, TokenChunk):
                    seen += 1
                    if seen > MAX_BATCH_EVENTS:
                        cut = i
                        break
            batch, self._items = self._items[:cut], self._items[cut:]
            self._events -= MAX_BATCH_EVENTS
            if not any(isinstance(item, TokenChunk) for item in self._items):
                self._text_since = None
        else:
            batch, self._items = self._items, []
            self._open.clear()
            self._events = 0
            self._text_since = None
        self.stats.flushes += 1
        self.target.post_message(EngineBatch(batch))
        self._in_flight = True
        if self._unacknowledged is not None:
            self._unacknowledged.cancel()
        self._unacknowledged = asyncio.get_running_loop().call_later(DRAWN_WAIT_S, self.drawn)

    def drawn(self) -> None:
        """The screen drew the last batch: the next one may go."""
        if self._unacknowledged is not None:
            self._unacknowledged.cancel()
            self._unacknowledged = None
        self._in_flight = False
        if not self._items:
            return
        if self._events:
            self._schedule(0.0)
        elif self._text_since is not None:
            self._schedule(max(0.0, self._text_since + self.interval - asyncio.get_running_loop().time()))

    def _cancel(self) -> None:
        for handle in (self._handle, self._unacknowledged):
            if handle is not None:
                handle.cancel()
        self._handle = self._unacknowledged = None

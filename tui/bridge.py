"""Engine events → Textual messages, with token deltas batched to at most ~20 flushes a second.

The bridge is not a widget (as in Toad, the agent side posts messages to the screen).
Every non-token event is posted as it comes, after flushing the tokens buffered so
far, so a pane always sees a call's text before the contribution that ends it.

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
"""At most ~20 flushes a second…"""
MAX_FLUSH_INTERVAL_S = 0.15
"""…backing off to ~7 a second when the event loop is late (the UI is saturated): a
keystroke then waits behind fewer repaints. Measured with bench/tui_stream.py at
6 agents × 200 tokens/s: key → on screen p95 fell from ~250 ms at a fixed 20 Hz to
~70 ms."""
LATE_S = 0.015


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


class EngineEvent(Message):
    """One non-token engine event."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class TokensArrived(Message):
    """A batch of streamed text, one chunk per call."""

    def __init__(self, chunks: list[TokenChunk]) -> None:
        super().__init__()
        self.chunks = chunks


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
    started: float = field(default_factory=time.perf_counter)


class Bridge:
    """Reads a runtime's events and posts them to `target` (the debate screen)."""

    def __init__(self, runtime: Runtime, target: MessagePump, interval: float = FLUSH_INTERVAL_S) -> None:
        self.runtime = runtime
        self.target = target
        self.min_interval = interval
        self.interval = interval
        self._due = 0.0
        self._buffer: dict[str, TokenChunk] = {}
        self._flush_handle: asyncio.TimerHandle | None = None
        self.stats = BridgeStats()

    async def run(self) -> None:
        try:
            snapshot = await self.runtime.start()
            self.target.post_message(DebateLoaded(Snapshot(safe_copy(snapshot.state),
                                                           [safe_copy(e) for e in snapshot.backlog])))
            async for event in self.runtime.events():
                if isinstance(event, Token):
                    self._add_token(event)
                else:
                    self.flush()
                    self.stats.events += 1
                    self.target.post_message(EngineEvent(safe_copy(event)))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("event source failed")
            self.target.post_message(RuntimeFailed(f"{type(exc).__name__}: {exc}"))
        finally:
            self._cancel_timer()

    def _add_token(self, event: Token) -> None:
        self.stats.tokens += 1
        chunk = self._buffer.get(event.call_id)
        if chunk is None:
            chunk = self._buffer[event.call_id] = TokenChunk(event.call_id, event.agent_id)
        if event.restart:
            chunk.text = ""
            chunk.restart = True
        chunk.text += event.delta
        if self._flush_handle is None:
            loop = asyncio.get_running_loop()
            self._due = loop.time() + self.interval
            self._flush_handle = loop.call_later(self.interval, self._timed_flush)

    def _timed_flush(self) -> None:
        late = asyncio.get_running_loop().time() - self._due
        if late > LATE_S:
            self.interval = min(MAX_FLUSH_INTERVAL_S, self.interval * 1.3)
        else:
            self.interval = max(self.min_interval, self.interval * 0.9)
        self.flush()

    def flush(self) -> None:
        """Post what is buffered now (also called by the timer)."""
        self._cancel_timer()
        if not self._buffer:
            return
        chunks = list(self._buffer.values())
        self._buffer.clear()
        self.stats.flushes += 1
        self.target.post_message(TokensArrived(chunks))

    def _cancel_timer(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None

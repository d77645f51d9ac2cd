"""The replay runtime: plays a recorded debate with its original timing (`moot replay`),
token streaming synthesized from each contribution; pause/resume control the playback."""

from __future__ import annotations

import asyncio
import collections
import itertools
import re
from collections.abc import AsyncIterator, Iterable, Iterator

from ...core.clock import Clock
from ...core.events import CallStarted, ContributionAdded, Event, Token
from ...core.storage.folder import DebateFolder
from ...core.storage.log import read_events
from ...core.storage.state import new_state
from .base import Runtime, Snapshot

_WORDS = re.compile(r"\s*\S+|\s+")


def synthesize_tokens(c: ContributionAdded, start_ts: float, call_id: str, max_chunks: int = 400) -> list[Token]:
    """Token events that rebuild a contribution's text, spread evenly over its call."""
    pieces = _WORDS.findall(c.contribution.content)
    if not pieces:
        return []
    group = max(3, -(-len(pieces) // max_chunks))
    chunks = ["".join(pieces[i:i + group]) for i in range(0, len(pieces), group)]
    span = max(0.0, c.ts - start_ts)
    n = len(chunks)
    return [
        Token(debate_id=c.debate_id, ts=start_ts + span * (i + 1) / (n + 1), call_id=call_id,
              agent_id=c.contribution.agent_id, delta=text)
        for i, text in enumerate(chunks)
    ]


def replay_timeline(events: Iterable[Event]) -> list[Event]:
    """Recorded events plus synthesized token events, in recorded order (see `stream_timeline`)."""
    return list(stream_timeline(events))


def stream_timeline(events: Iterable[Event], horizon: int = 4096) -> Iterator[Event]:
    """Recorded events plus synthesized token events, in recorded order, as they are read.

    Each contribution's tokens go between its call's start and the contribution,
    each in the gap whose neighbours' timestamps enclose it, so calls that ran in
    parallel stream in parallel. Events wait only while a call before them is open (at most
    `horizon` events), so a recording of any length plays in bounded memory."""
    waiting: collections.deque[Event] = collections.deque()
    base = 0
    """The position in the recording of `waiting[0]`."""
    call_index: dict[str, int] = {}
    gaps: dict[int, list[Token]] = {}

    def release(upto: int) -> Iterator[Event]:
        nonlocal base
        while base < upto:
            if base in gaps:
                yield from sorted(gaps.pop(base), key=lambda t: t.ts)
            yield waiting.popleft()
            base += 1

    i = -1
    for i, e in enumerate(events):
        waiting.append(e)
        if isinstance(e, CallStarted):
            call_index[e.view.call_id] = i
        elif isinstance(e, ContributionAdded):
            call_id = e.contribution.metadata.call_id
            j = call_index.pop(call_id or "", None)
            if j is not None and j >= base:
                k = j + 1
                for tok in synthesize_tokens(e, waiting[j - base].ts, call_id or ""):
                    while k < i and waiting[k - base].ts <= tok.ts:
                        k += 1
                    gaps.setdefault(k, []).append(tok)
        oldest = max(min(call_index.values(), default=i + 1), i + 1 - horizon)
        for cid in [c for c, j in call_index.items() if j < oldest]:
            del call_index[cid]  # open too long: played without streamed text
        yield from release(oldest)
    yield from release(i + 1)


class ReplayRuntime(Runtime):
    """Plays a recorded debate: original timing divided by `speed`, streaming synthesized."""

    mode = "replay"
    MAX_GAP_S = 3.0
    """Longest real wait between two events (a debate resumed a day later should not stall)."""

    def __init__(self, folder: DebateFolder, speed: float = 1.0, clock: Clock | None = None) -> None:
        super().__init__(clock)
        self.folder = folder
        self.speed = speed
        self._timeline: Iterator[Event] = iter(())
        self._virtual = 0.0
        self._playing = asyncio.Event()
        self._playing.set()
        self.finished = False

    def debate_folder(self) -> DebateFolder | None:
        return self.folder

    async def start(self) -> Snapshot:
        # Read as it plays (a long recording is never whole in memory); the first event is read now,
        # so that a log that cannot be read fails here.
        timeline = stream_timeline(read_events(self.folder.events_path))
        first = await asyncio.to_thread(next, timeline, None)
        self._timeline = itertools.chain([first], timeline) if first is not None else iter(())
        if first is not None:
            self._virtual = first.ts
        return Snapshot(new_state(self.folder.id), [])

    async def events(self) -> AsyncIterator[Event]:
        prev: float | None = None
        for event in self._timeline:
            if prev is not None and self.speed > 0:
                wait = min(self.MAX_GAP_S, max(0.0, (event.ts - prev) / self.speed))
                if wait > 0:
                    await asyncio.sleep(wait)
            await self._playing.wait()
            prev = event.ts
            self._virtual = max(self._virtual, event.ts)
            yield event
        self.finished = True
        while True:  # stay open on the end of the recording
            await asyncio.sleep(3600)


    def now(self) -> float:
        return self._virtual

    @property
    def paused(self) -> bool:
        return not self._playing.is_set()

    def pause(self) -> str | None:
        self._playing.clear()
        return None

    def resume(self) -> str | None:
        self._playing.set()
        return None

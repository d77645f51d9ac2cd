"""The replay runtime: plays a recorded debate with its original timing (`moot replay`),
token streaming synthesized from each contribution; pause/resume control the playback."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterable

from ...core.clock import Clock
from ...core.events import CallStarted, ContributionAdded, Event, Token
from ...core.storage.state import new_state
from ...core.storage.folder import DebateFolder
from ...core.storage.log import read_events
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
    """Recorded events plus synthesized token events, in recorded order.

    Each contribution's tokens go between its call's start and the contribution,
    each in the gap whose neighbours' timestamps enclose it, so calls that ran in
    parallel stream in parallel."""
    events = list(events)
    call_index: dict[str, int] = {}
    gaps: dict[int, list[Token]] = {}
    for i, e in enumerate(events):
        if isinstance(e, CallStarted):
            call_index[e.view.call_id] = i
        elif isinstance(e, ContributionAdded):
            call_id = e.contribution.metadata.call_id
            j = call_index.get(call_id or "")
            if j is None:
                continue
            k = j + 1
            for tok in synthesize_tokens(e, events[j].ts, call_id or ""):
                while k < i and events[k].ts <= tok.ts:
                    k += 1
                gaps.setdefault(k, []).append(tok)
    out: list[Event] = []
    for k, e in enumerate(events):
        if k in gaps:
            out.extend(sorted(gaps[k], key=lambda t: t.ts))
        out.append(e)
    return out


class ReplayRuntime(Runtime):
    """Plays a recorded debate: original timing divided by `speed`, streaming synthesized."""

    mode = "replay"
    MAX_GAP_S = 3.0
    """Longest real wait between two events (a debate resumed a day later should not stall)."""

    def __init__(self, folder: DebateFolder, speed: float = 1.0, clock: Clock | None = None) -> None:
        super().__init__(clock)
        self.folder = folder
        self.speed = speed
        self._timeline: list[Event] = []
        self._virtual = 0.0
        self._playing = asyncio.Event()
        self._playing.set()
        self.finished = False

    def debate_folder(self) -> DebateFolder | None:
        return self.folder

    async def start(self) -> Snapshot:
        events = await asyncio.to_thread(lambda: list(read_events(self.folder.events_path)))
        self._timeline = replay_timeline(events)
        if self._timeline:
            self._virtual = self._timeline[0].ts
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

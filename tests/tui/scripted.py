"""A runtime whose events a test (or a benchmark) pushes; commands are recorded, not executed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable

from moot.core.clock import Clock
from moot.core.events import Event, is_terminal
from moot.core.models.state import DebateState
from moot.core.storage.state import new_state
from moot.tui.runtime import READ_ONLY, ReadOnlyError, Runtime, Snapshot


class ScriptedRuntime(Runtime):
    """Events pushed by a test or a benchmark; commands are recorded, not executed."""

    mode = "live"

    def __init__(self, initial: DebateState | None = None, events: Iterable[Event] = (),
                 clock: Clock | None = None, read_only: bool = False) -> None:
        super().__init__(clock)
        self.initial = initial
        self._pending: list[Event] = list(events)
        self._queue: asyncio.Queue[Event] | None = None
        self.commands: list[tuple[str, ...]] = []
        """(name,) or (name, argument) or, for a summary with a focus, (name, agent, focus)."""
        self._paused = False
        self._read_only = read_only
        self.debate_running = True
        self.drafts: dict[tuple[str, str], str] = {}
        """(agent id, slot) → the draft a person's editor saved (or a test put there to be loaded)."""

    async def start(self) -> Snapshot:
        self._queue = asyncio.Queue()
        self._first = list(self._pending)
        for e in self._pending:
            self._queue.put_nowait(e)
        self._pending.clear()
        first_id = next((e.debate_id for e in self._first if e.debate_id), "scripted")
        return Snapshot(self.initial.model_copy(deep=True) if self.initial else new_state(first_id), [])

    def push(self, *events: Event) -> None:
        for e in events:
            if self._queue is None:
                self._pending.append(e)
            else:
                self._queue.put_nowait(e)
            if is_terminal(e):
                self.debate_running = False

    @property
    def backlog(self) -> int:
        return self._queue.qsize() if self._queue is not None else len(self._pending)

    async def events(self) -> AsyncIterator[Event]:
        assert self._queue is not None
        while True:
            yield await self._queue.get()

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def running(self) -> bool:
        return self.debate_running and not self._read_only

    @property
    def can_steer(self) -> bool:
        return not self._read_only

    def _record(self, *command: str) -> None:
        if self._read_only:
            raise ReadOnlyError(READ_ONLY)
        self.commands.append(command)

    def request_summary(self, agent_id: str, focus: str | None = None, from_step: int | None = None) -> str | None:
        self._record("summarize", agent_id, *([focus] if focus else []), *([f"from {from_step}"] if from_step else []))
        return None

    def pause(self) -> str | None:
        self._record("pause")
        self._paused = True
        return None

    def resume(self) -> str | None:
        self._record("resume")
        self._paused = False
        return None

    def stop(self) -> str | None:
        self._record("stop")
        self.debate_running = False
        return None

    def inject(self, text: str) -> str | None:
        self._record("inject", text)
        return None

    def say(self, agent_id: str, text: str) -> str | None:
        self._record("say", agent_id, text)
        return None

    def load_draft(self, agent_id: str, slot: str) -> str:
        return self.drafts.get((agent_id, slot), "")

    def save_draft(self, agent_id: str, slot: str, text: str) -> None:
        self.drafts[(agent_id, slot)] = text

"""The runtime's contract: where a debate screen's events come from and where its commands go.

A `Runtime` is not a widget: the screen's bridge reads `events()` and the command line calls
the command methods. This base is a read-only source with nothing to read; `live`, `watch`
and `replay` are the three kinds (see the package's docstring).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ...core.clock import SYSTEM_CLOCK, Clock
from ...core.events import Event
from ...core.models.state import DebateState
from ...core.storage.folder import DebateFolder

READ_ONLY = "read-only: no process is running this debate"
BACKLOG = 300
"""How many recent events an opened debate shows in its event log."""


class ReadOnlyError(Exception):
    """A command that needs the engine, on a debate this process does not run."""


@dataclass
class Snapshot:
    """What the screen starts from: the state so far and the recent events for the log."""

    state: DebateState
    backlog: list[Event] = field(default_factory=list)


class Runtime:
    """The base: a read-only source with nothing to read.

    The command methods return the id of a command sent to another process (attach), or
    None when this process applied it; the screen reads the events to say when it took effect."""

    mode: ClassVar[str] = "none"

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.error: str | None = None
        """An unexpected engine error (a bug), shown on screen."""
        self.gone: str | None = None
        """A watched debate's writer died without a terminal event: the line that says so."""
        self.title = ""
        """What the header names before the debate is loaded (terminal-safe; "": nothing)."""
        self.loading = ""
        """What is still loading before the debate can be shown ("": nothing), said in the header."""

    async def start(self) -> Snapshot:
        raise NotImplementedError

    def events(self) -> AsyncIterator[Event]:
        raise NotImplementedError

    def now(self) -> float:
        return self.clock.wall()

    @property
    def paused(self) -> bool:
        return False

    @property
    def running(self) -> bool:
        """True while this process runs the debate and it has not ended."""
        return False

    @property
    def can_steer(self) -> bool:
        """Do commands reach the engine (this process runs it, or another one we attach to)?"""
        return False

    @property
    def debate_path(self) -> Path | None:
        """The debate's folder on disk (None before it has its name): `/search` reads its index."""
        folder = self.debate_folder()
        return None if folder is None or folder.pending else folder.path

    def shown(self) -> None:
        """The debate's screen is on the terminal: work that would delay it may start."""

    def refresh(self) -> None:
        """Once a second: look again at what may change outside (another process's lock)."""

    def debate_folder(self) -> DebateFolder | None:
        """The folder of the debate shown (None: a scripted one); its parent is the state dir."""
        return None

    def request_summary(self, agent_id: str, focus: str | None = None, from_step: int | None = None) -> str | None:
        """`from_step`: fold everything before that turn (or round), keep the rest verbatim."""
        raise ReadOnlyError(READ_ONLY)

    def pin(self, item: str) -> str | None:
        """Keep an item verbatim in every later view (ValueError: a line to show)."""
        raise ReadOnlyError(READ_ONLY)

    def unpin(self, item: str) -> str | None:
        raise ReadOnlyError(READ_ONLY)

    def pause(self) -> str | None:
        raise ReadOnlyError(READ_ONLY)

    def resume(self) -> str | None:
        raise ReadOnlyError(READ_ONLY)

    def stop(self) -> str | None:
        raise ReadOnlyError(READ_ONLY)

    def inject(self, text: str) -> str | None:
        """A moderator note every agent sees from its next call on."""
        raise ReadOnlyError(READ_ONLY)

    @property
    def can_answer(self) -> bool:
        """Can a person's answer reach the debate from here (`say`)?"""
        return self.can_steer

    def say(self, agent_id: str, text: str) -> str | None:
        """A person's answer to their open turn (`--human`). ValueError (a line to show) when the
        turn cannot take it; a command id when it went to another process."""
        raise ReadOnlyError(READ_ONLY)

    def load_draft(self, agent_id: str, slot: str) -> str:
        """What the person typed for that turn before (a stop, a kill), or ""."""
        return ""

    def save_draft(self, agent_id: str, slot: str, text: str) -> None:
        """Keep what the person has typed so far (StoreError when it cannot be written)."""

    async def shutdown(self) -> None:
        """Stop whatever runs (the engine, a tail) and wait for it; idempotent."""

    async def interrupt(self, cause: str = "") -> None:
        """Stop at once (Ctrl-C, SIGINT, SIGTERM — named by `cause`): no grace; idempotent."""
        await self.shutdown()


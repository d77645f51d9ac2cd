"""The watch runtime: follows a debate's event log on disk (`moot watch`), and while another
process runs the debate, sends it commands (attach)."""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import AsyncIterator

import aiofiles
from pydantic import ValidationError

from ...core.clock import Clock
from ...core.control.commands import MAX_SAY, ControlCommand, send
from ...core.errors import InputError
from ...core.events import ControlChanged, DebateResumed, Event, Warning_, is_terminal, parse_event
from ...core.human.drafts import Drafts
from ...core.storage.files import open_regular
from ...core.storage.folder import DebateFolder, writer_alive
from ...core.storage.state import apply, new_state
from .base import BACKLOG, READ_ONLY, ReadOnlyError, Runtime, Snapshot

log = logging.getLogger(__name__)


class WatchRuntime(Runtime):
    """Follows a debate's event log on disk (finished or being written by another process),
    through any resume, until no process writes it any more (its lock is free: `writer_alive`).
    A debate whose writer is gone without a terminal event is said so in the event log, and
    `gone` holds that line (the app exits non-zero).

    Attached: while another process holds the debate's lock, commands are sent to it
    (`moot.core.control.commands`) and it records each as an event carrying the command's id."""

    mode = "watch"

    def __init__(self, folder: DebateFolder, poll_s: float = 0.25, clock: Clock | None = None) -> None:
        super().__init__(clock)
        self.folder = folder
        self.poll_s = poll_s
        self._offset = 0
        self._last_ts = 0.0
        self._ended = False
        self.following = True
        """False once no process writes the debate and the whole log was read."""
        self._paused = False
        self._writer = writer_alive(folder)

    def debate_folder(self) -> DebateFolder | None:
        return self.folder


    @property
    def can_steer(self) -> bool:
        return self._writer and not self._ended

    @property
    def paused(self) -> bool:
        return self._paused and self.can_steer

    def refresh(self) -> None:
        if not self.following:  # while following, `events` probes the lock at every poll
            self._writer = writer_alive(self.folder)

    def _send(self, command: ControlCommand) -> str:
        if not self.can_steer:
            raise ReadOnlyError(READ_ONLY)
        try:
            send(self.folder, command)
        except InputError as exc:
            self._writer = writer_alive(self.folder)
            raise ReadOnlyError(str(exc)) from None
        return command.id

    def request_summary(self, agent_id: str, focus: str | None = None, from_step: int | None = None) -> str | None:
        return self._send(ControlCommand(action="summarize", agent=agent_id, text=focus, step=from_step))

    def pin(self, item: str) -> str | None:
        return self._send(ControlCommand(action="pin", text=item))

    def unpin(self, item: str) -> str | None:
        return self._send(ControlCommand(action="unpin", text=item))

    def pause(self) -> str | None:
        return self._send(ControlCommand(action="pause"))

    def resume(self) -> str | None:
        return self._send(ControlCommand(action="resume"))

    def stop(self) -> str | None:
        return self._send(ControlCommand(action="stop"))

    def inject(self, text: str) -> str | None:
        return self._send(ControlCommand(action="inject", text=text))

    def say(self, agent_id: str, text: str) -> str | None:
        if len(text) > MAX_SAY:
            raise ValueError(f"{len(text):,} characters; at most {MAX_SAY:,} go to another process")
        return self._send(ControlCommand(action="say", agent=agent_id, text=text))

    def load_draft(self, agent_id: str, slot: str) -> str:
        return Drafts(lambda: self.folder.path).load(agent_id, slot)

    def save_draft(self, agent_id: str, slot: str, text: str) -> None:
        # The drafts are files of the debate's folder: the process running it reads them on resume.
        Drafts(lambda: self.folder.path).save(agent_id, slot, text)

    async def start(self) -> Snapshot:
        # The log so far, a block at a time: a long debate is folded (its old steps let go) and only
        # the last events are kept for the panes, never the whole log.
        state = new_state(self.folder.id)
        backlog: collections.deque[Event] = collections.deque(maxlen=BACKLOG)
        while events := await self._read_new(self.START_BLOCK):
            for event in events:
                apply(state, event)
            backlog.extend(events)
        return Snapshot(state, list(backlog))

    START_BLOCK = 4 << 20
    """Bytes of log read at a time when the watch starts."""

    async def _read_new(self, block: int = -1) -> list[Event]:
        """The complete lines after the last read (at least `block` bytes' worth, when given)."""
        try:
            async with aiofiles.open(open_regular(self.folder.events_path), "rb") as fh:
                await fh.seek(self._offset)
                data = await fh.read(block)
                while block > 0 and b"\n" not in data and len(data) % block == 0 and data:
                    data += await fh.read(block)  # a line longer than a block
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n")
        if end == -1:
            return []  # nothing new, or a line still being written
        self._offset += end + 1
        out: list[Event] = []
        for line in data[:end].split(b"\n"):
            if not line.strip():
                continue
            try:
                event = parse_event(line)
            except (ValidationError, ValueError):
                log.warning("skipping an unreadable line in %s", self.folder.events_path)
                continue
            out.append(event)
            self._last_ts = event.ts
            if is_terminal(event):
                self._ended = True
                self._paused = False
            elif isinstance(event, DebateResumed):
                self._ended = False
                self._paused = False
            elif isinstance(event, ControlChanged) and event.action in ("pause", "resume"):
                self._paused = event.action == "pause"
        return out

    async def events(self) -> AsyncIterator[Event]:
        while self.following:
            await asyncio.sleep(self.poll_s)
            alive = await asyncio.to_thread(writer_alive, self.folder)  # before reading: see tail_events
            self._writer = alive
            for event in await self._read_new():
                yield event
            if alive:
                continue
            self.following = False
            if not self._ended:
                self.gone = (f"debate {self.folder.id} stopped without an end and no process is writing it "
                             f"(killed?); continue with `moot resume {self.folder.id}`")
                yield Warning_(debate_id=self.folder.id, ts=self._last_ts, message=self.gone)

    def now(self) -> float:
        return self._last_ts if self._ended or not self.following else self.clock.wall()

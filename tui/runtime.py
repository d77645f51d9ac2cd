"""Where a debate screen's events come from, and where its commands go.

A `Runtime` is not a widget: the screen's bridge reads `events()` and the command
line calls the command methods. Four kinds:

- `LiveRuntime`: a `DebateSession` run in this process (`moot run`, `moot resume`).
- `WatchRuntime`: tails the events.jsonl of a debate (`moot watch`); while another
  process runs it, commands go to that process through `moot.core.control.commands` (attach).
- `ReplayRuntime`: plays a recorded debate with its original timing (`moot replay`);
  pause/resume control the playback, the rest is read-only.

(Tests and benchmarks push events through `tests/tui/scripted.py`.)
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import aiofiles
from pydantic import ValidationError

from ..core.clock import SYSTEM_CLOCK, Clock
from ..core.control.commands import ControlCommand, send
from ..core.errors import InputError
from ..core.events import (
    CallStarted,
    ContributionAdded,
    ControlChanged,
    DebateResumed,
    Event,
    Subscription,
    Token,
    Warning_,
    is_terminal,
    parse_event,
)
from ..core.models.state import Clarification, DebateState
from ..core.storage.state import apply, new_state
from ..core.storage.files import open_regular
from ..core.storage.folder import DebateFolder, writer_alive
from ..core.storage.log import read_events

if TYPE_CHECKING:
    from ..core.orchestrator import Clarifier
    from ..core.session import DebateSession

log = logging.getLogger(__name__)

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

    def refresh(self) -> None:
        """Once a second: look again at what may change outside (another process's lock)."""

    def request_summary(self, agent_id: str, focus: str | None = None) -> str | None:
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

    async def shutdown(self) -> None:
        """Stop whatever runs (the engine, a tail) and wait for it; idempotent."""

    async def interrupt(self, cause: str = "") -> None:
        """Stop at once (Ctrl-C, SIGINT, SIGTERM — named by `cause`): no grace; idempotent."""
        await self.shutdown()


class LiveRuntime(Runtime):
    """A debate run by this process; commands go to its orchestrator."""

    mode = "live"
    STOP_GRACE_S = 3.0
    """How long quitting waits for the debate to reach a call boundary before cancelling."""

    def __init__(self, session: DebateSession, clock: Clock | None = None) -> None:
        super().__init__(clock)
        self.session = session
        self.orchestrator = session.orchestrator
        self._sub: Subscription | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        """Set by stop/shutdown: a clarification dialog still open gives up."""
        self._interrupted = False
        """Set by interrupt(): the engine does not start any more."""

    def use_clarifier(self, ask: Clarifier) -> None:
        """Let `ask` (the app's dialog) answer the engine's clarifying questions.

        The engine awaits the answers inside the app's event loop; a stop (or quitting)
        while the dialog is open ends the wait with a stop, so nothing hangs and the
        questions are asked again on resume."""

        async def clarifier(questions: list[Clarification]) -> list[str]:
            from ..core.orchestrator import StopRequested

            if self._stopping.is_set():
                raise StopRequested
            asking = asyncio.ensure_future(ask(questions))
            stopping = asyncio.ensure_future(self._stopping.wait())
            try:
                await asyncio.wait({asking, stopping}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopping.cancel()
                if not asking.done():
                    asking.cancel()  # closes the dialog
            if not asking.done() or asking.cancelled():
                raise StopRequested
            return asking.result()

        self.orchestrator.clarifier = clarifier

    async def start(self) -> Snapshot:
        # Subscribe before the engine starts so no event is missed; copy the state
        # (a resumed debate's history) before any new event is folded into it.
        self._sub = self.session.bus.subscribe("tui")
        state = self.session.state.model_copy(deep=True)
        backlog: list[Event] = []
        if state.problem and self.session.folder.events_path.exists():
            backlog = await asyncio.to_thread(_tail_events, self.session.folder)
        if self._interrupted:  # interrupted before the engine started: it never does
            return Snapshot(state, backlog)
        self.session.start_writer()
        self._task = asyncio.create_task(self._run(), name="moot-debate")
        return Snapshot(state, backlog)

    async def _run(self) -> None:
        try:
            await self.session.run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in the engine: show it, keep the app alive
            log.exception("debate engine failed")
            self.error = f"{type(exc).__name__}: {exc}"

    async def events(self) -> AsyncIterator[Event]:
        assert self._sub is not None, "start() first"
        async for event in self._sub:
            yield event

    @property
    def paused(self) -> bool:
        return self.orchestrator.paused

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def can_steer(self) -> bool:
        return True

    def request_summary(self, agent_id: str, focus: str | None = None) -> str | None:
        self.orchestrator.request_summary(agent_id, focus)
        return None

    def pause(self) -> str | None:
        self.orchestrator.pause()
        return None

    def resume(self) -> str | None:
        self.orchestrator.resume()
        return None

    def stop(self) -> str | None:
        self._stopping.set()
        self.orchestrator.stop()
        return None

    def inject(self, text: str) -> str | None:
        self.orchestrator.inject(text)
        return None

    async def shutdown(self) -> None:
        task = self._task
        if task is not None and not task.done():
            self.stop()
            # stop() acts at the next call boundary; a slow provider call is cancelled
            # instead (the debate is still saved and resumable).
            done, _ = await asyncio.wait({task}, timeout=self.STOP_GRACE_S)
            if not done:
                task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        if self._sub is not None:
            self.session.bus.unsubscribe(self._sub)
            self._sub = None

    async def interrupt(self, cause: str = "") -> None:
        """Cancel the debate at once, as Ctrl-C does headless: calls in flight are
        cancelled, `debate_interrupted` is recorded (with `cause` as its reason), the log
        flushed, the lock released."""
        if cause and not self.orchestrator.interrupted_by:
            self.orchestrator.interrupted_by = cause
        self._stopping.set()
        task = self._task
        if task is None and not self._interrupted:
            # The engine never started: nothing to record; free the folder.
            self._interrupted = True
            await self.session.close()
        self._interrupted = True
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        await self.shutdown()


def _tail_events(folder: DebateFolder, limit: int = BACKLOG) -> list[Event]:
    try:
        events = [e for e in read_events(folder.events_path)]
    except Exception:  # the log is for display only here
        return []
    return events[-limit:]


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

    def request_summary(self, agent_id: str, focus: str | None = None) -> str | None:
        return self._send(ControlCommand(action="summarize", agent=agent_id, text=focus))

    def pause(self) -> str | None:
        return self._send(ControlCommand(action="pause"))

    def resume(self) -> str | None:
        return self._send(ControlCommand(action="resume"))

    def stop(self) -> str | None:
        return self._send(ControlCommand(action="stop"))

    def inject(self, text: str) -> str | None:
        return self._send(ControlCommand(action="inject", text=text))

    async def start(self) -> Snapshot:
        state = new_state(self.folder.id)
        events = await self._read_new()
        for event in events:
            apply(state, event)
        return Snapshot(state, events[-BACKLOG:])

    async def _read_new(self) -> list[Event]:
        try:
            async with aiofiles.open(open_regular(self.folder.events_path), "rb") as fh:
                await fh.seek(self._offset)
                data = await fh.read()
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

"""Running one debate end to end: lock the folder, write the log, run the engine, flush.

The CLI (headless), the TUI and the tests all start debates through `DebateSession`,
so the disk side is the same however a debate is watched.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .clock import SYSTEM_CLOCK, Clock
from .config import Overrides, ResolvedAgent, build_config
from .control.commands import Inbox
from .engine.grounding import Grounding
from .engine.limits import EndpointLimits
from .errors import ConfigError, StoreError
from .event_bus import EventBus, Subscription
from .events import IndexRebuilding, Warning_
from .human.drafts import Drafts
from .models.config import MootConfig
from .models.state import DebateState
from .orchestrator import Clarifier, Ids, Orchestrator
from .providers.pool import ProviderPool, default_provider_name
from .search.index import open_index
from .search.live import LiveIndex
from .storage.folder import DebateFolder
from .storage.lock import DebateLock
from .storage.log_writer import EventLogWriter
from .storage.state_dir import StateDir, default_state_dir, new_debate_id
from .storage.steps import contributions_of
from .tools.references import ReferenceSet, scan

WRITER_BACKLOG = 2000
"""Events the event log's writer may fall behind by before new calls wait for it."""


@dataclass
class SessionOptions:
    state_dir: Path | str | None = None
    demo_delay: float | None = None
    debate_id: str | None = None
    deterministic_ids: bool = False
    backoff_base_s: float = 0.5
    clock: Clock = SYSTEM_CLOCK
    """Wall and monotonic time (tests freeze both)."""
    clarifier: Clarifier | None = None
    """Answers clarifying questions; None: no answers."""
    limits: EndpointLimits | None = None
    """Endpoint limits shared with the other debates running beside this one (a benchmark's);
    None: the debate has its own."""


@dataclass
class DebateSession:
    """An orchestrator bound to its folder on disk, ready to run."""

    orchestrator: Orchestrator
    folder: DebateFolder
    lock: DebateLock
    providers: ProviderPool
    writer: EventLogWriter
    search: LiveIndex | None = None
    """The debate's search index, fed as events are emitted (see `moot.core.search.live`)."""
    _writer_sub: Subscription | None = None
    _writer_task: asyncio.Task[None] | None = None
    _inbox_task: asyncio.Task[None] | None = None

    @property
    def bus(self) -> EventBus:
        return self.orchestrator.bus

    @property
    def state(self) -> DebateState:
        return self.orchestrator.state

    def seat_people(self) -> None:
        """Keep the people's drafts in this debate's folder (it may still be renamed: asked lazily)."""
        folder, desk = self.folder, self.orchestrator.desk
        desk.drafts = Drafts(lambda: folder.path, desk.secrets)

    @property
    def people(self) -> dict[str, str]:
        """The people who take a seat: agent id → name."""
        return {a.id: a.name for a in self.orchestrator.agents if a.is_person}

    def start_writer(self) -> None:
        # The debate waits at its next call while the log's writer is this many events behind.
        self._writer_sub = self.bus.subscribe("event-log", limit=WRITER_BACKLOG)
        self.orchestrator.gate.backlog = self.bus.caught_up
        self._writer_task = asyncio.create_task(self.writer.run(self._writer_sub))
        # Commands from other processes (`moot ctl`, an attached `moot watch`) through the folder.
        orch = self.orchestrator
        inbox = Inbox(self.folder, orch.apply_command, self._warn, since=self.lock.acquired_at or time.time(),
                      ready=lambda: orch.accepting)
        self._inbox_task = asyncio.create_task(inbox.run())
        if self.search is not None:
            self.search.begin()  # a lost index is rebuilt beside the debate, from its first request

    def _warn(self, message: str, command_id: str | None) -> None:
        self.orchestrator.emit(Warning_(message=message, command_id=command_id))

    async def run(self) -> DebateState:
        """Run to the end (or stop/failure), then flush the log and release the lock.

        If the event log cannot be written (disk full, I/O error), the engine is
        stopped at once rather than left running with nothing saved: a StoreError
        says so, and the debate resumes from the last event that reached the disk."""
        if self._writer_task is None:
            self.start_writer()
        assert self._writer_task is not None
        engine = asyncio.ensure_future(self.orchestrator.run())

        def writer_done(task: asyncio.Task[None]) -> None:
            if not task.cancelled() and task.exception() is not None and not engine.done():
                engine.cancel()

        self._writer_task.add_done_callback(writer_done)
        try:
            try:
                state = await engine
            except asyncio.CancelledError:
                if self.writer_error is None or _cancelling():
                    raise
        finally:
            await self.close()
        if self.writer_error is not None:  # also when the engine finished before it noticed
            raise self._write_failure()
        return state

    @property
    def writer_error(self) -> BaseException | None:
        task = self._writer_task
        if task is None or not task.done() or task.cancelled():
            return None
        return task.exception()

    def _write_failure(self) -> StoreError:
        exc = self.writer_error
        if isinstance(exc, OSError) and exc.strerror:
            why = exc.strerror
        elif isinstance(exc, StoreError):
            why = str(exc)
        else:
            why = f"{type(exc).__name__}: {exc}"
        if self.folder.pending:
            return StoreError(f"cannot write the event log {self.folder.events_path}: {why}; the debate did not "
                              "start and nothing was saved")
        root = self.folder.path.parent
        flag = "" if root.resolve() == default_state_dir().resolve() else f" --state-dir {root}"
        return StoreError(
            f"cannot write the event log {self.folder.events_path}: {why}; the debate stopped and every event "
            f"on disk is kept; once that is fixed, continue with `moot resume {self.folder.id}{flag}`"
        )

    async def close(self) -> None:
        """Stop the inbox, flush the log, close the providers; the lock is released whatever
        happens on the way (a cancel while the log flushes must not leave it held)."""
        try:
            await self._close()
        finally:
            self.lock.release()

    async def _close(self) -> None:
        if self._inbox_task is not None:
            self._inbox_task.cancel()
            await asyncio.wait({self._inbox_task})  # its own end, not ours: a cancel of close() still propagates
            self._inbox_task = None
        if self._writer_sub is not None and self._writer_task is not None:
            self.bus.unsubscribe(self._writer_sub)
            try:
                await asyncio.shield(self._writer_task)
            except Exception:  # noqa: BLE001 - reported by run() as a StoreError
                pass
            self._writer_sub = None
            drafts = self.orchestrator.desk.drafts
            if self.writer_error is None and self.people and drafts is not None:
                drafts.prune(self.state.all_contributions(), set(self.people))  # the log holds them all
        await self.providers.aclose()
        if self.search is not None:
            await self.search.settle()  # a rebuild still running stops (a batch at most later)
            self.search.close()
        if self.orchestrator.grounding is not None:
            await self.orchestrator.grounding.aclose()
        self.folder.discard()  # never started (no first event on disk): leave nothing behind


def _cancelling() -> bool:
    """True when the current task itself was cancelled (a signal, the TUI quitting)."""
    task = asyncio.current_task()
    return bool(task is not None and task.cancelling())


def _say(line: str) -> None:
    """A line on stderr before the debate starts (no screen is up yet to show it)."""
    print(f"moot: {line}", file=sys.stderr, flush=True)


def _references(config: MootConfig, *, resuming: bool = False) -> ReferenceSet | None:
    """The debate's reference set, its paths saved absolute (a resume may run from elsewhere).
    A resume keeps the roots that still exist (the changed-files warning names what went)."""
    paths = list(config.debate.references)
    if not paths:
        return None
    if resuming:
        paths = [p for p in paths if Path(p).exists()] or paths[:0]
        if not paths:
            return None
    refs = scan(paths, max_file_bytes=config.tools.max_file_bytes, progress=_say)
    if not resuming:
        config.debate.references = [str(r) for r in refs.roots]
    return refs


def _grounding(config: MootConfig, refs: ReferenceSet | None,
               folder: Callable[[], DebateFolder]) -> Callable[[list[ResolvedAgent]], Grounding | None] | None:
    """What builds the debate's grounding once its agents are resolved (None: no references, no MCP)."""
    mcp = bool(config.tools.mcp) or any(a.tools is not None and a.tools.mcp for a in [*config.agents, config.judge])
    if refs is None and not mcp:
        return None
    if mcp:
        from .tools.mcp_client import McpUnavailable, require_sdk

        try:
            require_sdk()
        except McpUnavailable as exc:
            raise ConfigError(str(exc)) from None
    return lambda people: Grounding.build(config, people, refs, lambda: open_index(folder().path))


def new_session(
    problem: str,
    config: MootConfig,
    opts: SessionOptions,
) -> DebateSession:
    """Create the debate folder and an orchestrator for a new debate."""
    base_url = next((a.base_url for a in config.agents if a.base_url), None)
    default = default_provider_name(base_url)
    providers = ProviderPool(demo_delay=opts.demo_delay, timeout_s=config.debate.timeout_s,
                             max_retries=config.debate.max_retries, backoff_base_s=opts.backoff_base_s)
    state_dir = StateDir(opts.state_dir)
    debate_id = opts.debate_id or new_debate_id()
    ids = Ids(seed="" if opts.deterministic_ids else None)
    made: list[DebateFolder] = []
    grounding = _grounding(config, _references(config), lambda: made[0])
    orch = Orchestrator(config, problem, debate_id=debate_id, providers=providers, default_provider=default, ids=ids,
                        clock=opts.clock, clarifier=opts.clarifier, grounding=grounding)
    if opts.limits is not None:
        orch.engine.share(opts.limits)
    # Fail on a missing key before anything runs, and before an empty folder is left behind.
    for agent in [*orch.agents, orch.judge]:
        providers.get(agent)
    # Under a temporary name until its first event is on disk (see `storage.folder`).
    folder = state_dir.create(debate_id)
    made.append(folder)
    lock = folder.lock()
    try:
        lock.acquire()
    except BaseException:
        folder.discard()
        raise
    writer = EventLogWriter(folder)
    session = DebateSession(orch, folder, lock, providers, writer, _search(orch, folder, writer))
    session.seat_people()
    return _bound(session)


def _bound(session: DebateSession) -> DebateSession:
    """Steps the state let go of are read back from this debate's log when a view needs them."""
    folder = session.folder
    session.orchestrator.index.read_archived = lambda through: contributions_of(folder.events_path, through)
    return session


def _search(orch: Orchestrator, folder: DebateFolder, writer: EventLogWriter, log_seq: int | None = None) -> LiveIndex:
    """The debate's search index, listening to its events (opened now for a resumed debate, whose
    index is synced with its log first; at its first text for a new one). Old texts it finds are
    read back from the log, or, while `writer` has yet to write them, from memory."""
    def warn(message: str) -> None:
        orch.emit(Warning_(message=message))

    def progress(done: int, total: int, texts: int) -> None:
        orch.emit(IndexRebuilding(done=done, total=total, texts=texts))

    live = LiveIndex(folder, warn, progress)
    if log_seq is not None:
        live.open(log_seq)
    orch.attach_search(live, lambda: writer.written_seq)
    writer.on_written = live.flush  # what the log has, another process's `moot search` finds
    return live


def resume_session(debate_id: str, opts: SessionOptions, overrides: Overrides | None = None) -> DebateSession:
    """An orchestrator for a saved debate, continuing where its log ends."""
    folder = StateDir(opts.state_dir).open(debate_id)
    folder.check_files()  # a link or a FIFO in the folder: refused before anything is touched
    lock = folder.lock()
    lock.acquire()
    try:
        folder.repair_log()
        state = folder.load()
        if state.status == "completed":
            raise StoreError(f"debate {folder.id} is already completed")
        if not state.config:
            raise StoreError(f"debate {folder.id} has no saved configuration to resume from")
        ov = overrides or Overrides()
        config = build_config(state.config, Overrides(provider=ov.provider, model=ov.model, base_url=ov.base_url))
        base_url = next((a.base_url for a in config.agents if a.base_url), None)
        providers = ProviderPool(demo_delay=opts.demo_delay, timeout_s=config.debate.timeout_s,
                                 max_retries=config.debate.max_retries, backoff_base_s=opts.backoff_base_s)
        orch = Orchestrator(config, state.problem, debate_id=folder.id, providers=providers,
                            default_provider=default_provider_name(base_url), state=state,
                            ids=Ids(seed=f"r{state.last_seq}-" if opts.deterministic_ids else None),
                            clock=opts.clock, clarifier=opts.clarifier,
                            grounding=_grounding(config, _references(config, resuming=True), lambda: folder))
        if opts.limits is not None:
            orch.engine.share(opts.limits)
        for agent in [*orch.agents, orch.judge]:
            providers.get(agent)
        writer = EventLogWriter(folder, bounded=state.archived_rounds > 0)
        search = _search(orch, folder, writer, state.last_seq)
    except BaseException:  # a refusal (StoreError, ConfigError) or anything else: never leave it locked
        lock.release()
        raise
    session = _bound(DebateSession(orch, folder, lock, providers, writer, search))
    session.seat_people()
    if session.people and orch.desk.drafts is not None:  # turns recorded before a kill: their drafts go
        orch.desk.drafts.prune(state.all_contributions(), set(session.people))
    return session


__all__ = ["DebateSession", "SessionOptions", "new_session", "resume_session"]

"""The live runtime: a debate run by this process (`moot run`, `moot resume`)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from ...core.event_bus import Subscription
from ...core.events import Event
from ...core.models.state import Clarification
from ...core.storage.folder import DebateFolder
from ...core.storage.log import read_events
from .base import BACKLOG, ReadOnlyError, Runtime, Snapshot

if TYPE_CHECKING:
    from ...core.clock import Clock
    from ...core.orchestrator import Clarifier, Orchestrator
    from ...core.session import DebateSession

SessionBuilder = Callable[[Callable[[str], None]], "DebateSession"]
"""Builds a debate's session (in a thread), telling the callable it is given what it loads."""

log = logging.getLogger(__name__)


class LiveRuntime(Runtime):
    """A debate run by this process; commands go to its orchestrator."""

    mode = "live"
    STOP_GRACE_S = 3.0
    """How long quitting waits for the calls in flight to finish before cancelling them. Either
    way the debate ends `stopped` (exit 0): the orchestrator records a stop whose calls were
    cancelled as a stop, so the outcome never depends on how long the calls had left."""

    FRAME_WRITE_S = 0.05
    """How long the build waits once the first frame is made: Textual's driver writes it from a
    thread of its own, which a build holding the interpreter (imports) would slow by tenths."""

    def __init__(self, session: DebateSession | None = None, clock: Clock | None = None, *,
                 build: SessionBuilder | None = None, title: str = "") -> None:
        super().__init__(clock)
        assert (session is None) != (build is None), "a session, or how to build one"
        self._session = session
        self._build = build
        self.title = title
        """The problem's first line, shown while the session is being built (terminal-safe)."""
        self.loading = "" if session is not None else "starting"
        """What is being loaded before the debate can start ("" once it can)."""
        self.build_error: BaseException | None = None
        """Why the session could not be built: the app closes, the command says it."""
        self.on_build_failed: Callable[[], None] = lambda: None
        self._builder: threading.Thread | None = None
        self._shown = asyncio.Event()
        self._ask: Clarifier | None = None
        self._sub: Subscription | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        """Set by stop/shutdown: a clarification dialog still open gives up."""
        self._interrupted = False
        """Set by interrupt(): the engine does not start any more."""
        self._closed = False

    @property
    def session(self) -> DebateSession:
        if self._session is None:
            raise ReadOnlyError("the debate is still starting")
        return self._session

    @property
    def built(self) -> DebateSession | None:
        """The session once it exists (None while it is being built, or when building failed)."""
        return self._session

    @property
    def orchestrator(self) -> Orchestrator:
        return self.session.orchestrator

    def shown(self) -> None:
        self._shown.set()

    def debate_folder(self) -> DebateFolder | None:
        return self._session.folder if self._session is not None else None

    async def _build_session(self) -> DebateSession | None:
        """Build the session in a thread once the first screen is shown (None: quit meanwhile).

        A plain thread, not the loop's executor: quitting while it builds does not wait for it
        (`finish_building` does, after the app has closed)."""
        assert self._build is not None
        build = self._build
        await self._shown.wait()
        await asyncio.sleep(self.FRAME_WRITE_S)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[DebateSession] = loop.create_future()

        def settle(session: DebateSession | None, exc: BaseException | None) -> None:
            if done.done():
                return
            if exc is not None:
                done.set_exception(exc)
            else:
                assert session is not None
                done.set_result(session)

        def step(what: str) -> None:
            self.loading = what

        def work() -> None:
            try:
                session = build(step)
            except BaseException as exc:  # noqa: BLE001 - said by the command once the app has closed
                self.build_error = exc
                loop.call_soon_threadsafe(settle, None, exc)
                return
            self._session = session
            loop.call_soon_threadsafe(settle, session, None)

        self._builder = threading.Thread(target=work, name="moot-build", daemon=True)
        self._builder.start()
        try:
            session = await done
        except asyncio.CancelledError:
            raise
        except BaseException:  # the app closes (this wait with it); the command says the error
            self.on_build_failed()
            await asyncio.Event().wait()
            raise
        self.loading = ""
        if self._interrupted:
            return None
        if self._ask is not None:
            self._apply_clarifier(session)
        return session

    async def finish_building(self) -> None:
        """Once the app has closed: wait for a build still running; a session built but never
        started (the app was quit meanwhile) is closed, its folder unlocked."""
        if self._builder is not None:
            self._builder.join()  # nothing else runs on this loop now
        session = self._session
        if session is not None and self._task is None and not self._closed:
            self._closed = True
            await session.close()

    def use_clarifier(self, ask: Clarifier) -> None:
        """Let `ask` (the app's dialog) answer the engine's clarifying questions.

        The engine awaits the answers inside the app's event loop; a stop (or quitting)
        while the dialog is open ends the wait with a stop, so nothing hangs and the
        questions are asked again on resume. Only for a debate configured to clarify; a session
        still being built gets it once it is built."""
        self._ask = ask
        if self._session is not None:
            self._apply_clarifier(self._session)

    def _apply_clarifier(self, session: DebateSession) -> None:
        ask = self._ask
        if ask is None or not session.orchestrator.config.debate.clarify:
            return

        async def clarifier(questions: list[Clarification]) -> list[str]:
            from ...core.orchestrator import StopRequested

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

        session.orchestrator.clarifier = clarifier

    async def start(self) -> Snapshot:
        # Subscribe before the engine starts so no event is missed; copy the state
        # (a resumed debate's history) before any new event is folded into it.
        if self._session is None and await self._build_session() is None:
            return Snapshot(self.session.state.model_copy(deep=True))  # quit while it was built: never starts
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
        return self._session is not None and self._session.orchestrator.paused

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def can_steer(self) -> bool:
        return True

    def request_summary(self, agent_id: str, focus: str | None = None, from_step: int | None = None) -> str | None:
        self.orchestrator.request_summary(agent_id, focus, from_step=from_step)
        return None

    def pin(self, item: str) -> str | None:
        self.orchestrator.pin(item)
        return None

    def unpin(self, item: str) -> str | None:
        self.orchestrator.unpin(item)
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

    def say(self, agent_id: str, text: str) -> str | None:
        self.orchestrator.say(agent_id, text, via="editor")
        return None

    def load_draft(self, agent_id: str, slot: str) -> str:
        drafts = self.orchestrator.desk.drafts
        return drafts.load(agent_id, slot) if drafts is not None else ""

    def save_draft(self, agent_id: str, slot: str, text: str) -> None:
        drafts = self.orchestrator.desk.drafts
        if drafts is not None:
            drafts.save(agent_id, slot, text)

    async def shutdown(self) -> None:
        if self._task is None and self._build is not None:
            self._interrupted = True  # a session still being built never starts
        task = self._task
        if task is not None and not task.done():
            self.stop()
            # stop() acts at the next call boundary; a slow provider call is cancelled
            # instead (still a stop: saved, resumable, the call redone on resume).
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
        if self._session is None:  # still being built: it never starts (`finish_building` closes it)
            self._interrupted = True
            self._stopping.set()
            return
        if cause and not self.orchestrator.interrupted_by:
            self.orchestrator.interrupted_by = cause
        self._stopping.set()
        task = self._task
        if task is None and not self._interrupted:
            # The engine never started: nothing to record; free the folder.
            self._interrupted = True
            self._closed = True
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

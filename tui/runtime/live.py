"""The live runtime: a debate run by this process (`moot run`, `moot resume`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from ...core.event_bus import Subscription
from ...core.events import Event
from ...core.models.state import Clarification
from ...core.storage.folder import DebateFolder
from ...core.storage.log import read_events
from .base import BACKLOG, Runtime, Snapshot

if TYPE_CHECKING:
    from ...core.clock import Clock
    from ...core.orchestrator import Clarifier
    from ...core.session import DebateSession

log = logging.getLogger(__name__)


class LiveRuntime(Runtime):
    """A debate run by this process; commands go to its orchestrator."""

    mode = "live"
    STOP_GRACE_S = 3.0
    """How long quitting waits for the calls in flight to finish before cancelling them. Either
    way the debate ends `stopped` (exit 0): the orchestrator records a stop whose calls were
    cancelled as a stop, so the outcome never depends on how long the calls had left."""

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


    def debate_folder(self) -> DebateFolder | None:
        return self.session.folder

    def use_clarifier(self, ask: Clarifier) -> None:
        """Let `ask` (the app's dialog) answer the engine's clarifying questions.

        The engine awaits the answers inside the app's event loop; a stop (or quitting)
        while the dialog is open ends the wait with a stop, so nothing hangs and the
        questions are asked again on resume."""

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

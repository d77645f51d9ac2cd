"""The debate screen's header: the debate's title, round and phase, tokens and cost, the time
it has run, and its status (STARTING, PAUSED, COMPLETED, WATCH · read-only, a person's turn…).

A part of the screen (`debate_events.DebatePart`): it owns the phase shown (events name it,
or a call's step does where no phase starts) and the screen's clock, which once a second
ticks the roster, the panes and the elapsed time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from textual.screen import Screen
from textual.timer import Timer

from ...core import events as ev
from ..runtime.base import Snapshot
from ..widgets.agent_roster import AgentRoster
from ..widgets.debate_header import DebateHeader
from .debate_events import Debate, DebatePart, Subscription, handle
from .debate_panes import AgentPanes


class StatusLine(DebatePart):
    """The header, kept to the state, the phase and the runtime."""

    def __init__(self, screen: Screen[None], debate: Debate, panes: AgentPanes, *, speed: float | None,
                 turn_badge: Callable[[str], str | None]) -> None:
        super().__init__(screen, debate)
        self.panes = panes
        self.speed = speed
        """A replay's speed, said in its status."""
        self.turn_badge = turn_badge
        """A person's turn said after the status (given what the status says), or None."""
        self.phase = ""
        self._loading: Timer | None = None

    def subscriptions(self) -> Iterable[Subscription]:
        return [handle(ev.PhaseStarted, self._phase_started), handle(ev.CallStarted, self._call_started)]

    def start(self) -> None:
        """On mount: the clock, and the header as it is before any event."""
        self.screen.set_interval(1.0, self.tick)
        self.refresh()

    def follow_loading(self) -> None:
        """What the runtime is loading, said as it changes until the debate is loaded."""
        if self.debate.runtime.loading:
            self._loading = self.screen.set_interval(0.1, self._show_loading)

    def _show_loading(self) -> None:
        self.refresh()
        if not self.debate.runtime.loading and self._loading is not None:
            self._loading.stop()

    async def loaded(self, snapshot: Snapshot) -> None:
        for event in snapshot.backlog:
            if isinstance(event, ev.PhaseStarted):
                self.phase = event.phase

    def _phase_started(self, event: ev.PhaseStarted) -> None:
        self.phase = event.phase

    def _call_started(self, event: ev.CallStarted) -> None:
        phase = event.view.phase
        if phase in ("clarify", "score", "turn"):
            self.phase = phase  # no phase_started for these steps

    def tick(self) -> None:
        """Once a second (and with every refresh): who may steer, the roster's and panes' times,
        the elapsed time."""
        runtime = self.debate.runtime
        steer = runtime.can_steer
        runtime.refresh()
        if steer != runtime.can_steer:  # the writer started or ended in another process
            self.refresh()
            self.screen.refresh_bindings()
        self.screen.query_one(AgentRoster).tick()
        self.panes.tick(runtime.now())
        state = self.debate.state
        header = self.screen.query_one(DebateHeader)
        if not state.problem:
            header.show_elapsed(None)
            return
        end = runtime.now() if state.status == "running" else state.updated_at
        header.show_elapsed(end - state.made_at)

    def refresh(self) -> None:
        state, runtime = self.debate.state, self.debate.runtime
        header = self.screen.query_one(DebateHeader)
        header.show_state(state, self.phase, runtime.mode, runtime.title)
        self.tick()
        status = state.status
        if runtime.error:
            header.show_status("ENGINE ERROR", "error")
        elif not state.problem:
            loading = f" · {runtime.loading}" if runtime.loading else ""
            header.show_status(("STARTING" if runtime.mode == "live" else "LOADING") + loading, "")
        elif status == "completed":
            header.show_status("COMPLETED", "done")
        elif status == "failed":
            header.show_status("FAILED", "error")
        elif status in ("stopped", "interrupted", "stopped_budget"):
            header.show_status(status.upper().replace("_", " "), "warning")
        elif runtime.paused:
            header.show_status("PAUSED", "warning")
        elif runtime.mode == "watch" and runtime.gone:
            header.show_status("WATCH · NOT RUNNING", "warning")  # the writer died without an end
        elif runtime.mode == "watch":
            header.show_status("WATCH · attached" if runtime.can_steer else "WATCH · read-only", "info")
        elif runtime.mode == "replay":
            header.show_status(f"REPLAY ×{self.speed:g}" if self.speed else "REPLAY", "info")
        else:
            header.show_status("")
        if (badge := self.turn_badge(header.status_text)) is not None:
            header.show_status(badge, "seat")

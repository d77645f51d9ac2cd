"""The debate screen's layout: what is on screen and where, whatever the events say.

A grid of agent panes (or, when they cannot all show text, one pane beside the roster of
agents: the focus layout), a conversation's shared transcript, zoom, the header and the
feedback line. `DebateLayout` is the first of the screen's three layers: the event routing
(`debate_events.py`) builds on it, and the screen itself (`debate.py`) adds keys and commands.
"""

from __future__ import annotations

import math

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Grid, Horizontal
from textual.events import DescendantFocus, Resize
from textual.screen import Screen
from textual.widgets import Footer, Label

from ...core.models.state import AgentInfo, DebateState
from ...core.models.terms import JUDGE_ID
from ...core.storage.state import new_state
from ..commands.completion import Vocabulary
from ..runtime.base import Runtime
from ..theming import theme_names
from ..widgets.agent_pane import AgentPane
from ..widgets.agent_roster import AgentRoster
from ..widgets.command_input import CommandInput
from ..widgets.conversation_view import ConversationView
from ..widgets.debate_header import DebateHeader
from ..widgets.event_log import EventLog
from ..widgets.kept_lines import KeptGrid, KeptHorizontal, KeptLabel, KeptVertical

MIN_PANE_WIDTH = 38
MIN_PANE_HEIGHT = 8
GRID_CHROME = 13
"""Rows that are not panes: header, event log (8), feedback, command line, footer, a spare."""
FOCUS_CHROME = 8
"""The same in the focus layout, whose event log is 4 rows."""
SHORT_HEIGHT = 34
"""Below this the event log keeps 3 lines instead of 7."""
NARROW_WIDTH = 120
"""Below this the header drops the model (each pane names its own)."""
TINY_WIDTH = 100
"""Below this the header drops the elapsed time too, and the roster is narrower."""


def grid_shape(n: int, width: int, height: int) -> tuple[int, int]:
    """(columns, rows) for n panes: cells near a 2.6:1 shape, few empty cells, none too narrow."""
    if n <= 0:
        return 1, 1
    max_cols = max(1, min(n, width // MIN_PANE_WIDTH))
    best: tuple[float, int] = (math.inf, 1)
    for cols in range(1, max_cols + 1):
        rows = math.ceil(n / cols)
        pane_w, pane_h = width / cols, max(1.0, height / rows)
        score = abs(math.log((pane_w / pane_h) / 2.6)) + 0.3 * (cols * rows - n)
        if pane_h < MIN_PANE_HEIGHT:
            score += 2.0
        best = min(best, (score, cols))
    cols = best[1]
    return cols, math.ceil(n / cols)


def needs_focus_layout(n: int, width: int, height: int) -> bool:
    """True when n panes cannot all show text: one pane is shown with the roster beside it."""
    if n <= 1:
        return False
    cols, rows = grid_shape(n, width, height)
    return height / rows < MIN_PANE_HEIGHT or width / cols < MIN_PANE_WIDTH


class DebateLayout(Screen[None]):
    """The debate screen's widgets and their arrangement (see the module's docstring)."""

    def __init__(self, runtime: Runtime, *, speed: float | None = None) -> None:
        super().__init__()
        self.runtime = runtime
        self.speed = speed
        self.state: DebateState = new_state("")
        self.phase = ""
        self.panes: dict[str, AgentPane] = {}
        self.conversation: ConversationView | None = None
        self.compact = False
        """The focus layout: one pane (`current`) beside the roster, for terminals too small for all."""
        self.current: str | None = None

    def compose(self) -> ComposeResult:
        yield DebateHeader(self.runtime.title)
        with KeptHorizontal(id="main"):  # drawn in every frame while panes stream: lines kept
            yield KeptGrid(id="panes")
            yield AgentRoster(clock=self.runtime.now, id="roster")
        yield EventLog(id="event-log")
        with KeptVertical(id="command-bar"):
            yield KeptLabel("", id="command-feedback")
            with KeptHorizontal(id="command-row"):
                yield KeptLabel("›", id="command-prompt")
                yield CommandInput(Vocabulary(self._agent_words, self._theme_words), id="command", compact=True)
        yield Footer()

    def _agent_words(self) -> list[str]:
        return [a.id for a in self.state.agents]

    def _theme_words(self) -> list[str]:
        return theme_names(self.app.available_themes)

    def feedback(self, text: str, error: bool = False) -> None:
        """The line under the command line: what a command did, or why it could not ("" hides it)."""
        label = self.query_one("#command-feedback", Label)
        label.update(Text(text))
        label.display = bool(text)
        label.set_class(error, "-error")
        label.set_class(not error, "-info")

    # ------------------------------------------------------------------ panes

    def on_resize(self, event: Resize) -> None:
        self._relayout()

    def _relayout(self) -> None:
        grid = self.query_one("#panes", Grid)
        width, height = self.size
        self.set_class(width < NARROW_WIDTH, "-narrow")
        self.set_class(width < TINY_WIDTH, "-tiny")
        self.set_class(height < SHORT_HEIGHT, "-short")
        footer = self.query_one(Footer)
        footer.compact = width < TINY_WIDTH
        if footer.show_command_palette != (width >= TINY_WIDTH):
            # Below 100 columns the keys need the room: ctrl+p still opens the palette (/help says so).
            footer.show_command_palette = width >= TINY_WIDTH
            footer.refresh(recompose=True)
        compact = bool(self.panes) and needs_focus_layout(len(self.panes), width, max(1, height - GRID_CHROME))
        if compact != self.compact:
            self.compact = compact
            self.set_class(compact, "-compact")
            self.refresh_bindings()
        if compact:
            self._show_current(self.current or next(iter(self.panes)))
        n = 1 if self.zoomed is not None or compact else len(self.panes)
        cols, rows = grid_shape(n, width, max(1, height - GRID_CHROME))
        grid.styles.grid_size_columns = cols
        grid.styles.grid_size_rows = rows

    def _show_current(self, agent_id: str) -> None:
        """The focus layout's pane: shown, focused unless the user is typing, marked in the roster."""
        self.current = agent_id
        for pid, p in self.panes.items():
            p.set_class(pid == agent_id, "-current")
        self.query_one(AgentRoster).mark_focused(agent_id if self.compact else None)
        pane = self.panes.get(agent_id)
        if self.compact and pane is not None and not isinstance(self.focused, CommandInput):
            self.set_focus(pane)

    async def _build_panes(self) -> None:
        """The layout for the debate's protocol: a pane per agent, or a conversation's shared
        transcript beside the roster of agents."""
        if self.panes or self.conversation is not None or not self.state.agents:
            return
        roster = self.query_one(AgentRoster)
        await roster.set_agents(self.state.agents, self.state.judge)
        if self.state.protocol == "conversation":
            names = {a.id: (a.name, a.role) for a in [*self.state.agents, *([self.state.judge] if self.state.judge else [])]}
            self.conversation = ConversationView(names, id="conversation")
            self.set_class(True, "-conversation")
            await self.query_one("#main", Horizontal).mount(self.conversation, before=roster)
            self.refresh_bindings()
            return
        infos: list[tuple[AgentInfo, bool]] = [(a, False) for a in self.state.agents]
        if self.state.judge is not None:
            # single, vote and adaptive make no judge call: that pane shows the final answer the vote reached
            no_judge = self.state.protocol in ("single", "vote", "adaptive")
            infos.append((self.state.judge.model_copy(update={"name": "Final answer", "role": "by vote"})
                          if no_judge else self.state.judge, True))
        panes = [AgentPane(info, judge=judge) for info, judge in infos]
        for pane in panes:
            pane.streams = self.runtime.mode != "watch"
        self.panes = {p.info.id: p for p in panes}
        await self.query_one("#panes", Grid).mount_all(panes)
        self._relayout()
        self.refresh_bindings()

    def pane(self, agent_id: str | None) -> AgentPane | None:
        return self.panes.get(agent_id or "")

    @property
    def judge_pane(self) -> AgentPane | None:
        return self.pane(self.state.judge.id if self.state.judge else JUDGE_ID)

    def _focused_pane(self) -> AgentPane | None:
        focused = self.focused
        return focused if isinstance(focused, AgentPane) else None

    def focused_agent_id(self) -> str | None:
        """The agent whose pane has focus, or the one shown in the focus layout."""
        pane = self._focused_pane()
        return pane.info.id if pane else (self.current if self.compact else None)

    @property
    def zoomed(self) -> AgentPane | None:
        return next((p for p in self.panes.values() if p.has_class("-zoomed")), None)

    def zoom(self, pane: AgentPane | None) -> None:
        """Show one pane in place of the grid (None: every pane again)."""
        for p in self.panes.values():
            p.set_class(p is pane, "-zoomed")
        if pane is not None and self.compact:
            self._show_current(pane.info.id)
        self.set_class(pane is not None, "-zoom")
        self._relayout()

    def _pick(self, agent_id: str) -> None:
        if self.compact:
            self._show_current(agent_id)
        else:
            self.set_focus(self.panes[agent_id])

    @on(AgentRoster.Picked)
    def _roster_picked(self, message: AgentRoster.Picked) -> None:
        if message.agent_id in self.panes:
            self._pick(message.agent_id)

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        pane = self._focused_pane()
        if pane is not None and self.current != pane.info.id:
            self.current = pane.info.id
            if self.compact:
                self._show_current(pane.info.id)

    # ------------------------------------------------------------------ header

    def _tick(self) -> None:
        steer = self.runtime.can_steer
        self.runtime.refresh()
        if steer != self.runtime.can_steer:  # the writer started or ended in another process
            self._refresh_header()
            self.refresh_bindings()
        self.query_one(AgentRoster).tick()
        now = self.runtime.now()
        for pane in self.panes.values():
            pane.tick(now)
        state = self.state
        if not state.problem:
            self.query_one(DebateHeader).show_elapsed(None)
            return
        end = self.runtime.now() if state.status == "running" else state.updated_at
        self.query_one(DebateHeader).show_elapsed(end - state.created_at)

    def _refresh_header(self) -> None:
        header = self.query_one(DebateHeader)
        header.show_state(self.state, self.phase, self.runtime.mode, self.runtime.title)
        self._tick()
        status = self.state.status
        if self.runtime.error:
            header.show_status("ENGINE ERROR", "error")
        elif not self.state.problem:
            loading = f" · {self.runtime.loading}" if self.runtime.loading else ""
            header.show_status(("STARTING" if self.runtime.mode == "live" else "LOADING") + loading, "")
        elif status == "completed":
            header.show_status("COMPLETED", "done")
        elif status == "failed":
            header.show_status("FAILED", "error")
        elif status in ("stopped", "interrupted", "stopped_budget"):
            header.show_status(status.upper().replace("_", " "), "warning")
        elif self.runtime.paused:
            header.show_status("PAUSED", "warning")
        elif self.runtime.mode == "watch" and self.runtime.gone:
            header.show_status("WATCH · NOT RUNNING", "warning")  # the writer died without an end
        elif self.runtime.mode == "watch":
            header.show_status("WATCH · attached" if self.runtime.can_steer else "WATCH · read-only", "info")
        elif self.runtime.mode == "replay":
            header.show_status(f"REPLAY ×{self.speed:g}" if self.speed else "REPLAY", "info")
        else:
            header.show_status("")

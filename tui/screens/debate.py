"""The debate screen: header, a grid of agent panes, the event log and the command line.

The screen is composed of parts, each a small object that owns its state and handles the
events it shows (`debate_events.DebatePart`, subscribed by event class, built once):

- `debate_status.StatusLine`: the header (phase, status, elapsed time) and the clock;
- `debate_roster.RosterRows`: the roster's rows (what each agent's calls are doing);
- `debate_panes.AgentPanes`: the panes or a conversation's transcript, and their layout;
- `debate_seats.PeopleSeats`: a person's turn, the editor their pane becomes;
- `debate_controls.RunControls`: the command line, and the keys that steer the run.

`debate_events.EventFeed` folds each event into the shared state and hands it to the parts.
The screen itself composes the widgets, lists its keys, passes Textual's messages to the part
they concern, and is the door (`commands.CommandContext`) that slash commands act through.
The commands themselves live in `tui/commands/`, one handler each.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import DescendantFocus, Resize
from textual.screen import Screen
from textual.widgets import Footer

from ...core.context.index import DebateIndex
from ...core.models.state import DebateState
from ..bridge import Bridge, DebateLoaded, EngineBatch, RuntimeFailed
from ..commands.completion import Vocabulary
from ..commands.palette import MootCommandProvider, palette_entries
from ..commands.registry import COMMANDS
from ..followups import Followups
from ..runtime.base import Runtime
from ..theming import theme_names
from ..widgets.agent_pane import AgentPane
from ..widgets.agent_roster import AgentRoster
from ..widgets.command_input import CommandInput
from ..widgets.conversation_view import ConversationView
from ..widgets.debate_header import DebateHeader
from ..widgets.event_log import EventLog
from ..widgets.kept_lines import KeptGrid, KeptHorizontal, KeptLabel, KeptVertical
from ..widgets.seat_editor import SeatEditor
from .debate_controls import RunControls
from .debate_events import Debate, DebatePart, EventFeed
from .debate_layout import GRID_CHROME, grid_shape, needs_focus_layout
from .debate_panes import AgentPanes, agent_usage
from .debate_roster import RosterRows
from .debate_seats import PeopleSeats
from .debate_status import StatusLine
from .debates import ShowSessions

if TYPE_CHECKING:  # what a command opens, loaded by the command (not before the first screen)
    from ...core.fork_compare import ForkComparison
    from ...core.search.debates import DebateHit

__all__ = ["DebateScreen", "GRID_CHROME", "agent_usage", "grid_shape", "needs_focus_layout"]


class DebateScreen(Screen[None]):
    """One debate, live or recorded."""

    CSS_PATH = "debate.tcss"
    COMMANDS = {MootCommandProvider}
    # Help and quit first: the footer drops what does not fit from the right (`e` shows only
    # while a person's turn is open).
    BINDINGS = [
        Binding("e", "edit_turn", "Your turn"),
        Binding("question_mark,f1", "help", "Help", key_display="?"),
        Binding("q", "app.quit", "Quit"),
        Binding("escape", "back", "Back"),
        Binding("right_square_bracket", "next_agent", "Next agent", key_display="]"),
        Binding("left_square_bracket", "next_agent(-1)", "Previous agent", show=False),
        Binding("s", "summarize", "Summarize"),
        Binding("c", "context", "Context"),
        Binding("d", "debates", "Debates", show=False),
        Binding("i", "inspect", "Inspect", show=False),
        Binding("p", "toggle_pause", "Pause"),
        Binding("x", "stop", "Stop"),
        Binding("t", "cycle_theme", "Theme", show=False),
        Binding("z", "zoom", "Zoom", show=False),
        Binding("end", "follow", "Follow live", show=False),
        *(Binding(str(n), f"show_agent({n})", show=False) for n in range(10)),
    ]

    def __init__(self, runtime: Runtime, *, can_go_back: bool = False, speed: float | None = None) -> None:
        super().__init__()
        self.runtime = runtime
        self.debate = Debate(runtime)
        self.followups = Followups()
        """What the feedback line becomes when a command takes effect."""
        debate = self.debate
        self.agent_panes = AgentPanes(self, debate)
        self.roster_rows = RosterRows(self, debate)
        self.seats = PeopleSeats(self, debate, self.agent_panes, feedback=self.feedback,
                                 header_changed=self._refresh_header)
        self.status_line = StatusLine(self, debate, self.agent_panes, speed=speed, turn_badge=self.seats.badge)
        self.controls = RunControls(self, debate, self.agent_panes, self.seats, context=self, can_go_back=can_go_back)
        # The order events reach the parts in: the roster's rows exist before the panes lay out
        # (which marks a row), and a person's turn closes after the panes saw the debate end.
        parts: list[DebatePart] = [self.status_line, self.roster_rows, self.agent_panes, self.seats, self.controls]
        self.feed = EventFeed(self, debate, parts, self.followups, self.feedback)
        self.bridge = Bridge(runtime, self)

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

    def on_mount(self) -> None:
        self.query_one("#command-feedback").display = False
        self.query_one(CommandInput).cursor_blink = getattr(self.app, "cursor_blink", True)
        self.run_worker(self.bridge.run(), name="bridge", group="bridge", exit_on_error=False)
        self.status_line.start()
        self.call_after_refresh(self.runtime.shown)
        self.status_line.follow_loading()

    # ------------------------------------------------------------------ what the parts share

    @property
    def state(self) -> DebateState:
        return self.debate.state

    @state.setter
    def state(self, state: DebateState) -> None:
        self.debate.state = state

    @property
    def index(self) -> DebateIndex:
        return self.debate.index

    @index.setter
    def index(self, index: DebateIndex) -> None:
        self.debate.index = index

    @property
    def loaded(self) -> bool:
        return self.debate.loaded

    @property
    def panes(self) -> dict[str, AgentPane]:
        return self.agent_panes.panes

    @property
    def conversation(self) -> ConversationView | None:
        return self.agent_panes.conversation

    @property
    def compact(self) -> bool:
        return self.agent_panes.compact

    @property
    def current(self) -> str | None:
        return self.agent_panes.current

    @property
    def zoomed(self) -> AgentPane | None:
        return self.agent_panes.zoomed

    @property
    def judge_pane(self) -> AgentPane | None:
        return self.agent_panes.judge_pane

    def pane(self, agent_id: str | None) -> AgentPane | None:
        return self.agent_panes.pane(agent_id)

    def zoom(self, pane: AgentPane | None) -> None:
        self.agent_panes.zoom(pane)

    @property
    def editors(self) -> dict[str, SeatEditor]:
        return self.seats.editors

    def _refresh_header(self) -> None:
        self.status_line.refresh()

    # ------------------------------------------------------------------ Textual's messages, to their parts

    @on(DebateLoaded)
    async def _debate_loaded(self, message: DebateLoaded) -> None:
        await self.feed.load(message.snapshot)
        self.agent_panes.show_usage()
        self.debate.loaded = True
        if self.state.status != "running":
            self.agent_panes.debate_ended()
        self.status_line.refresh()

    @on(EngineBatch)
    async def _engine_batch(self, message: EngineBatch) -> None:
        """A frame's events; the usage and the header once at the end. The bridge sends the
        next batch after the frame that draws this one."""
        try:
            await self.feed.apply(message.items)
            self.agent_panes.show_usage()
            self.status_line.refresh()
        finally:
            self.call_after_refresh(self.bridge.drawn)

    @on(RuntimeFailed)
    def _runtime_failed(self, message: RuntimeFailed) -> None:
        self.query_one(EventLog).add_line(f"✗ {message.error}", "error")
        self.runtime.error = message.error
        self.status_line.refresh()

    def on_resize(self, event: Resize) -> None:
        self.agent_panes.relayout()

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        self.agent_panes.focus_moved()

    @on(AgentRoster.Picked)
    def _roster_picked(self, message: AgentRoster.Picked) -> None:
        self.agent_panes.pick(message.agent_id)

    @on(CommandInput.Submitted, "#command")
    def _command_submitted(self, event: CommandInput.Submitted) -> None:
        self.controls.submitted(event.value.strip())

    @on(SeatEditor.Send)
    def _seat_send(self, message: SeatEditor.Send) -> None:
        self.seats.send(message)

    @on(SeatEditor.Draft)
    def _seat_draft(self, message: SeatEditor.Draft) -> None:
        self.seats.save_draft(message)

    @on(SeatEditor.ShowView)
    def _seat_view(self, message: SeatEditor.ShowView) -> None:
        self.seats.show_view(message)

    # ------------------------------------------------------------------ the command line

    def feedback(self, text: str, error: bool = False) -> None:
        self.controls.feedback(text, error)

    def palette_entries(self) -> list[tuple[str, str, str]]:
        return palette_entries([(a.id, a.name) for a in self.state.agents], self._theme_words())

    def command_handlers(self) -> dict[str, Callable[..., None]]:
        """Command name → its handler bound to this screen: one entry for every command in `COMMANDS`."""
        return {name: partial(spec.run, self) for name, spec in COMMANDS.items() if spec.run is not None}

    def run_command_line(self, line: str) -> None:
        self.controls.run(line)

    def action_command_line(self) -> None:
        self.controls.open_command_line()

    def prefill_command_line(self, line: str) -> None:
        self.controls.prefill(line)

    # ------------------------------------------------------------------ what commands act through

    def focused_agent_id(self) -> str | None:
        return self.agent_panes.focused_agent_id()

    def open_context_overview(self) -> None:
        from .context_overview import ContextOverviewScreen  # opened by a key: not before the first screen

        self.app.push_screen(ContextOverviewScreen(self.state, self.index, self.focused_agent_id()))

    def open_inspector(self, agent_id: str, round_no: int | None = None) -> None:
        """The exact messages of the agent's calls: its latest call, or its first in `round_no`."""
        from .context import ContextScreen

        self.app.push_screen(ContextScreen(self.state, self.index, agent_id, round_no))

    def open_search_results(self, text: str, hits: list[DebateHit]) -> None:
        from .search_results import SearchResultsScreen

        self.app.push_screen(SearchResultsScreen(self.state, self.index, text, hits))

    def open_compare(self, a: str, b: str, step: int | None = None) -> None:
        from .compare import CompareScreen

        self.app.push_screen(CompareScreen(self.state, self.index, a, b, step))

    def open_fork_compare(self, comparison: ForkComparison) -> None:
        from .fork_compare import ForkCompareScreen

        self.app.push_screen(ForkCompareScreen(comparison))

    def open_help(self) -> None:
        from .help import HelpScreen

        self.app.push_screen(HelpScreen())

    def open_debates(self) -> None:
        self.post_message(ShowSessions())

    def controls_changed(self) -> None:
        self.status_line.refresh()
        self.refresh_bindings()

    def quit_app(self) -> None:
        self.call_later(self.app.action_quit)

    # ------------------------------------------------------------------ keys, each to its part

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.controls.allows(action)

    def action_summarize(self) -> None:
        self.controls.summarize()

    def action_context(self) -> None:
        self.controls.run("/context")

    def action_inspect(self) -> None:
        self.controls.inspect()

    def action_toggle_pause(self) -> None:
        self.controls.toggle_pause()

    def action_stop(self) -> None:
        self.controls.stop()

    def action_cycle_theme(self) -> None:
        self.controls.cycle_theme()

    def action_debates(self) -> None:
        self.controls.run("/debates")

    def action_help(self) -> None:
        self.controls.run("/help")

    def action_back(self) -> None:
        self.controls.back()

    def action_edit_turn(self) -> None:
        self.seats.edit_turn()

    def action_zoom(self) -> None:
        self.agent_panes.toggle_zoom()

    def action_show_agent(self, number: int) -> None:
        self.agent_panes.show_agent(number)

    def action_next_agent(self, step: int = 1) -> None:
        self.agent_panes.next_agent(step)

    def action_follow(self) -> None:
        self.agent_panes.follow()

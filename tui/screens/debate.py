"""The debate screen: header, a grid of agent panes, the event log and the command line.

Layers, one idea each: `debate_layout.DebateLayout` (what is on screen and where),
`debate_events.DebateEvents` (what each engine event changes), `debate_seats.DebateSeats` (a
person's turn: the editor their pane becomes) and `DebateScreen` here — keys,
the command line and the door (`commands.CommandContext`) that slash commands act through.
The commands themselves live in `tui/commands/`, one handler each.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual import on
from textual.actions import SkipAction
from textual.binding import Binding

from ...core.fork_compare import ForkComparison
from ...core.search.debates import DebateHit
from ..commands.base import CommandError
from ..commands.palette import MootCommandProvider, palette_entries
from ..commands.registry import COMMANDS, parse, run_command
from ..runtime.base import ReadOnlyError, Runtime
from ..theming import BUNDLED
from ..widgets.command_input import CommandInput
from .debate_events import agent_usage
from .debate_layout import GRID_CHROME, grid_shape, needs_focus_layout
from .debate_seats import DebateSeats
from .debates import ShowSessions

__all__ = ["DebateScreen", "GRID_CHROME", "agent_usage", "grid_shape", "needs_focus_layout"]


class DebateScreen(DebateSeats):
    """One debate, live or recorded."""

    CSS_PATH = "debate.tcss"
    COMMANDS = {MootCommandProvider}
    # Help and quit first: the footer drops what does not fit from the right.
    BINDINGS = [
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
        super().__init__(runtime, speed=speed)
        self.can_go_back = can_go_back

    def on_mount(self) -> None:
        self.query_one("#command-feedback").display = False
        self.query_one(CommandInput).cursor_blink = getattr(self.app, "cursor_blink", True)
        self.run_worker(self.bridge.run(), name="bridge", group="bridge", exit_on_error=False)
        self.set_interval(1.0, self._tick)
        self._refresh_header()
        self.call_after_refresh(self.runtime.shown)
        if self.runtime.loading:  # said as it changes, until the debate is loaded
            self._loading = self.set_interval(0.1, self._show_loading)

    def _show_loading(self) -> None:
        self._refresh_header()
        if not self.runtime.loading:
            self._loading.stop()

    # ------------------------------------------------------------------ the command line

    def palette_entries(self) -> list[tuple[str, str, str]]:
        return palette_entries([(a.id, a.name) for a in self.state.agents], self._theme_words())

    @on(CommandInput.Submitted, "#command")
    def _command_submitted(self, event: CommandInput.Submitted) -> None:
        line = event.value.strip()
        command = self.query_one(CommandInput)
        if self.focused is command and not command.value:
            # Leave the command line (as vim's ':' does), so the single-key bindings work
            # again at once; '/' comes back to it. (It already holds text when keys came in
            # a burst: the next command is being typed, keep it.)
            self.set_focus(None)
        if line:
            self.run_command_line(line)

    def command_handlers(self) -> dict[str, Callable[..., None]]:
        """Command name → its handler bound to this screen: one entry for every command in `COMMANDS`."""
        return {name: partial(spec.run, self) for name, spec in COMMANDS.items() if spec.run is not None}

    def run_command_line(self, line: str) -> None:
        """Parse and run one command; every problem ends as an inline message."""
        try:
            run_command(self, parse(line))
        except (CommandError, ReadOnlyError) as exc:
            self.feedback(str(exc), error=True)

    def action_command_line(self) -> None:
        """`/` (the app's priority binding): open the command line with a slash on it.

        On the command line a slash is text: the key goes on to the input, in order with the
        keys before it, which a burst (tmux send-keys, a paste typed as keys) may still have
        queued there. Deciding that from the input's own focus state (`has_focus`, set only
        once the input has read its Focus event) lost those slashes."""
        command = self.query_one(CommandInput)
        if self.focused is command:
            raise SkipAction()
        # Focus now, not later (Widget.focus defers): keys typed or pasted right after
        # the slash must reach the input, not the screen's bindings.
        self.set_focus(command)
        command.value = "/"
        command.cursor_position = 1

    def prefill_command_line(self, line: str) -> None:
        """Put `line` on the command line for the user to finish (e.g. `/inject `)."""
        command = self.query_one(CommandInput)
        self.set_focus(command)
        command.value = line
        command.cursor_position = len(line)

    # ------------------------------------------------------------------ what commands act through

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
        self._refresh_header()
        self.refresh_bindings()

    def quit_app(self) -> None:
        self.call_later(self.app.action_quit)

    # ------------------------------------------------------------------ key actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        running = self.state.status == "running"
        live = self.runtime.can_steer and running
        if action in ("summarize", "stop"):
            return live
        if action == "toggle_pause":
            return live or (self.runtime.mode == "replay" and running)
        if action == "back":
            return self.can_go_back or self.zoomed is not None
        if action == "next_agent":
            return self.compact and self.zoomed is None
        if action == "edit_turn":
            return bool(self.editors) and not any(e.text_area is self.focused for e in self.editors.values())
        return True

    def action_summarize(self) -> None:
        """The focused agent's summary; with none focused, every agent's — after asking (N paid calls)."""
        from .confirm import ConfirmScreen

        pane = self._focused_pane()
        if pane is not None and not pane.judge:
            self.run_command_line(f"/summarize {pane.info.id}")
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.run_command_line("/summarize all")

        n = len(self.state.agents)
        self.app.push_screen(ConfirmScreen(f"Summarize all {n} agents?", f"That is {n} summarization calls. "
                                           "To summarize one agent, focus its pane (tab, or its number) "
                                           "and press s, or type /summarize NAME [focus]."), confirmed)

    def action_context(self) -> None:
        self.run_command_line("/context")

    def action_inspect(self) -> None:
        agent_id = self.focused_agent_id() or (self.state.agents[0].id if self.state.agents else None)
        if agent_id is not None:
            self.run_command_line(f"/context {agent_id}")

    def action_toggle_pause(self) -> None:
        self.run_command_line("/resume" if self.runtime.paused else "/pause")

    def action_stop(self) -> None:
        from .confirm import ConfirmScreen

        if not (self.runtime.can_steer and self.state.status == "running"):
            self.run_command_line("/stop")  # says why it cannot
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.run_command_line("/stop")

        self.app.push_screen(ConfirmScreen("Stop the debate?", "It is saved and can be continued with "
                                           f"`moot resume {self.state.id}`."), confirmed)

    def action_cycle_theme(self) -> None:
        current = self.app.theme
        nxt = BUNDLED[(BUNDLED.index(current) + 1) % len(BUNDLED)] if current in BUNDLED else BUNDLED[0]
        self.run_command_line(f"/theme {nxt}")

    def action_zoom(self) -> None:
        if self.zoomed is not None:
            self.zoom(None)
        else:
            self.zoom(self._focused_pane() or self.judge_pane)

    def action_show_agent(self, number: int) -> None:
        """Key 1–9: that agent's pane (0: the judge's); in the focus layout it replaces the shown one."""
        ids = [a.id for a in self.state.agents]
        agent_id = (self.state.judge.id if self.state.judge else None) if number == 0 else (
            ids[number - 1] if number <= len(ids) else None)
        if agent_id is None or agent_id not in self.panes:
            return
        self._pick(agent_id)

    def action_next_agent(self, step: int = 1) -> None:
        ids = list(self.panes)
        if ids:
            at = ids.index(self.current) if self.current in ids else 0
            self._pick(ids[(at + step) % len(ids)])

    def action_follow(self) -> None:
        for pane in ([self._focused_pane()] if self._focused_pane() else self.panes.values()):
            if pane is not None:
                pane.follow()

    def action_debates(self) -> None:
        self.run_command_line("/debates")

    def action_help(self) -> None:
        self.run_command_line("/help")

    def action_back(self) -> None:
        if self.zoomed is not None:
            self.zoom(None)
        elif self.can_go_back:
            self.app.pop_screen()

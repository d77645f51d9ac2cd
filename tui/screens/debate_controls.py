"""The debate screen's controls: the command line, the feedback line under it, and the keys that
steer the run (pause, stop, summarize) or open a view, each a command line of its own.

A part of the screen (`debate_events.DebatePart`): it says which keys apply now
(`allows`, the screen's `check_action`) and redraws the footer's keys when control changes
(a pause, the debate's end). The commands themselves live in `tui/commands/`, one handler
each; they act on the screen through `commands.CommandContext`.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.actions import SkipAction
from textual.screen import Screen
from textual.widgets import Label

from ...core import events as ev
from ..commands.base import CommandContext, CommandError
from ..commands.registry import parse, run_command
from ..runtime.base import ReadOnlyError
from ..theming import BUNDLED
from ..widgets.command_input import CommandInput
from .debate_events import Debate, DebatePart, Subscription, handle, handle_end
from .debate_panes import AgentPanes
from .debate_seats import PeopleSeats


class RunControls(DebatePart):
    """The command line and the keys that run commands."""

    def __init__(self, screen: Screen[None], debate: Debate, panes: AgentPanes, seats: PeopleSeats, *,
                 context: CommandContext, can_go_back: bool) -> None:
        super().__init__(screen, debate)
        self.context = context
        """What the commands act through (the screen itself)."""
        self.panes = panes
        self.seats = seats
        self.can_go_back = can_go_back
        """The debate was opened from the saved debates: escape goes back to them."""

    def subscriptions(self) -> Iterable[Subscription]:
        return [handle(ev.ControlChanged, self._control_changed),
                *handle_end(self._control_changed)]

    def _control_changed(self, event: ev.ControlChanged | ev.TerminalEvent) -> None:
        self.screen.refresh_bindings()

    # ------------------------------------------------------------------ the command line

    @property
    def command(self) -> CommandInput:
        return self.screen.query_one(CommandInput)

    def feedback(self, text: str, error: bool = False) -> None:
        """The line under the command line: what a command did, or why it could not ("" hides it)."""
        label = self.screen.query_one("#command-feedback", Label)
        label.update(Text(text))
        label.display = bool(text)
        label.set_class(error, "-error")
        label.set_class(not error, "-info")

    def submitted(self, line: str) -> None:
        command = self.command
        if self.screen.focused is command and not command.value:
            # Leave the command line (as vim's ':' does), so the single-key bindings work
            # again at once; '/' comes back to it. (It already holds text when keys came in
            # a burst: the next command is being typed, keep it.)
            self.screen.set_focus(None)
        if line:
            self.run(line)

    def run(self, line: str) -> None:
        """Parse and run one command; every problem ends as an inline message."""
        try:
            run_command(self.context, parse(line))
        except (CommandError, ReadOnlyError) as exc:
            self.feedback(str(exc), error=True)

    def open_command_line(self) -> None:
        """`/` (the app's priority binding): open the command line with a slash on it.

        On the command line a slash is text: the key goes on to the input, in order with the
        keys before it, which a burst (tmux send-keys, a paste typed as keys) may still have
        queued there. Deciding that from the input's own focus state (`has_focus`, set only
        once the input has read its Focus event) lost those slashes."""
        command = self.command
        if self.screen.focused is command:
            raise SkipAction()
        # Focus now, not later (Widget.focus defers): keys typed or pasted right after
        # the slash must reach the input, not the screen's bindings.
        self.screen.set_focus(command)
        command.value = "/"
        command.cursor_position = 1

    def prefill(self, line: str) -> None:
        """Put `line` on the command line for the user to finish (e.g. `/inject `)."""
        command = self.command
        self.screen.set_focus(command)
        command.value = line
        command.cursor_position = len(line)

    # ------------------------------------------------------------------ keys

    def allows(self, action: str) -> bool:
        """Whether a key's action applies now (hidden from the footer when it does not)."""
        state, runtime = self.debate.state, self.debate.runtime
        running = state.status == "running"
        live = runtime.can_steer and running
        if action in ("summarize", "stop"):
            return live
        if action == "toggle_pause":
            return live or (runtime.mode == "replay" and running)
        if action == "back":
            return self.can_go_back or self.panes.zoomed is not None
        if action == "next_agent":
            return self.panes.compact and self.panes.zoomed is None
        if action == "edit_turn":
            return bool(self.seats.editors) and not self.seats.typing()
        return True

    def summarize(self) -> None:
        """The focused agent's summary; with none focused, every agent's — after asking (N paid calls)."""
        from .confirm import ConfirmScreen

        pane = self.panes.focused_pane()
        if pane is not None and not pane.judge:
            self.run(f"/summarize {pane.info.id}")
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.run("/summarize all")

        n = len(self.debate.state.agents)
        self.screen.app.push_screen(ConfirmScreen(f"Summarize all {n} agents?", f"That is {n} summarization calls. "
                                                  "To summarize one agent, focus its pane (tab, or its number) "
                                                  "and press s, or type /summarize NAME [focus]."), confirmed)

    def inspect(self) -> None:
        agents = self.debate.state.agents
        agent_id = self.panes.focused_agent_id() or (agents[0].id if agents else None)
        if agent_id is not None:
            self.run(f"/context {agent_id}")

    def toggle_pause(self) -> None:
        self.run("/resume" if self.debate.runtime.paused else "/pause")

    def stop(self) -> None:
        from .confirm import ConfirmScreen

        state = self.debate.state
        if not (self.debate.runtime.can_steer and state.status == "running"):
            self.run("/stop")  # says why it cannot
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.run("/stop")

        self.screen.app.push_screen(ConfirmScreen("Stop the debate?", "It is saved and can be continued with "
                                                  f"`moot resume {state.id}`."), confirmed)

    def cycle_theme(self) -> None:
        current = self.screen.app.theme
        nxt = BUNDLED[(BUNDLED.index(current) + 1) % len(BUNDLED)] if current in BUNDLED else BUNDLED[0]
        self.run(f"/theme {nxt}")

    def back(self) -> None:
        if self.panes.zoomed is not None:
            self.panes.zoom(None)
        elif self.can_go_back:
            self.screen.app.pop_screen()

"""The help screen: every slash command and key."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from ..commands.registry import COMMANDS

KEYS = (
    ("/", "type a command (tab completes, ↑/↓ history, esc leaves)"),
    ("tab · [ ]", "move between panes · previous/next agent"),
    ("1–9 · 0", "focus that agent's pane (in small terminals: show it) · the judge's"),
    ("s", "summarize the focused pane's agent (asks first when no pane is focused)"),
    ("c · i", "context overview of every agent · exact messages of the focused agent's latest call"),
    ("p · x", "pause or resume · stop (asks first)"),
    ("z · end", "zoom the focused pane (esc restores) · follow the newest text again"),
    ("t", "next theme (dark, light, high-contrast)"),
    ("ctrl+p", "command palette"),
    ("q · ctrl+q", "quit (asks first while a debate runs)"),
    ("", ""),
    ("Your turn (--human)", ""),
    ("ctrl+s · ctrl+enter", "send your answer (ctrl+enter where the terminal reports it; not in plain tmux)"),
    ("f2 · e", "everything you are shown this turn · back to the editor"),
    ("", ""),
    ("In the messages view", ""),
    ("← → · [ ] · , .", "previous/next call · round · agent"),
    ("/ · n N", "find in the messages · next/previous match (esc ends the search)"),
)


def help_table() -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    table.add_column(style="dim", no_wrap=True)
    table.add_row(Text("Commands", style="bold underline"), "", "")
    for spec in COMMANDS.values():
        # Text, not str: "[agent|all]" in a plain string would be read as Rich markup and vanish.
        table.add_row(Text(spec.usage), Text(spec.help), f"key {spec.key}" if spec.key else "")
    table.add_row("", "", "")
    table.add_row(Text("Keys", style="bold underline"), "", "")
    for key, text in KEYS:
        table.add_row(Text(key, style="bold underline") if key and not text else Text(key), Text(text), "")
    table.add_row("", "", "")
    table.add_row("", Text("Agents are named by id, name or role: /summarize architect", style="dim"), "")
    return table


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "help.tcss"
    BINDINGS = [Binding("escape,q,enter,question_mark", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Label("moot — commands and keys", id="help-title")
            yield Static(help_table(), id="help-body")
            yield Label("esc to close", id="help-hint")

    def action_close(self) -> None:
        self.dismiss(None)

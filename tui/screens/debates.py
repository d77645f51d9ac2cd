"""The list of saved debates: pick one to watch (enter) or replay (r)."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label

from ...core.safety.sanitize import one_line_safe
from ...core.storage.folder import DebateFolder
from ...core.storage.state_dir import StateDir, summarize_folder


class DebatesScreen(Screen):
    CSS_PATH = "debates.tcss"
    BINDINGS = [
        Binding("enter", "open", "Watch"),
        Binding("r", "replay", "Replay"),
        Binding("f5", "reload", "Reload"),
        Binding("q,escape", "app.quit", "Quit"),
    ]

    class Open(Message):
        """The user picked a debate to watch (or replay); the app opens it."""

        def __init__(self, folder: DebateFolder, replay: bool) -> None:
            super().__init__()
            self.folder = folder
            self.replay = replay

    def __init__(self, state_dir: StateDir) -> None:
        super().__init__()
        self.state_dir = state_dir
        self.folders: dict[str, DebateFolder] = {}

    def compose(self) -> ComposeResult:
        yield Label(Text(f"moot · saved debates in {self.state_dir.root}"), id="debates-title")
        yield DataTable(id="debates", cursor_type="row", zebra_stripes=True)
        yield Label("", id="debates-empty")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("id", "status", "rounds", "created", "problem")
        self.action_reload()
        table.focus()

    def action_reload(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        self.state_dir.clean_pending()
        self.folders = {f.id: f for f in self.state_dir.debates()}
        # Newest first: ids start with a timestamp.
        for folder_id in sorted(self.folders, reverse=True):
            row = summarize_folder(self.folders[folder_id])
            # Text cells: a DataTable reads a plain string as markup, and these come from files.
            cells = [row["id"], row["status"], row["rounds"], row.get("created", ""), row["problem"]]
            table.add_row(*(Text(one_line_safe(str(c))) for c in cells), key=folder_id)
        empty = self.query_one("#debates-empty", Label)
        empty.update(Text("" if self.folders else f"no debates in {self.state_dir.root} — start one with `moot run`"))
        empty.display = not self.folders

    def _selected(self) -> DebateFolder | None:
        table = self.query_one(DataTable)
        if not self.folders or table.cursor_row < 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.folders.get(str(key))

    @on(DataTable.RowSelected)
    def _row_selected(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        folder = self._selected()
        if folder is not None:
            self.post_message(self.Open(folder, replay=False))

    def action_replay(self) -> None:
        folder = self._selected()
        if folder is not None:
            self.post_message(self.Open(folder, replay=True))

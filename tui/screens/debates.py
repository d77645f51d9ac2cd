"""The sessions screen: every saved debate with its date, status, protocol, progress, tokens, cost
and problem; sorted by any column (`s`, or a click on its header), filtered as you type (`/`),
and opened to watch (enter) or replay (`r`).

Rows come from `moot.core.storage.sessions` in a worker thread (cached per debate, so hundreds
list at once and only changed debates are read again); sorting and filtering work on those rows
in memory.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual import on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Resize
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Label

from ...core.storage.folder import DebateFolder
from ...core.storage.sessions import SessionList, SessionRow
from ...core.storage.state_dir import StateDir
from .debates_rows import BENCH, BY_KEY, COLUMNS, PROBLEM, arrange, cells, detail

WIDE = 120
"""From this many columns: full dates, progress with its unit, DEMO beside the protocol."""
ORDER = [c.key for c in COLUMNS]
TEXT_FIRST = (PROBLEM, "status", "protocol")
"""Columns that sort A to Z when first chosen (the others: newest, largest first)."""


class ShowSessions(Message):
    """A debate screen asks for the saved debates (`d`, `/debates`); the app shows them."""


class SessionsTable(DataTable[Text]):
    """The table of debates: its `enter` says what it does in the footer (the DataTable's own
    binding, "select", hides the screen's)."""

    BINDINGS = [Binding("enter", "select_cursor", "Watch")]


class DebatesScreen(Screen[None]):
    CSS_PATH = "debates.tcss"
    BINDINGS = [
        Binding("enter", "open", "Watch", show=False),
        Binding("r", "replay", "Replay"),
        Binding("s", "sort", "Sort"),
        Binding("S", "reverse", "Reverse", key_display="S"),
        # A priority binding runs as the app reads the key, so the keys right after the slash
        # (typed fast, pasted, tmux send-keys) already go to the filter.
        Binding("slash", "filter", "Filter", key_display="/", priority=True),
        Binding("ctrl+f", "filter", "Filter", show=False),
        Binding("f5", "reload", "Reload"),
        Binding("escape", "back", "Back", show=False),
        Binding("q", "app.quit", "Quit"),
    ]

    class Open(Message):
        """The user picked a debate to watch (or replay); the app opens it."""

        def __init__(self, folder: DebateFolder, replay: bool) -> None:
            super().__init__()
            self.folder = folder
            self.replay = replay

    def __init__(self, state_dir: StateDir, *, can_go_back: bool = False) -> None:
        super().__init__()
        self.state_dir = state_dir
        self.can_go_back = can_go_back
        self.folders: dict[str, DebateFolder] = {}
        self.rows: list[SessionRow] = []
        self.shown: list[SessionRow] = []
        self.sort_key = "date"
        self.descending = True
        self.filter_text = ""
        self.opened: set[str] = set()
        """The benches whose debates are shown under their row."""
        self.loaded = False
        """The rows are in (tests wait for it)."""
        self._last_progress = 0.0

    def compose(self) -> ComposeResult:
        yield Label(Text(f"moot · saved debates in {self.state_dir.root}"), id="debates-title")
        yield Input(placeholder="/ filter: words of the problem, id, protocol, status, DEMO", id="debates-filter")
        yield SessionsTable(id="debates", cursor_type="row", zebra_stripes=True)
        yield Label("", id="debates-empty")
        yield Label("", id="debates-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#debates-filter", Input).cursor_blink = getattr(self.app, "cursor_blink", True)
        self.query_one(DataTable).focus()
        self.action_reload()

    # ------------------------------------------------------------------ loading

    def action_reload(self) -> None:
        self.loaded = False
        self._title("loading…")
        self._load()

    @work(thread=True, exclusive=True, group="sessions", exit_on_error=False)
    def _load(self) -> None:
        self.state_dir.clean_pending()
        listing = SessionList(self.state_dir).rows(progress=self._progress)
        self.app.call_from_thread(self._show_loaded, listing)

    def _progress(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self._last_progress > 0.2:  # a line a fifth of a second, not one per debate
            self._last_progress = now
            self.app.call_from_thread(self._title, f"reading {done} of {total}…")

    def _show_loaded(self, listing: list[tuple[DebateFolder, SessionRow]]) -> None:
        self.folders = {folder.id: folder for folder, _ in listing}
        self.rows = [row for _, row in listing]
        self.loaded = True
        self.refill()

    # ------------------------------------------------------------------ the table

    def refill(self) -> None:
        """Rebuild the table from the rows: filtered, sorted, cut to the screen's width."""
        table = self.query_one(DataTable)
        keep = self.selected_id()
        self.shown = arrange(self.rows, self.filter_text, self.sort_key, self.descending, frozenset(self.opened))
        wide = self.size.width >= WIDE
        texts = [cells(r, wide, 10_000) for r in self.shown]
        headers = [self._header(c.key, wide) for c in COLUMNS]
        widths = [max([len(h), *(len(t[i]) for t in texts)]) for i, h in enumerate(headers)]
        room = self.size.width - sum(widths[:-1]) - 2 * len(COLUMNS) - 2
        table.clear(columns=True)
        for column, header in zip(COLUMNS, headers):
            table.add_column(Text(header, justify="right" if column.numeric else "left"), key=column.key)
        for row in self.shown:
            # Text cells: a DataTable reads a plain string as markup, and these come from files.
            table.add_row(*(Text(t, justify="right" if c.numeric else "left")
                            for c, t in zip(COLUMNS, cells(row, wide, room))), key=row.id)
        if keep is not None and keep in {r.id for r in self.shown}:
            table.move_cursor(row=table.get_row_index(keep), animate=False)
        self._title()
        empty = self.query_one("#debates-empty", Label)
        if not self.rows:
            empty.update(Text(f"no debates in {self.state_dir.root} — start one with `moot run`"))
        elif not self.shown:
            empty.update(Text(f"no debate matches {self.filter_text!r} — esc clears the filter"))
        empty.display = not self.shown
        self._detail()

    @on(DataTable.RowHighlighted)
    def _detail(self) -> None:
        key = self.selected_id()
        row = next((r for r in self.shown if r.id == key), None)
        self.query_one("#debates-detail", Label).update(Text(detail(row) if row is not None else ""))

    def _header(self, key: str, wide: bool = True) -> str:
        label = BY_KEY[key].label if wide else BY_KEY[key].short or BY_KEY[key].label
        return f"{label} {'▼' if self.descending else '▲'}" if key == self.sort_key else label

    def _title(self, note: str = "") -> None:
        count = (f"{len(self.shown)} of {len(self.rows)} debates" if self.filter_text
                 else f"{len(self.rows)} debate{'s' if len(self.rows) != 1 else ''}")
        order = f"sorted by {BY_KEY[self.sort_key].label.lower()} {'↓' if self.descending else '↑'}"
        what = note or f"{count} · {order}"
        self.query_one("#debates-title", Label).update(
            Text(f"moot · saved debates in {self.state_dir.root} · {what}"))

    def on_resize(self, event: Resize) -> None:
        if self.loaded:
            self.refill()

    def selected_id(self) -> str | None:
        table = self.query_one(DataTable)
        if not self.shown or table.row_count == 0 or table.cursor_row < 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return str(key) if key is not None else None

    # ------------------------------------------------------------------ sorting and filtering

    def sort_by(self, key: str, descending: bool | None = None) -> None:
        """Sort by a column: the same column again reverses the order; a new one starts newest,
        largest first (text columns: A to Z)."""
        if descending is None:
            descending = not self.descending if key == self.sort_key else key not in TEXT_FIRST
        self.sort_key, self.descending = key, descending
        self.refill()

    def action_sort(self) -> None:
        """`s`: the next column (date → status → … → problem → date)."""
        self.sort_by(ORDER[(ORDER.index(self.sort_key) + 1) % len(ORDER)])

    def action_reverse(self) -> None:
        self.sort_by(self.sort_key, not self.descending)

    @on(DataTable.HeaderSelected)
    def _header_clicked(self, event: DataTable.HeaderSelected) -> None:
        if event.column_key.value is not None:
            self.sort_by(str(event.column_key.value))

    def action_filter(self) -> None:
        """`/` or ctrl+f: type in the filter; a `/` typed in
        the filter is text. Focus now, not later (Widget.focus defers): the keys right after the
        slash (typed fast, pasted) must reach the filter, not the table's keys (`q` would quit)."""
        field = self.query_one("#debates-filter", Input)
        if self.focused is field:
            raise SkipAction()
        self.set_focus(field)

    @on(Input.Changed, "#debates-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        if self.loaded:
            self.refill()

    @on(Input.Submitted, "#debates-filter")
    def _filter_done(self) -> None:
        self.set_focus(self.query_one(DataTable))

    def action_back(self) -> None:
        """esc: in the filter, clear it and go back to the table (where `s` sorts again, rather
        than typing into the filter); then clear a kept filter; then go back (or quit at the top)."""
        field = self.query_one("#debates-filter", Input)
        if self.focused is field:
            field.value = ""
            self.set_focus(self.query_one(DataTable))
        elif field.value:
            field.value = ""
        elif self.can_go_back:
            self.app.pop_screen()
        else:
            self.call_later(self.app.action_quit)

    # ------------------------------------------------------------------ opening

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("open", "replay", "sort", "reverse", "filter", "reload") and isinstance(self.focused, Input):
            return False  # the filter box is being typed in: keys are text
        return True

    @on(DataTable.RowSelected)
    def _row_selected(self) -> None:
        self.action_open()

    def _selected(self) -> DebateFolder | None:
        key = self.selected_id()
        return self.folders.get(key) if key is not None else None

    def action_open(self) -> None:
        folder = self._selected()
        if folder is not None:
            self.post_message(self.Open(folder, replay=False))
            return
        key = self.selected_id()
        if key is not None and any(r.id == key and r.protocol == BENCH for r in self.shown):
            self.opened ^= {key}  # a bench's row: its debates shown under it, or hidden again
            self.refill()

    def action_replay(self) -> None:
        folder = self._selected()
        if folder is not None:
            self.post_message(self.Open(folder, replay=True))

"""`/compare A B [round]`: two agents' contributions side by side, the words only one of them wrote
marked, the claims only one of them makes listed under them; in vote and council debates the
votes or ranks as a small table. `[` `]` step through the rounds (turns) where both spoke.

What is compared comes from `moot.core.compare` (pure); this screen only draws it.
"""

from __future__ import annotations

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Label, Static

from ...core.compare import Comparison, Pairing, Side, compare
from ...core.context.index import DebateIndex
from ...core.models.state import DebateState
from ...core.safety.sanitize import one_line_safe, terminal_safe


class DiffColumn(Static):
    """One side of a pairing: its text, with the words only this side wrote marked."""

    DEFAULT_CSS = """
    DiffColumn { width: 1fr; height: auto; padding: 0 1; }
    DiffColumn > .diff--only-a { color: $text-error; background: $error-muted; text-style: bold; }
    DiffColumn > .diff--only-b { color: $text-success; background: $success-muted; text-style: bold; }
    DiffColumn > .diff--muted { color: $text-muted; text-style: italic; }
    """
    COMPONENT_CLASSES = {"diff--only-a", "diff--only-b", "diff--muted"}

    def __init__(self, side: Side, left: bool, classes: str = "") -> None:
        super().__init__(classes=classes)
        self.side = side
        self.left = left

    def on_mount(self) -> None:
        self.update(self.text())

    def text(self) -> Text:
        mark = self.get_component_rich_style("diff--only-a" if self.left else "diff--only-b")
        if self.side.contribution is None:
            return Text("(nothing of theirs here)", self.get_component_rich_style("diff--muted"))
        out = Text()
        for piece in self.side.pieces:
            out.append(terminal_safe(piece.text), mark if piece.only else Style())
        return out


class CompareScreen(Screen[None]):
    """Agents A (left) and B (right) in one round (turn) of a debate."""

    DEFAULT_CSS = """
    CompareScreen { background: $background; }
    CompareScreen #cmp-title { height: 1; width: 1fr; background: $panel; padding: 0 1; text-style: bold;
                               text-wrap: nowrap; text-overflow: ellipsis; }
    CompareScreen #cmp-body { height: 1fr; scrollbar-size-vertical: 1; }
    CompareScreen .cmp-heading { height: 1; width: 1fr; margin: 1 0 0 0; padding: 0 1; color: $accent;
                                 text-style: bold; text-wrap: nowrap; text-overflow: ellipsis; }
    CompareScreen .cmp-names { height: 1; }
    CompareScreen .cmp-name { width: 1fr; padding: 0 1; text-style: bold underline; text-wrap: nowrap;
                              text-overflow: ellipsis; }
    CompareScreen .cmp-row { height: auto; }
    CompareScreen .cmp-claims { height: auto; }
    CompareScreen .cmp-claims > Static { width: 1fr; height: auto; padding: 0 1; color: $text-muted; }
    CompareScreen #cmp-table { height: auto; padding: 0 1; }
    CompareScreen #cmp-none { padding: 1 2; color: $text-muted; }
    """

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        Binding("left_square_bracket", "step(-1)", "Earlier", key_display="["),
        Binding("right_square_bracket", "step(1)", "Later", key_display="]"),
    ]

    def __init__(self, state: DebateState, index: DebateIndex, a: str, b: str, step: int | None = None) -> None:
        super().__init__()
        self.state = state
        self.index = index
        self.comparison: Comparison = compare(state, a, b, step)

    def compose(self) -> ComposeResult:
        yield Label(Text(self._title()), id="cmp-title")
        with VerticalScroll(id="cmp-body"):
            yield from self._body()
        yield Footer()

    def _agent_name(self, agent_id: str) -> str:
        return one_line_safe(self.index.name(agent_id), 40)

    def _title(self) -> str:
        c = self.comparison
        word = "turn" if self.state.protocol == "conversation" else "round"
        where = f"{word} {c.step}" if c.step is not None else f"no {word} where both spoke"
        return f"Compare ◀ {self._agent_name(c.a)}  ·  {self._agent_name(c.b)} ▶  ·  {where}"

    def _body(self) -> ComposeResult:
        c = self.comparison
        if not c.pairings:
            yield Static(Text(f"{self._agent_name(c.a)} and {self._agent_name(c.b)} have no contributions to set "
                              "side by side yet."), id="cmp-none")
        for pairing in c.pairings:
            yield from self._pairing(pairing)
        if c.table:
            yield Label(Text(one_line_safe(c.table_title, 120)), classes="cmp-heading")
            # Cells as Text: a str cell is Rich markup, and an answer is a model's text.
            table = Table(box=None, pad_edge=False, header_style="bold")
            for heading in c.table[0]:
                table.add_column(Text(one_line_safe(heading, 60)))
            for row in c.table[1:]:
                table.add_row(*(Text(one_line_safe(cell, 60)) for cell in row))
            yield Static(table, id="cmp-table")

    def _pairing(self, p: Pairing) -> ComposeResult:
        c = self.comparison
        how = f" · {round(p.shared * 100)}% of the words in common" if p.diffed else ""
        # Built whole (no compose context): `action_step` mounts the same widgets again.
        yield Label(Text(one_line_safe(p.title + how, 200)), classes="cmp-heading")
        yield Horizontal(Label(Text(f"◀ {self._agent_name(c.a)}"), classes="cmp-name"),
                         Label(Text(f"{self._agent_name(c.b)} ▶"), classes="cmp-name"), classes="cmp-names")
        yield Horizontal(DiffColumn(p.a, left=True), DiffColumn(p.b, left=False), classes="cmp-row")
        if p.diffed and (p.a.claims or p.b.claims):
            yield Label(Text("claims only one of them makes"), classes="cmp-heading")
            yield Horizontal(Static(self._claims(p.a, c.a)), Static(self._claims(p.b, c.b)), classes="cmp-claims")

    def _claims(self, side: Side, agent_id: str) -> Text:
        if not side.claims:
            return Text(f"(every claim of {self._agent_name(agent_id)} is made on the other side too)")
        return Text("\n".join(f"• {one_line_safe(claim, 300)}" for claim in side.claims))

    async def action_step(self, delta: int) -> None:
        c = self.comparison
        if not c.steps or c.step is None:
            return
        at = c.steps.index(c.step) if c.step in c.steps else len(c.steps) - 1
        nxt = c.steps[max(0, min(len(c.steps) - 1, at + delta))]
        if nxt == c.step:
            return
        self.comparison = compare(self.state, c.a, c.b, nxt)
        self.query_one("#cmp-title", Label).update(Text(self._title()))
        body = self.query_one("#cmp-body", VerticalScroll)
        await body.remove_children()
        await body.mount_all(list(self._body()))
        body.scroll_home(animate=False)

"""`/compare fork [ID]`: a debate and its fork side by side from the fork point — each
contribution of the parent (left) and of the fork (right) with the words only one side wrote
marked, the final answers, and the tokens and cost each side spent from there.

What is compared comes from `moot.core.fork_compare` (pure, shared with `moot compare`); this
screen only draws it.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Label, Static

from ...core.compare import Piece, Side
from ...core.fork_compare import ForkComparison, Pair, spend_line
from ...core.safety.sanitize import one_line_safe, terminal_safe
from .compare import DiffColumn


class ForkColumn(DiffColumn):
    """One side of a pair: the contribution's words (those only this side wrote marked), or a
    muted line when this side has none."""

    def __init__(self, pieces: list[Piece], present: bool, left: bool) -> None:
        super().__init__(Side(None, pieces), left)
        self.present = present

    def text(self) -> Text:
        if not self.present:
            return Text("(none on this side)", self.get_component_rich_style("diff--muted"))
        mark = self.get_component_rich_style("diff--only-a" if self.left else "diff--only-b")
        out = Text()
        for piece in self.side.pieces:
            out.append(terminal_safe(piece.text), mark if piece.only else "")
        return out


class ForkCompareScreen(Screen[None]):
    """The parent (left) and its fork (right) from the fork point on."""

    DEFAULT_CSS = """
    ForkCompareScreen { background: $background; }
    ForkCompareScreen #fcmp-title { height: 1; width: 1fr; background: $panel; padding: 0 1; text-style: bold;
                                    text-wrap: nowrap; text-overflow: ellipsis; }
    ForkCompareScreen #fcmp-spend { height: auto; padding: 0 1; color: $text-muted; }
    ForkCompareScreen #fcmp-body { height: 1fr; scrollbar-size-vertical: 1; }
    ForkCompareScreen .fcmp-heading { height: 1; width: 1fr; margin: 1 0 0 0; padding: 0 1; color: $accent;
                                      text-style: bold; text-wrap: nowrap; text-overflow: ellipsis; }
    ForkCompareScreen .fcmp-row { height: auto; }
    ForkCompareScreen #fcmp-none { padding: 1 2; color: $text-muted; }
    """

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    def __init__(self, comparison: ForkComparison) -> None:
        super().__init__()
        self.comparison = comparison

    def compose(self) -> ComposeResult:
        c = self.comparison
        yield Label(Text(one_line_safe(f"◀ {c.parent_id} ({c.parent_status})  ·  ⑂ {c.fork_id} ({c.fork_status}) ▶"
                                       f"  ·  forked at {c.at.replace(':', ' ')}", 300)), id="fcmp-title")
        yield Static(Text(f"◀ parent: {spend_line(c.parent_spend)}\n▶ fork:   {spend_line(c.fork_spend)}"
                          f"\nfrom {c.unit} {c.from_step} on"), id="fcmp-spend")
        with VerticalScroll(id="fcmp-body"):
            pairs = [*c.pairs, *([c.answer] if c.answer is not None else [])]
            if not pairs:
                yield Static(Text("nothing after the fork point on either side yet"), id="fcmp-none")
            for pair in pairs:
                yield from self._pair(pair, pair is c.answer)

    def _pair(self, pair: Pair, answer: bool) -> ComposeResult:
        title = "final answer" if answer else f"{self.comparison.unit} {pair.title}"
        both = pair.parent is not None and pair.fork is not None
        how = f" · {round(pair.shared * 100)}% of the words in common" if both else ""
        yield Label(Text(one_line_safe(title + how, 200)), classes="fcmp-heading")
        yield Horizontal(ForkColumn(pair.parent_pieces, pair.parent is not None, left=True),
                         ForkColumn(pair.fork_pieces, pair.fork is not None, left=False), classes="fcmp-row")

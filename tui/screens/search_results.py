"""`/search TEXT`: the debate's texts that match, best first; enter jumps to the message in the messages view.

The hits come from the debate's own search index (`moot.core.search.debates`), the same one
`moot search` and the recall tier read. Enter opens the messages view (`ContextScreen`) on the
first call whose view holds the text — verbatim, quoted or recalled — with the query in its find
box, the match found and scrolled into the middle (n / N for the others).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Label, ListItem, ListView

from ...core.context.index import DebateIndex
from ...core.context.inspect import first_view_holding
from ...core.models.state import DebateState
from ...core.safety.sanitize import one_line_safe
from ...core.search.debates import CLOSE, OPEN, DebateHit


def excerpt_text(excerpt: str) -> Text:
    """An excerpt on one line, terminal-safe, its matched words highlighted."""
    out = Text()
    for i, part in enumerate(one_line_safe(excerpt).split(OPEN)):
        word, _, rest = part.partition(CLOSE) if i else ("", "", part)
        if word:
            out.append(word, style="bold reverse")
        out.append(rest)
    return out


def centred(line: Text, width: int) -> Text:
    """The line cut to `width` cells, "…" where it was cut; when its first highlighted match would
    not show whole from the start, cut around it, the match in the middle: a narrow terminal
    shows the match, not only the words before it."""
    if line.cell_len <= width or width < 3:
        return line
    spans = [s for s in line.spans if s.style]
    first = min(spans, key=lambda s: s.start) if spans else None
    start = 0
    if first is not None and first.end > width - 1:  # cut (or behind the "…"): move it into view
        # the match in the middle of what is left once it is shown whole (or its start, if wider)
        room = width - min(width, first.end - first.start)
        start = max(0, min(first.start - room // 2, len(line.plain) - width))
    piece = line[start:start + width]
    while piece.cell_len > width:  # wide characters take two cells
        piece = piece[:-1]
    if start > 0:
        piece = Text("…").append_text(piece[1:])
    if start + len(piece) < len(line.plain):
        piece = piece[:-1].append("…")
    return piece


class HitLabel(Label):
    """One hit: its turn or round, speaker and score, then its excerpt on one line, centred on
    the first match at the width the list has."""

    DEFAULT_CSS = "HitLabel { width: 1fr; height: 2; }"

    def __init__(self, head: Text, excerpt: str) -> None:
        super().__init__()
        self.head = head
        self.excerpt = excerpt_text(excerpt)

    def render(self) -> Text:
        return Text("\n").join([self.head, centred(self.excerpt, max(1, self.content_region.width))])


class SearchResultsScreen(Screen[None]):
    CSS_PATH = "context.tcss"
    BINDINGS = [
        Binding("escape,q", "back", "Back"),
        Binding("enter", "open", "Show in the messages view", show=True),
    ]

    def __init__(self, state: DebateState, index: DebateIndex, query: str, hits: list[DebateHit]) -> None:
        super().__init__()
        self.state = state
        self.index = index
        self.query_text = query
        self.hits = hits

    def compose(self) -> ComposeResult:
        n = len(self.hits)
        yield Label(Text(one_line_safe(f"Search · {n} hit{'s' if n != 1 else ''} for {self.query_text!r} · "
                                       f"debate {self.state.id}", 200)), id="ctx-title")
        items = []
        for dh in self.hits:
            h, d = dh.hit, dh.debate
            kind = "" if h.kind == "message" else f" · {h.kind}"
            head = Text(one_line_safe(f"{d.step_word} {h.step} · {d.speaker(h.agent_id)}{kind}"), style="bold")
            head.append(f"  score {h.score:.1f}", style="dim")
            items.append(ListItem(HitLabel(head, h.excerpt)))
        yield ListView(*items, id="ctx-agents")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(ListView).focus()

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        self.action_open()

    def action_open(self) -> None:
        from .context import ContextScreen

        view = self.query_one(ListView)
        if view.index is None or not self.hits:
            return
        hit = self.hits[view.index].hit
        record = first_view_holding(self.state, self.index, hit.doc_id)
        if record is None:
            self.notify("no recorded call shows this text", timeout=3)
            return
        self.app.push_screen(ContextScreen(self.state, self.index, record.agent_id, call_id=record.call_id,
                                           find=self.query_text))

    def action_back(self) -> None:
        self.app.pop_screen()

"""`/search TEXT`: the debate's texts that match, best first; enter jumps to the message in the messages view.

The hits come from the debate's own search index (`moot.core.search.debates`), the same one
`moot search` and the recall tier read. Enter opens the messages view (`ContextScreen`) on the
first call whose view holds the text — verbatim, quoted or recalled — with the match found and
scrolled into the middle (n / N for the others).
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
from ...core.search.debates import CLOSE, OPEN, DebateHit, strip_marks

PHRASE_CHARS = 48
"""The text the messages view finds: this much of the excerpt's line around the first match."""


def excerpt_text(excerpt: str) -> Text:
    """An excerpt on one line, terminal-safe, its matched words highlighted."""
    out = Text()
    for i, part in enumerate(one_line_safe(excerpt).split(OPEN)):
        word, _, rest = part.partition(CLOSE) if i else ("", "", part)
        if word:
            out.append(word, style="bold reverse")
        out.append(rest)
    return out


def find_phrase(excerpt: str) -> str:
    """A piece of the hit's own text around its first match, on one line: what the messages view looks
    for (an excerpt's ends are cut with "…", which the text does not hold)."""
    at = max(0, excerpt.find(OPEN))
    line_start = excerpt.rfind("\n", 0, at) + 1
    line_end = excerpt.find("\n", at)
    line = excerpt[line_start: line_end if line_end != -1 else len(excerpt)]
    at -= line_start
    piece = strip_marks(line[max(0, at - PHRASE_CHARS // 3): at + PHRASE_CHARS]).strip("… ")
    return piece if piece.strip() else strip_marks(excerpt).strip("… ").split("\n")[0]


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
            items.append(ListItem(Label(Text("\n").join([head, excerpt_text(h.excerpt)]))))
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
                                           find=find_phrase(hit.excerpt)))

    def action_back(self) -> None:
        self.app.pop_screen()

"""The pieces every part of the HTML report is built from: escaped text, markdown rendered
without raw HTML, tables, collapsible blocks and the page's inline style sheet.

Every string that came from a model, a server, a file, a config or a person passes through
`Html.text` (or `Html.markdown`) before it reaches the page: control characters, escape
sequences and the invisible characters that reorder text are removed (`terminal_safe`), keys
are masked (`redact`), then it is escaped (`html.escape`) — or, for markdown, rendered by
markdown-it with raw HTML off and images off (an image would be a network fetch).
"""

from __future__ import annotations

import html
import re
import zlib
from collections.abc import Iterable, Sequence

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from ..safety.sanitize import terminal_safe
from ..safety.secrets import redact

STYLE = """
:root { color-scheme: light dark; --fg: #1d232a; --muted: #5b6570; --bg: #ffffff; --panel: #f3f5f7;
  --line: #d5dbe1; --accent: #2357a5; --warn: #9a5b00; --demo: #8a1f5c; }
@media (prefers-color-scheme: dark) { :root { --fg: #e4e8ec; --muted: #9aa5b1; --bg: #15191d; --panel: #1f252b;
  --line: #38414a; --accent: #7fb0ff; --warn: #f0b45a; --demo: #f08cc4; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 15px/1.5 system-ui, -apple-system,
  "Segoe UI", Roboto, "Noto Sans", sans-serif; }
main { max-width: 62rem; margin: 0 auto; padding: 1.5rem 1.25rem 4rem; }
h1 { font-size: 1.6rem; margin: 0 0 .4rem; overflow-wrap: anywhere; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 .6rem; padding-bottom: .2rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.1rem; margin: 1.4rem 0 .4rem; }
h4, h5, h6 { font-size: 1rem; margin: 1rem 0 .3rem; }
a { color: var(--accent); }
.meta, .muted { color: var(--muted); }
.meta { margin: 0 0 1rem; }
.banner { border: 2px solid var(--demo); color: var(--demo); padding: .5rem .8rem; border-radius: 6px;
  font-weight: 600; margin: .8rem 0; }
.note { border-left: 4px solid var(--warn); padding: .2rem .8rem; margin: .6rem 0; }
nav.toc { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: .6rem 1rem;
  margin: 1rem 0; }
nav.toc ul { margin: .2rem 0; padding-left: 1.2rem; columns: 2; }
table { border-collapse: collapse; margin: .6rem 0; font-size: .92rem; max-width: 100%; display: block;
  overflow-x: auto; }
th, td { border: 1px solid var(--line); padding: .25rem .55rem; text-align: left; vertical-align: top; }
th { background: var(--panel); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
details { border: 1px solid var(--line); border-radius: 6px; margin: .5rem 0; background: var(--bg); }
details > summary { cursor: pointer; padding: .4rem .7rem; background: var(--panel); border-radius: 6px;
  overflow-wrap: anywhere; }
details[open] > summary { border-bottom: 1px solid var(--line); border-radius: 6px 6px 0 0; }
details > .body { padding: .3rem .9rem .6rem; }
.text { overflow-wrap: anywhere; }
.text pre, pre.plain { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--panel);
  padding: .5rem .7rem; border-radius: 4px; font-size: .88rem; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: .9em; }
.tag { display: inline-block; font-size: .78rem; padding: 0 .4rem; border-radius: 4px; border: 1px solid var(--line);
  color: var(--muted); margin-left: .3rem; }
.msg { margin: .6rem 0; }
.msg .head { font-size: .85rem; color: var(--muted); }
.tool { font-size: .9rem; margin: .4rem 0; }
@media print { details { border: none; } details > summary { background: none; } nav.toc { display: none; } }
"""


class Html:
    """Escapes and renders untrusted text for the page; holds the keys to mask."""

    def __init__(self, secrets: Sequence[str] = ()) -> None:
        self.secrets = list(secrets)
        # Raw HTML in a reply is shown as text; images are off (no fetch when the page opens).
        self._md = MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")
        self._md.inline.ruler.before("emphasis", "dunder_name", _dunder_name)

    def clean(self, value: object) -> str:
        """Untrusted text without controls or invisible reordering characters, keys masked."""
        return redact(terminal_safe(str(value)), self.secrets)

    def text(self, value: object) -> str:
        """Untrusted text, escaped for element content and attribute values alike."""
        return html.escape(self.clean(value), quote=True)

    def pre(self, value: object) -> str:
        """Text shown as written (prompts, messages): whitespace kept, wrapped."""
        return f'<pre class="plain">{self.text(value)}</pre>'

    def markdown(self, value: object, top: int = 4) -> str:
        """Markdown as HTML, its shallowest heading moved down to level `top` (never above it),
        so a reply's `# Title` cannot break the report's own outline."""
        tokens = _without_empty_headings(self._md.parse(self.clean(value)))
        levels = [int(t.tag[1]) for t in tokens if t.type == "heading_open"]
        shift = max(0, top - min(levels)) if levels else 0
        if shift:
            for t in tokens:
                if t.type in ("heading_open", "heading_close"):
                    t.tag = f"h{min(6, int(t.tag[1]) + shift)}"
        _harden_links(tokens)
        rendered = self._md.renderer.render(tokens, self._md.options, {})
        return f'<div class="text">{rendered}</div>' if rendered.strip() else '<p class="muted">(empty)</p>'


DUNDER = re.compile(r"__[a-z][a-z0-9_]*?__")
"""A Python-style name between double underscores (`__init__`, `__version__`): code, not bold."""


def _dunder_name(state: StateInline, silent: bool) -> bool:
    """Keep `__init__.py` or `self.__dict__` as written: CommonMark reads the underscores as
    strong emphasis and the page showed a bold "init.py". Matched where a word starts (a name
    inside a longer word is not emphasis anyway), taken as plain text."""
    pos = state.pos
    if pos > 0 and (state.src[pos - 1].isalnum() or state.src[pos - 1] == "_"):
        return False
    match = DUNDER.match(state.src, pos)
    if match is None:
        return False
    if not silent:
        state.push("text", "", 0).content = match.group()
    state.pos = match.end()
    return True


def _without_empty_headings(tokens: list[Token]) -> list[Token]:
    """A model's `##` with no text would be an empty heading in the page's outline: dropped."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.type == "heading_open" and i + 2 < len(tokens) and not tokens[i + 1].content.strip():
            i += 3  # heading_open, its (empty) inline, heading_close
            continue
        out.append(t)
        i += 1
    return out


def _harden_links(tokens: list[Token]) -> None:
    """A link in a reply never sends the page's address along, nor keeps a handle on it."""
    for t in tokens:
        for child in t.children or []:
            if child.type == "link_open":
                child.attrSet("rel", "noopener noreferrer nofollow")


def table(h: Html, header: Sequence[str], rows: Iterable[Sequence[object]], numeric: Iterable[int] = ()) -> str:
    """An HTML table; every cell is escaped here, columns in `numeric` are right-aligned."""
    right = set(numeric)

    def cls(i: int) -> str:
        return ' class="num"' if i in right else ""

    head = "".join(f"<th{cls(i)}>{h.text(c)}</th>" for i, c in enumerate(header))
    body = "".join("<tr>" + "".join(f"<td{cls(i)}>{h.text(c)}</td>" for i, c in enumerate(row)) + "</tr>"
                   for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def collapsible(summary_html: str, body_html: str, *, open_: bool = False, anchor: str | None = None) -> str:
    """A `<details>` block: `summary_html` and `body_html` are HTML already escaped by the caller."""
    attrs = (f' id="{anchor}"' if anchor else "") + (" open" if open_ else "")
    return f'<details{attrs}><summary>{summary_html}</summary><div class="body">{body_html}</div></details>'


def anchor_id(prefix: str, name: str) -> str:
    """An element id made only of safe characters (agent ids come from configs)."""
    safe = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_") else "-" for ch in name)
    return f"{prefix}-{safe}-{zlib.crc32(name.encode()) % 10_000:04d}" if safe != name else f"{prefix}-{name}"


def usd(value: float) -> str:
    return f"${value:.4f}"


def count(n: int) -> str:
    return f"{n:,}"

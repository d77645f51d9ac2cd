"""Markdown cut into blocks that render, one by one, to the lines of the whole text.

A transcript streams a reply into its pane a few characters at a time. Rendering the
whole reply again for every chunk costs more the longer it gets, so the reply is cut
at paragraph breaks into frozen blocks, each rendered once; only the unfinished last
paragraph is rendered again. The cuts are placed where rendering the parts and joining
them gives the same lines as rendering the whole text (tests/tui/test_markdown_blocks.py
checks it against Rich), so the finished reply keeps its blocks instead of being parsed
and rendered again.

Rich separates top-level blocks with one blank line, except after a horizontal rule;
`join` puts that line back between blocks. A cut is never made inside a code fence, nor
before a line that could continue the block above it (a list item, an indented line),
nor before text that has not arrived yet, nor in a text with link reference
definitions (they change links anywhere in the text).
"""

from __future__ import annotations

import copy
import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from rich.markdown import Markdown


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    """The parser `rich.markdown.Markdown` builds for every instance (a quarter of a
    millisecond each time, as much as rendering a short paragraph): one, shared. Made with the
    first reply: markdown-it and Rich's markdown (with Pygments) load then, not before the
    app's first screen, which shows no text yet."""
    from markdown_it import MarkdownIt

    return MarkdownIt().enable("strikethrough").enable("table")

_FENCES = ("```", "~~~")
_CONTINUES = re.compile(r"[ ]{2,}|\t|[ ]?[>|]|[ ]?(?:[-+*]|\d{1,9}[.)])(?:[ \t\n]|\Z)|[ ]?(?:[-+*]|\d{1,9})\Z"
                        r"|[ ]?#{1,6}[ \t]*(?:\n|\Z)")
"""A line that may continue the block above it (a list item, an indented line), that Rich
renders with a blank line of its own before it (a quote, a table), that cannot be told
yet (a marker or digits that may become `1.`), or an empty heading (whose empty line Rich
drops at the end of a text)."""
_REFERENCE = re.compile(r"^[ ]{0,3}\[[^\]\n]+\]:", re.MULTILINE)


def markdown(text: str, code_theme: str) -> Markdown:
    """A Rich `Markdown` for `text` (no hyperlinks), parsed with the shared parser."""
    md = copy.copy(_template(code_theme))
    md.markup = text
    md.parsed = _parser().parse(text)
    return md


@lru_cache(maxsize=4)
def _template(code_theme: str) -> Markdown:
    from rich.markdown import Markdown

    return Markdown("", code_theme=code_theme, hyperlinks=False)


def gap_after(md: Markdown) -> bool:
    """Whether Rich puts a blank line after this text's last block (not after a rule)."""
    last = next((t for t in reversed(md.parsed) if t.level == 0), None)
    return last is not None and last.type != "hr"


def top_blocks(parsed: list[Token]) -> list[tuple[list[Token], bool]]:
    """The parsed text's top-level blocks, each as the tokens Rich renders it from, and whether
    a blank line goes before it when it is rendered on its own and joined to the blocks above.

    Rich renders each top-level block on its own; before it, a blank line when the last element
    it finished asked for one (every element but a rule). For a list, a quote or a table that is
    an element inside it, so its own rendering already starts with that line; for a paragraph, a
    heading or code it is the block above (none for the first). Not for a text with images
    (Rich renders one as it meets it, inside its paragraph)."""
    blocks: list[tuple[list[Token], bool]] = []
    block: list[Token] = []
    gap = False
    for token in parsed:
        block.append(token)
        if token.level == 0 and token.nesting != 1:
            blocks.append((block, gap and not _finishes_an_element(block[:-1])))
            gap = token.type != "hr"
            block = []
    if block:
        blocks.append((block, gap and not _finishes_an_element(block[:-1])))
    return blocks


_NOT_ELEMENTS = frozenset({"text", "hardbreak", "softbreak", "link_open", "link_close", "html_inline"})


def _finishes_an_element(tokens: list[Token]) -> bool:
    """Whether Rich finishes an element (one that decides the blank line before the next) in
    these tokens, walking them as `Markdown.__rich_console__` does."""
    from rich.markdown import Markdown  # loaded by then: the tokens were parsed for it

    for token in tokens:
        if token.children and not (token.tag == "img" or token.type == "fence"):
            if _finishes_an_element(token.children):
                return True
            continue
        if token.type in _NOT_ELEMENTS:
            continue
        if token.tag in Markdown.inlines and token.type not in ("fence", "code_block"):
            continue
        if token.nesting != 1:
            return True
    return False


def block_key(tokens: list[Token]) -> tuple[object, ...]:
    """What Rich renders a block from (types, text, attributes, nesting), as a dict key: a
    block with the same key renders to the same lines at the same width and style."""
    return tuple(_token_key(token) for token in tokens)


def _token_key(t: Token) -> tuple[object, ...]:
    children = tuple(_token_key(c) for c in t.children) if t.children else ()
    attrs = tuple(t.attrs.items()) if t.attrs else ()
    return (t.type, t.tag, t.nesting, t.level, t.markup, t.info, t.content, t.hidden, attrs, children)


def has_references(text: str) -> bool:
    return _REFERENCE.search(text) is not None


def first_cut(live: str, before: str = "") -> int:
    """The first place `live` (which follows `before`) can be cut so that the two parts render
    as the whole does: after a paragraph break outside code fences, before a line that starts
    a block of its own. 0: nowhere (yet)."""
    fences = sum(before.count(f) for f in _FENCES)
    at = 0
    while (i := live.find("\n\n", at)) != -1:
        at = i + 2
        if (fences + sum(live.count(f, 0, i) for f in _FENCES)) % 2:
            continue  # inside a code fence
        line = _next_line(live, at)
        if line is None:
            return 0  # what follows has not arrived
        if not _CONTINUES.match(live, line):
            return at
    return 0


def _next_line(live: str, at: int) -> int | None:
    """Where the first line after `at` with text starts (None: none has arrived whole enough)."""
    while True:
        end = live.find("\n", at)
        if live[at: end if end != -1 else len(live)].strip(" \t"):
            return at
        if end == -1:
            return None
        at = end + 1


def cuts(text: str, before: str = "") -> list[str]:
    """`text` (following `before`) as blocks to freeze, then the live rest (maybe empty)."""
    if has_references(before) or has_references(text):
        return [text]
    parts: list[str] = []
    rest = text
    while (cut := first_cut(rest, before)) > 0:
        parts.append(rest[:cut])
        before += rest[:cut]
        rest = rest[cut:]
    return [*parts, rest]


_ITEM = re.compile(r"[ ]{0,3}(?:[-+*]|\d{1,9}[.)])[ \t]+")
_RULE = re.compile(r"[ ]{0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*")


def estimate_lines(text: str, width: int) -> int:
    """About how many lines Rich renders `text` to at `width`, without parsing or rendering it:
    paragraphs and list items wrapped word by word, a line per heading, rule or table row, code
    with its padding, a blank line between blocks. For the scroll range of text nobody has
    looked at yet (`Transcript` renders what a pane shows); it is replaced by the true count
    once the text is rendered, so it only has to be close."""
    rows = blocks = indent = 0
    fence: str | None = None
    last = ""  # the kind of block the previous line belongs to
    blank = False
    para: list[str] = []

    def end_para() -> None:
        nonlocal rows, para
        if para:
            rows += wrapped_lines(" ".join(para).split(), max(1, width - indent))
            para = []

    for line in text.split("\n"):
        stripped = line.strip()
        if fence is not None:
            rows += 1
            if stripped.startswith(fence):
                fence = None
            continue
        if not stripped:
            end_para()
            blank = True
            continue
        item = _ITEM.match(line)
        if stripped.startswith(_FENCES):
            end_para()
            fence, last = stripped[:3], "code"
            blocks += 1
            rows += 1  # the padding above and below the code, less the fence lines
        elif item:
            end_para()
            if last != "list":
                blocks += 1
            last, indent = "list", 3
            para.append(line[item.end():])
        elif stripped.startswith("#") or _RULE.fullmatch(line):
            end_para()
            blocks += 1
            last = "other"
            rows += wrapped_lines(stripped.lstrip("#").split(), width)
        elif stripped.startswith("|"):
            end_para()
            if last != "table":
                blocks += 1
                rows += 2  # its top and bottom borders
            last = "table"
            rows += 1
        elif last in ("para", "list") and not blank:
            para.append(stripped)  # the paragraph (or the list item) goes on
        else:
            end_para()
            blocks += 1
            last, indent = "para", 0
            para.append(stripped.lstrip(">").strip())
        blank = False
    end_para()
    return rows + max(0, blocks - 1)


def wrapped_lines(words: list[str], width: int) -> int:
    """Lines that greedy word wrapping makes of `words` at `width` (at least one)."""
    lines, col = 1, 0
    for word in words:
        n = len(word)
        if col and col + 1 + n <= width:
            col += 1 + n
            continue
        if col:
            lines += 1
        lines += (n - 1) // width if n > width else 0
        col = n % width if n > width else n
    return lines

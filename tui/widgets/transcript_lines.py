"""How the parts of a transcript's entries become lines (Rich → Textual strips), and how many
lines a part that was not rendered is estimated to take.

Text is made terminal-safe where it is rendered (streamed deltas arrive raw, and an
escape sequence can straddle two of them), markdown links are shown with their
address (no OSC 8 hyperlink hides where they go), and Rich/Textual markup in the text
is never interpreted (markdown goes to Rich's Markdown, everything else is `Text`).
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip

from ...core.safety.sanitize import terminal_safe
from ..format import first_line
from .markdown_blocks import block_key, estimate_lines, gap_after, markdown, top_blocks, wrapped_lines
from .plain_scrollbar import plain_vertical_scrollbar
from .transcript_entry import HEAD, KEPT_BLOCKS, TAIL, Entry, GrownTail, Rendered

if TYPE_CHECKING:
    from markdown_it.token import Token

TITLE_CLASSES = {"done": "transcript--title-done", "failed": "transcript--title-failed",
                 "solution": "transcript--title-solution"}


class MadeLines:
    """Strips made for wrapped lines, by what they show (the line's text, its width and style).

    Why: the paragraph that streams is wrapped again at every chunk, and only its last line
    changed; its other lines keep their Strip objects, so the transcript hands the style cache
    the very lines it styled last frame and they are not styled again (`Transcript.render_lines`
    reuses what it made of a line by the line's identity). The newest lines are kept: two
    generations of at most `LIMIT` each."""

    LIMIT = 512

    def __init__(self) -> None:
        self._new: dict[tuple[object, ...], Strip] = {}
        self._old: dict[tuple[object, ...], Strip] = {}

    def get(self, key: tuple[object, ...]) -> Strip | None:
        strip = self._new.get(key)
        if strip is None:
            strip = self._old.pop(key, None)
            if strip is not None:
                self.put(key, strip)
        return strip

    def put(self, key: tuple[object, ...], strip: Strip) -> None:
        self._new[key] = strip
        if len(self._new) > self.LIMIT:
            self._old, self._new = self._new, {}


class TranscriptLines(ScrollView, can_focus=False):
    """The rendering half of `Transcript`: a part of an entry → its strips, or its estimate."""

    _probes: dict[tuple[int, Style], list[Segment]] = {}
    """Per width and style: the segments of a one-word paragraph's line as Rich renders it
    (`Transcript` gives each widget its own dict and empties it when the width or theme changes)."""

    _bullet_probes: dict[tuple[int, Style], BulletProbe | None] = {}
    """Per width and style: a one-word bullet item as Rich renders it, cut into the pieces its
    lines are made of (None: Rich draws it some other way and renders every item itself);
    kept and emptied as `_probes` is."""

    _made: MadeLines = MadeLines()
    """The strips of the wrapped lines made lately, by what they show (`Transcript` gives each
    widget its own and empties it as it empties `_probes`)."""

    _base_style = Style()
    """The widget's style, kept by `Transcript` while its width and theme hold (DOMNode.rich_style
    walks every ancestor's styles each time it is asked)."""

    COMPONENT_CLASSES = {
        "transcript--title", "transcript--title-done", "transcript--title-failed",
        "transcript--title-solution", "transcript--history", "transcript--note",
    }

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        return plain_vertical_scrollbar(self)  # its thumb moves in most frames: drawn cheaply

    def _render_part(self, entry: Entry, part: int, width: int) -> Rendered:
        """The part's lines (cached on the entry until it changes or the width does)."""
        done = entry.rendered.get(part)
        if done is not None:
            return done
        if part == HEAD:
            done = (self._head_strips(entry, width), False)
        elif part == TAIL:
            done = self._tail_block(entry, width)
        else:
            done = self._markdown_block(entry.part_text(part), width, entry.blocks)
        entry.rendered[part] = done
        return done

    def _tail_block(self, entry: Entry, width: int) -> Rendered:
        """The live tail's lines: while it is one plain paragraph that only grew since it was
        last rendered, its lines but the last are kept and the rest is rendered (the same
        lines as rendering it whole: tests/tui/test_streaming_cost.py)."""
        text, grown = entry.tail, entry.grown
        if not is_plain_paragraph(text):
            entry.grown = None
            return self._markdown_block(text, width, entry.blocks)
        if (grown is not None and grown.width == width and text.startswith(grown.text)
                and is_plain_paragraph(text[grown.last_line:])):
            strips, gap = self._plain_block(text[grown.last_line:], width)
            strips = grown.kept + strips
        else:
            strips, gap = self._plain_block(text, width)
        entry.grown = grown_tail(text, width, strips)
        return strips, gap

    def _estimate_part(self, entry: Entry, part: int, width: int) -> int:
        """Lines the part will take (without the blank line after it), not rendering it."""
        if part == HEAD:
            if entry.kind == "note":
                return wrapped_lines((entry.text or entry.title).split(), width)
            if entry.kind == "history" and entry.expanded:
                return wrapped_lines(entry.title.split(), width - 2) + estimate_lines(entry.text, width)
            return 1
        if part == TAIL:
            return estimate_lines(entry.tail, width) if entry.tail.strip() else 0
        estimate = entry.estimates.get(part)
        if estimate is None:
            estimate = entry.estimates[part] = estimate_lines(entry.segments[part], width)
        return estimate

    def _head_strips(self, entry: Entry, width: int) -> list[Strip]:
        if entry.kind == "note":
            return self._text_strips(Text(terminal_safe(entry.text or entry.title)), width,
                                     self.get_component_rich_style("transcript--note"))
        if entry.kind == "history":
            head = Text(("▾ " if entry.expanded else "▸ ") + terminal_safe(entry.title), style="bold")
            muted = self.get_component_rich_style("transcript--history")
            if entry.expanded:
                return self._text_strips(head, width, muted) + self._markdown_strips(entry.text, width)
            brief = entry.brief if entry.brief is not None else first_line(terminal_safe(entry.text), 200)
            line = Text.assemble(head, "  ", terminal_safe(brief))
            line.truncate(width, overflow="ellipsis")
            return self._text_strips(line, width, muted, wrap=False)
        title = Text(terminal_safe(entry.title))
        title.truncate(width, overflow="ellipsis")
        style = self.get_component_rich_style(TITLE_CLASSES.get(entry.state, "transcript--title"))
        return self._text_strips(title, width, style, wrap=False)

    def _entry_strips(self, entry: Entry, width: int) -> list[Strip]:
        """All the lines of an entry, every part rendered: blocks joined as Rich joins the
        blocks of one text, a blank line after each (none after a rule)."""
        out: list[Strip] = []
        blank = Strip.blank(width, self.rich_style)
        gap = False
        for part in entry.parts():
            strips, gap_after_part = self._render_part(entry, part, width)
            if not strips:
                continue
            if gap:
                out.append(blank)
            out += strips
            gap = gap_after_part
        return out

    def _markdown_strips(self, text: str, width: int) -> list[Strip]:
        return self._markdown_block(text, width)[0]

    def _markdown_block(self, text: str, width: int, kept: dict[tuple[object, ...], list[Strip]] | None = None
                        ) -> Rendered:
        """The lines of `text` rendered as markdown, and whether a blank line follows them
        when another block comes after. With `kept` (an entry's rendered top-level blocks),
        the text's blocks are rendered one by one and a block rendered before is not rendered
        again: the paragraph above a list that grows, a tail's blocks once frozen."""
        text = terminal_safe(text)
        if not text.strip():
            return [], False
        head, _, rest = text.partition("\n")
        if kept is not None and _LIST_AFTER.match(rest) and is_plain_paragraph(head) and head.strip():
            # A paragraph, then a list that began below it: they render apart (the list's own
            # lines start with the blank line between them), and the paragraph is not parsed
            # again for every chunk of the list.
            below, gap = self._markdown_block(rest, width, kept)
            return self._plain_block(head, width)[0] + below, gap
        if kept is not None and _ONE_ITEM.fullmatch(text) and is_plain_paragraph(item := text[2:].rstrip("\n")):
            # A list that grows by one item, as the tail of a reply does (or the one that ends a
            # paragraph frozen with its list): its lines are made here without parsing the text.
            bullet = self._bullet_strips(item.strip(), width)
            if bullet is not None:
                return bullet, True
        dark = getattr(self.app.current_theme, "dark", True)
        console = self.app.console
        options = console.options.update(width=width, height=None, highlight=False)
        style = self._base_style or self.rich_style
        md = markdown(text, "ansi_dark" if dark else "ansi_light")
        if kept is None or "![" in text:  # Rich renders an image as it meets it, not with its block
            lines = console.render_lines(md, options, style=style, pad=False)
            return [Strip(Segment.simplify(line)).adjust_cell_length(width, style) for line in lines], gap_after(md)
        out: list[Strip] = []
        for block, gap in top_blocks(md.parsed):
            key = block_key(block)
            strips = kept.pop(key, None)
            if strips is None and (run := one_run(block)) is not None:
                strips = self._paragraph_strips(run, width)
            if strips is None and (listed := one_item(block)) is not None:
                strips = self._bullet_strips(listed, width)
            if strips is None:
                part = copy.copy(md)
                part.parsed = block
                lines = console.render_lines(part, options, style=style, pad=False)
                strips = [Strip(Segment.simplify(line)).adjust_cell_length(width, style) for line in lines]
            kept[key] = strips  # the most recently used last
            if gap:
                out.append(Strip.blank(width, style))
            out += strips
        while len(kept) > KEPT_BLOCKS:
            del kept[next(iter(kept))]
        return out, gap_after(md)

    def _plain_block(self, text: str, width: int) -> Rendered:
        """The lines of a plain paragraph (`is_plain_paragraph`), not parsed as markdown."""
        text = text.strip()
        return (self._paragraph_strips(text, width), True) if text else ([], False)

    def _paragraph_strips(self, text: str, width: int) -> list[Strip]:
        """The lines of a paragraph that is one run of text (no markup, no line breaks) as
        Rich's Markdown renders it. Printable ASCII words, one space apart, none wider than
        the view, are wrapped here as Rich wraps them (greedily, each line padded in the
        styles Rich gives a one-word paragraph's line); other text goes through Rich.
        tests/tui/test_streaming_cost.py compares both with Rich at widths where words fold."""
        style = self._base_style or self.rich_style
        words = text.split(" ")
        if not (width > 1 and text.isascii() and text.isprintable() and all(0 < len(w) <= width for w in words)):
            return self._rich_paragraph(text, width, style)
        probe = self._probes.get((width, style))
        if probe is None:
            probe = self._probes[(width, style)] = list(self._rich_paragraph("a", width, style)[0])
        if len(probe) not in (1, 2):
            return self._rich_paragraph(text, width, style)
        made = self._made
        out: list[Strip] = []
        for line in wrap_words(words, width):
            key = ("paragraph", line, width, style)
            strip = made.get(key)
            if strip is None:
                if len(probe) == 1:  # words and padding in one style: one segment a line
                    (_, merged, _), = probe
                    strip = Strip([Segment(line.ljust(width), merged)], width)
                else:
                    (_, word_style, _), (_, pad_style, _) = probe
                    strip = Strip([Segment(line, word_style), Segment(" " * (width - len(line)), pad_style)]
                                  if len(line) < width else [Segment(line, word_style)], width)
                made.put(key, strip)
            out.append(strip)
        return out

    def _bullet_strips(self, text: str, width: int) -> list[Strip] | None:
        """The lines of a bullet list of one item whose text is one run of plain words, as
        Rich's Markdown renders it (its own blank line, then ` • ` before the first line and
        three spaces before the others, the words wrapped as in a paragraph three cells
        narrower); None where they are not made here (Rich renders them)."""
        inner = width - 3
        words = text.split(" ")
        if not (inner > 1 and text.isascii() and text.isprintable() and all(0 < len(w) <= inner for w in words)):
            return None
        style = self._base_style or self.rich_style
        key = (width, style)
        if key not in self._bullet_probes:
            self._bullet_probes[key] = bullet_probe(self._markdown_block("- a", width)[0], inner)
        probe = self._bullet_probes[key]
        if probe is None:
            return None
        blank, bullet, indent, tail = probe
        out = [blank]
        made = self._made
        for n, line in enumerate(wrap_words(words, inner)):
            line_key = ("bullet", n == 0, line, width, style)
            strip = made.get(line_key)
            if strip is not None:
                out.append(strip)
                continue
            lead = indent if n else bullet
            if len(tail) == 1:
                segments = [lead, Segment(line.ljust(inner), tail[0].style)]
            elif len(line) < inner:
                segments = [lead, Segment(line, tail[0].style), Segment(" " * (inner - len(line)), tail[1].style)]
            else:
                segments = [lead, Segment(line, tail[0].style)]
            strip = Strip(segments, width)
            made.put(line_key, strip)
            out.append(strip)
        return out

    def _rich_paragraph(self, text: str, width: int, style: Style) -> list[Strip]:
        """A one-run paragraph rendered by Rich as its Markdown does: a `Text` in the paragraph's style."""
        console = self.app.console
        options = console.options.update(width=width, height=None, highlight=False)
        paragraph = Text(justify="left")
        paragraph.append(text, console.get_style("none") + console.get_style("markdown.paragraph", default="none"))
        lines = console.render_lines(paragraph, options, style=style, pad=False)
        return [Strip(Segment.simplify(line)).adjust_cell_length(width, style) for line in lines]

    def _text_strips(self, text: Text, width: int, style: Style, wrap: bool = True) -> list[Strip]:
        console = self.app.console
        options = console.options.update(width=width, height=None, no_wrap=not wrap, overflow="ellipsis")
        base = self.rich_style + style
        lines = console.render_lines(text, options, style=base, pad=False)
        return [Strip(Segment.simplify(line)).adjust_cell_length(width, base) for line in lines]


_PLAIN = re.compile(r"[ ]{0,3}[A-Za-z][A-Za-z0-9,.;:'\"?!()/% ]*")
"""Prose that markdown leaves as it is, in a paragraph: no markup, escapes, entities or links,
and (starting with a letter after at most three spaces) no list item, heading, quote or
indented code wherever a line starts."""


def wrap_words(words: list[str], width: int) -> list[str]:
    """Words (each at most `width` long) wrapped greedily into lines, one space apart."""
    lines: list[str] = []
    line: list[str] = []
    col = 0
    for word in words:
        if line and col + 1 + len(word) > width:
            lines.append(" ".join(line))
            line, col = [], 0
        col += len(word) + (1 if line else 0)
        line.append(word)
    lines.append(" ".join(line))
    return lines


def one_run(block: list[Token]) -> str | None:
    """The text of a top-level paragraph that is one run of text (no markup, no line break)."""
    if len(block) == 3 and block[0].type == "paragraph_open" and block[1].children is not None:
        children = block[1].children
        if len(children) == 1 and children[0].type == "text":
            return children[0].content
    return None


BulletProbe = tuple[Strip, Segment, Segment, list[Segment]]
"""A one-word bullet item's lines cut into pieces: the blank line before the list, the
bullet (` • `) and the indent of the lines after the first (three spaces in the bullet's
style, as Rich draws them), and the word's segments (the word and its padding in one
style, or the word then the padding)."""


def bullet_probe(strips: list[Strip], inner: int) -> BulletProbe | None:
    """`- a` rendered by Rich, cut into the pieces of a `BulletProbe` (None when its lines are
    not the blank line, then the bullet, `a` and its padding to `inner` cells)."""
    if len(strips) != 2 or strips[0].text.strip():
        return None
    segments = list(strips[1])
    if len(segments) not in (2, 3) or segments[0].text != " • " or segments[0].control:
        return None
    bullet, tail = segments[0], segments[1:]
    if len(tail) == 1 and tail[0].text != "a".ljust(inner):
        return None
    if len(tail) == 2 and (tail[0].text != "a" or tail[1].text != " " * (inner - 1)):
        return None
    return strips[0], bullet, Segment("   ", bullet.style), tail


def one_item(block: list[Token]) -> str | None:
    """The text of a top-level bullet list of one item that is one paragraph of one run of
    plain words (the list that a reply's bullet point streams into)."""
    if (len(block) == 7 and block[0].type == "bullet_list_open" and block[1].type == "list_item_open"
            and block[2].type == "paragraph_open" and block[5].type == "list_item_close"):
        run = one_run(block[2:5])
        if run is not None and is_plain_paragraph(run):
            return run
    return None


_ONE_ITEM = re.compile(r"[-+*] [A-Za-z][^\n]*\n*")
"""A bullet item on one line whose text starts with a letter (the rest is checked as a plain
paragraph), maybe followed by line breaks: a list of that one item."""

_LIST_AFTER = re.compile(r"[-+*][ ]+[A-Za-z0-9]")
"""A bullet list item with text, on the line after a paragraph: it ends the paragraph, and
its list renders as it would on its own."""


def is_plain_paragraph(text: str) -> bool:
    return _PLAIN.fullmatch(text) is not None and "  " not in text


def grown_tail(text: str, width: int, strips: list[Strip]) -> GrownTail | None:
    """What a later, longer tail keeps of these lines, when they are known to hold the words of
    `text` in order, one space between lines (no word was folded across two lines)."""
    words = ["".join(segment.text for segment in strip).rstrip() for strip in strips]
    if not words or not all(words) or " ".join(words) != text.strip():
        return None
    lead = len(text) - len(text.lstrip())
    last_line = lead + len(" ".join(words[:-1])) + 1 if len(words) > 1 else 0
    return GrownTail(text, width, strips[:-1], last_line)

"""How the parts of a transcript's entries become lines (Rich → Textual strips), and how many
lines a part that was not rendered is estimated to take.

Text is made terminal-safe where it is rendered (streamed deltas arrive raw, and an
escape sequence can straddle two of them), markdown links are shown with their
address (no OSC 8 hyperlink hides where they go), and Rich/Textual markup in the text
is never interpreted (markdown goes to Rich's Markdown, everything else is `Text`).
"""

from __future__ import annotations

import re

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip

from ...core.safety.sanitize import terminal_safe
from ..format import first_line
from .markdown_blocks import wrapped_lines, estimate_lines, gap_after, markdown
from .plain_scrollbar import plain_vertical_scrollbar
from .transcript_entry import HEAD, TAIL, Entry, GrownTail, Rendered

TITLE_CLASSES = {"done": "transcript--title-done", "failed": "transcript--title-failed",
                 "solution": "transcript--title-solution"}


class TranscriptLines(ScrollView, can_focus=False):
    """The rendering half of `Transcript`: a part of an entry → its strips, or its estimate."""

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
            done = self._markdown_block(entry.part_text(part), width)
        entry.rendered[part] = done
        return done

    def _tail_block(self, entry: Entry, width: int) -> Rendered:
        """The live tail's lines: while it is one plain paragraph that only grew since it was
        last rendered, its lines but the last are kept and the rest is rendered (the same
        lines as rendering it whole: tests/tui/test_streaming_cost.py)."""
        text, grown = entry.tail, entry.grown
        if not is_plain_paragraph(text):
            entry.grown = None
            return self._markdown_block(text, width)
        if (grown is not None and grown.width == width and text.startswith(grown.text)
                and is_plain_paragraph(text[grown.last_line:])):
            strips, gap = self._markdown_block(text[grown.last_line:], width)
            strips = grown.kept + strips
        else:
            strips, gap = self._markdown_block(text, width)
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

    def _markdown_block(self, text: str, width: int) -> Rendered:
        """The lines of `text` rendered as markdown, and whether a blank line follows them
        when another block comes after."""
        text = terminal_safe(text)
        if not text.strip():
            return [], False
        dark = getattr(self.app.current_theme, "dark", True)
        console = self.app.console
        options = console.options.update(width=width, height=None, highlight=False)
        style = self._base_style or self.rich_style
        md = markdown(text, "ansi_dark" if dark else "ansi_light")
        lines = console.render_lines(md, options, style=style, pad=False)
        return [Strip(Segment.simplify(line)).adjust_cell_length(width, style) for line in lines], gap_after(md)

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

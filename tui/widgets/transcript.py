"""An agent's contributions as one scrollable widget: streaming markdown, finished text, history.

Why one widget and not a Textual `Markdown` per contribution: measured on the 2-core
machine (bench/tui_stream.py), six panes of Textual Markdown fed by MarkdownStream
or 20 Hz `append` reached 1–4 frames/s at 6 agents × 200 tokens/s with keys taking
0.3–0.8 s, because every frame lays out every markdown block widget on screen and
block widgets are mounted continuously. Here each entry's markdown is rendered by
Rich into cached lines (the line API, as RichLog does): a delta re-renders only the
entry's unfinished last paragraph; the paragraphs before it are frozen blocks rendered
once (`markdown_blocks`: the blocks render to the lines of the whole text), and the
finished reply keeps them.

Text is made terminal-safe where it is rendered (streamed deltas arrive raw, and an
escape sequence can straddle two of them), markdown links are shown with their
address (no OSC 8 hyperlink hides where they go), and Rich/Textual markup in the text
is never interpreted (markdown goes to Rich's Markdown, everything else is `Text`).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any
from dataclasses import dataclass, field

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...core.safety.sanitize import terminal_safe
from ..format import first_line
from .markdown_blocks import cuts, gap_after, has_references, markdown


@dataclass
class Entry:
    """One item of the transcript."""

    key: str
    title: str
    text: str = ""
    kind: str = "block"
    """"block": markdown under a title; "history": one line, full plain text when expanded;
    "note": a dim line of text."""
    state: str = "live"
    """live, done, failed or solution (only colours the title)."""
    expanded: bool = False
    brief: str | None = None
    """What a collapsed history line shows after its title (None: the text's first line)."""
    segments: list[str] = field(default_factory=list)
    """Frozen leading blocks of `text` ("block" entries), each rendered once."""
    frozen: int = 0
    """How many characters of `text` the segments hold."""
    version: int = 0
    _strips: dict[tuple[int, str, int], list[Strip]] = field(default_factory=dict, repr=False)
    _segment_strips: dict[tuple[int, str, int], tuple[list[Strip], bool]] = field(default_factory=dict,
                                                                                    repr=False)

    @property
    def tail(self) -> str:
        return self.text[self.frozen:]

    def freeze(self) -> None:
        """Move the finished paragraphs of the tail into segments."""
        if self.kind != "block":
            return
        parts = cuts(self.tail, self.text[:self.frozen])
        for part in parts[:-1]:
            self.segments.append(part)
            self.frozen += len(part)

    def thaw(self) -> None:
        self.segments.clear()
        self._segment_strips.clear()
        self.frozen = 0

    def changed(self) -> None:
        self.version += 1
        self._strips.clear()


class Transcript(ScrollView, can_focus=False):
    """Entries rendered into cached strips; anchored to the newest text until scrolled up."""

    DEFAULT_CSS = """
    Transcript { height: 1fr; overflow-x: hidden; }
    Transcript > .transcript--title { text-style: bold; color: $text-muted; }
    Transcript > .transcript--title-done { text-style: bold; color: $success; }
    Transcript > .transcript--title-failed { text-style: bold; color: $error; }
    Transcript > .transcript--title-solution { text-style: bold reverse; color: $success; }
    Transcript > .transcript--history { color: $text-muted; }
    Transcript > .transcript--note { color: $text-muted; text-style: italic; }
    """
    COMPONENT_CLASSES = {
        "transcript--title", "transcript--title-done", "transcript--title-failed",
        "transcript--title-solution", "transcript--history", "transcript--note",
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entries: list[Entry] = []
        self._index: dict[str, Entry] = {}
        self._starts: list[int] = []
        self._lines: list[tuple[Entry, list[Strip]]] = []
        self._layout_key: tuple[int, str] | None = None
        self._dirty = True
        self._base_style = Style()
        self._blank: Strip | None = None

    # ------------------------------------------------------------------ entries

    def get(self, key: str) -> Entry | None:
        return self._index.get(key)

    def add(self, entry: Entry, *, first: bool = False, before: str | None = None) -> Entry:
        """Add at the end, first, or just before the entry keyed `before` (when it is there)."""
        anchor = self._index.get(before) if before is not None else None
        if first:
            self.entries.insert(0, entry)
        elif anchor is not None:
            self.entries.insert(self.entries.index(anchor), entry)
        else:
            self.entries.append(entry)
        self._index[entry.key] = entry
        self._content_changed()
        return entry

    def remove_entry(self, key: str) -> None:
        entry = self._index.pop(key, None)
        if entry is not None:
            self.entries.remove(entry)
            self._content_changed()

    def append_text(self, key: str, text: str) -> None:
        entry = self._index.get(key)
        if entry is None or not text:
            return
        entry.text += text
        entry.freeze()
        entry.changed()
        self._content_changed()

    def set_text(self, key: str, text: str, *, title: str | None = None, state: str | None = None) -> None:
        entry = self._index.get(key)
        if entry is None:
            return
        # The finished reply is the streamed text (maybe with more after it): its frozen
        # paragraphs stay, rendered; only what differs is rendered again.
        if not (entry.frozen and text.startswith(entry.text[:entry.frozen]) and not has_references(text)):
            entry.thaw()
        entry.text = text
        entry.freeze()
        if title is not None:
            entry.title = title
        if state is not None:
            entry.state = state
        entry.changed()
        self._content_changed()

    def to_history(self, key: str) -> None:
        """Collapse a finished block into one line (its full text on click)."""
        entry = self._index.get(key)
        if entry is not None and entry.kind == "block":
            entry.kind = "history"
            entry.thaw()
            entry.changed()
            self._content_changed()

    def toggle(self, entry: Entry) -> None:
        entry.expanded = not entry.expanded
        entry.changed()
        self._content_changed()

    def scroll_to_entry(self, key: str) -> None:
        entry = self._index.get(key)
        if entry is None:
            return
        self._ensure_layout()
        for (e, _), start in zip(self._lines, self._starts):
            if e is entry:
                self.anchor(False)
                self.scroll_to(y=start, animate=False, immediate=True)
                return

    def follow_end(self) -> None:
        self.anchor()

    # ------------------------------------------------------------------ rendering

    def _content_changed(self) -> None:
        self._dirty = True
        self._update_virtual_size()

    def _width(self) -> int:
        return max(1, self.scrollable_content_region.width)

    def _update_virtual_size(self) -> None:
        if not self.is_mounted:
            return
        self._ensure_layout()
        total = self._starts[-1] + len(self._lines[-1][1]) if self._lines else 0
        self.virtual_size = Size(self._width(), total)
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self._dirty = True
        self._update_virtual_size()

    def on_mount(self) -> None:
        self.anchor()  # stay on the newest line until the user scrolls up (Textual releases it)
        self._update_virtual_size()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._layout_key = None
        for entry in self.entries:
            entry._strips.clear()
            entry._segment_strips.clear()
        self._dirty = True

    def _ensure_layout(self) -> None:
        key = (self._width(), self.app.theme)
        if not self._dirty and key == self._layout_key:
            return
        self._layout_key = key
        self._base_style = self.rich_style
        self._blank = None
        self._dirty = False
        self._lines = []
        self._starts = []
        line = 0
        for entry in self.entries:
            strips = self._entry_strips(entry, key[0])
            self._starts.append(line)
            self._lines.append((entry, strips))
            line += len(strips)

    def _entry_strips(self, entry: Entry, width: int) -> list[Strip]:
        theme = self.app.theme
        cache_key = (width, theme, entry.version)
        cached = entry._strips.get(cache_key)
        if cached is not None:
            return cached
        base = self.rich_style
        out: list[Strip] = []
        if entry.kind == "note":
            out += self._text_strips(Text(terminal_safe(entry.text or entry.title)), width,
                                     self.get_component_rich_style("transcript--note"))
        elif entry.kind == "history":
            head = Text(("▾ " if entry.expanded else "▸ ") + terminal_safe(entry.title), style="bold")
            muted = self.get_component_rich_style("transcript--history")
            if entry.expanded:
                out += self._text_strips(head, width, muted)
                out += self._markdown_strips(entry.text, width)
            else:
                brief = entry.brief if entry.brief is not None else first_line(terminal_safe(entry.text), 200)
                line = Text.assemble(head, "  ", terminal_safe(brief))
                line.truncate(width, overflow="ellipsis")
                out += self._text_strips(line, width, muted, wrap=False)
        else:
            title_class = {"done": "transcript--title-done", "failed": "transcript--title-failed",
                           "solution": "transcript--title-solution"}.get(entry.state, "transcript--title")
            title = Text(terminal_safe(entry.title))
            title.truncate(width, overflow="ellipsis")
            out += self._text_strips(title, width, self.get_component_rich_style(title_class), wrap=False)
            # Blocks rendered apart, joined as Rich joins the blocks of one text: a blank line
            # after each (none after a rule).
            gap = False
            blank = Strip.blank(width, base)
            for i, segment in enumerate(entry.segments):
                seg_key = (width, theme, i)
                block = entry._segment_strips.get(seg_key)
                if block is None:
                    block = entry._segment_strips[seg_key] = self._markdown_block(segment, width)
                gap = self._join(out, block, gap, blank)
            self._join(out, self._markdown_block(entry.tail, width), gap, blank)
        entry._strips = {cache_key: out}
        return out

    @staticmethod
    def _join(out: list[Strip], block: tuple[list[Strip], bool], gap: bool, blank: Strip) -> bool:
        strips, gap_after_block = block
        if not strips:
            return gap
        if gap:
            out.append(blank)
        out += strips
        return gap_after_block

    def _markdown_strips(self, text: str, width: int) -> list[Strip]:
        return self._markdown_block(text, width)[0]

    def _markdown_block(self, text: str, width: int) -> tuple[list[Strip], bool]:
        """The lines of `text` rendered as markdown, and whether a blank line follows them
        when another block comes after."""
        text = terminal_safe(text)
        if not text.strip():
            return [], False
        dark = getattr(self.app.current_theme, "dark", True)
        console = self.app.console
        options = console.options.update(width=width, height=None, highlight=False)
        style = self.rich_style
        md = markdown(text, "ansi_dark" if dark else "ansi_light")
        lines = console.render_lines(md, options, style=style, pad=False)
        return [Strip(Segment.simplify(line)).adjust_cell_length(width, style) for line in lines], gap_after(md)

    def _text_strips(self, text: Text, width: int, style: Style, wrap: bool = True) -> list[Strip]:
        console = self.app.console
        options = console.options.update(width=width, height=None, no_wrap=not wrap, overflow="ellipsis")
        base = self.rich_style + style
        lines = console.render_lines(text, options, style=base, pad=False)
        return [Strip(Segment.simplify(line)).adjust_cell_length(width, base) for line in lines]

    def render_line(self, y: int) -> Strip:
        self._ensure_layout()
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self._layout_key[0] if self._layout_key else self._width()
        i = bisect_right(self._starts, index) - 1
        if 0 <= i < len(self._lines):
            strips = self._lines[i][1]
            offset = index - self._starts[i]
            if offset < len(strips):
                strip = strips[offset]
                # Strips are made at the view's width: no crop (no new Strip) unless scrolled sideways.
                if scroll_x == 0 and strip.cell_length == width:
                    return strip
                return strip.crop_extend(scroll_x, scroll_x + width, self._base_style)
        if self._blank is None or self._blank.cell_length != width:
            self._blank = Strip.blank(width, self._base_style)
        return self._blank

    def entry_at(self, y: int) -> Entry | None:
        self._ensure_layout()
        index = self.scroll_offset.y + y
        i = bisect_right(self._starts, index) - 1
        if 0 <= i < len(self._lines) and index - self._starts[i] < len(self._lines[i][1]):
            return self._lines[i][0]
        return None

    # ------------------------------------------------------------------ input

    def on_click(self, event: events.Click) -> None:
        entry = self.entry_at(event.y)
        if entry is not None and entry.kind == "history":
            self.toggle(entry)


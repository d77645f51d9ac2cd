"""An agent's contributions as one scrollable widget: streaming markdown, finished text, history.

Why one widget and not a Textual `Markdown` per contribution: measured on the 2-core
machine (bench/tui_stream.py), six panes of Textual Markdown fed by MarkdownStream
or 20 Hz `append` reached 1–4 frames/s at 6 agents × 200 tokens/s with keys taking
0.3–0.8 s, because every frame lays out every markdown block widget on screen and
block widgets are mounted continuously. Here each entry's markdown is rendered by
Rich into cached lines (the line API, as RichLog does), and only the lines a pane
shows: text that arrives changes the entry and asks for a repaint, nothing more.
When the frame is drawn (`render_lines`) the transcript renders the parts of its
entries that fall in the view (from the bottom while it follows the newest text);
the parts above keep an estimated height (`markdown_blocks.estimate_lines`) until
the user scrolls to them, when they are rendered and the estimate is replaced. The
frozen paragraphs of a reply are rendered at most once (`markdown_blocks`: the blocks
render to the lines of the whole text) and the finished reply keeps them.

Growing text sets the scroll range without a layout of the whole screen: the widget's
region never depends on its text (CSS sets its height).

Just over 400 lines: the scroll state, the estimates and what each frame renders depend on one
another on the streaming path, measured frame by frame; the line rendering itself is in
`transcript_lines.py` and `markdown_blocks.py`.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from typing import Any

from rich.style import Style
from textual import events
from textual.geometry import Region, Size
from textual.scrollbar import ScrollBar
from textual.strip import Strip
from textual.widget import Widget

from ...core.safety.sanitize import terminal_safe
from ..textual_compat import (
    anchor_released,
    cached_lines,
    clear_style_cache,
    container_height,
    dirty_lines,
    follow_anchor_again,
    forget_scrollbar_changes,
    repaint_after_this_frame,
    repaint_in_next_frame,
    set_scroll_range,
)
from .kept_lines import Kept, frame_key, keep, still_kept
from .markdown_blocks import has_references
from .transcript_entry import HEAD, Entry
from .transcript_lines import MadeLines, TranscriptLines

__all__ = ["Entry", "Transcript"]

Piece = tuple[Entry, int, bool]
"""An entry, one of its parts, and whether a non-empty part of the entry follows it (then
Rich's blank line between blocks comes after this one)."""


class Transcript(TranscriptLines, can_focus=False):
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

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entries: list[Entry] = []
        self._index: dict[str, Entry] = {}
        self._pieces: list[Piece] = []
        self._heights: list[int] = []
        """Lines of each piece, the blank line after it included."""
        self._exact: list[bool] = []
        """Whether each piece's height is its rendered one (not an estimate)."""
        self._starts: list[int] = []
        self._layout_key: tuple[int, str] | None = None
        self._dirty = True
        self._synced: tuple[object, ...] | None = None
        self._base_style = Style()
        self._probes = {}
        self._bullet_probes = {}
        self._made = MadeLines()
        self._blank: Strip | None = None
        self._repaint_asked = False
        """A repaint was asked for since this widget was last drawn (text that arrives again
        before the frame does not ask again)."""
        self._kept: Kept | None = None
        self._styled: dict[int, tuple[Strip, Strip]] = {}
        """id of a line drawn in the last frame → that line and what the style cache made of
        it: a line that only moved up the view is not styled again."""

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
        self._sync()
        for (e, _, _), start in zip(self._pieces, self._starts):
            if e is entry:
                self.anchor(False)
                self.scroll_to(y=start, animate=False, immediate=True)
                return

    def follow_end(self) -> None:
        self.anchor()

    # ------------------------------------------------------------------ which lines exist

    def _content_changed(self) -> None:
        self._dirty = True
        if not self._repaint_asked:
            self._repaint_asked = True
            # Into the screen's next frame at once: no idle turn of this widget's queue and no
            # Update message to the screen for every chunk of every pane (textual_compat).
            repaint_in_next_frame(self)

    def _width(self) -> int:
        return max(1, self.scrollable_content_region.width)

    def on_resize(self, event: events.Resize) -> None:
        self.refresh()

    def watch_show_vertical_scrollbar(self) -> None:
        # The scrollbar took (or gave back) a column and the text wraps anew; no Resize says so.
        # Without this, a pane whose last text brought the scrollbar kept the scroll range of
        # the wider text and hid its newest line.
        self.refresh()

    def on_mount(self) -> None:
        self.anchor()  # stay on the newest line until the user scrolls up (Textual releases it)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # Scrolled back down to the end (the wheel, page keys): follow the newest text again.
        # Textual's widgets do this in their watcher; ScrollView's leaves it out.
        follow_anchor_again(self)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._layout_key = None

    def render_lines(self, crop: Region) -> list[Strip]:
        self._repaint_asked = False
        self._sync(drawing=True)
        if self.styles.gutter or crop.x or crop.width != self.size.width:
            self._styled.clear()
            self._kept = None
            return super().render_lines(crop)
        # Unchanged since the last frame (another pane's text put it in the frame): its lines.
        key = frame_key(self, crop)
        if (kept := still_kept(self, self._kept, key)) is not None:
            return kept
        # Rows whose line was drawn in the last frame (at another row, as the text scrolls)
        # take what the style cache made of it then; the others are styled now.
        styled, rows = self._styled, cached_lines(self)
        lines = [self.render_line(y) for y in crop.line_range]
        for y, line in zip(crop.line_range, lines):
            done = styled.get(id(line))
            if done is not None and done[0] is line and y not in dirty_lines(self):
                rows[y] = done[1]
            else:
                rows.pop(y, None)
        strips = super().render_lines(crop)
        self._styled = {id(line): (line, rows[y]) for y, line in zip(crop.line_range, lines) if y in rows}
        self._kept = keep(self, key, strips)
        return strips

    def _sync(self, drawing: bool = False) -> None:
        """Render the parts in the view, estimate the others, and set the scroll range and
        the anchored position from them. Called as the frame draws this widget (and by what
        needs positions: a click, scrolling to an entry), so text that arrived between two
        frames is rendered once, and text that scrolled past unseen is never rendered."""
        if not self.is_mounted:
            return
        for _ in range(3):  # again if the scroll range brought or took the scrollbar (a column)
            width = self._width()
            if not self._sync_at(width, drawing) or self._width() == width:
                return

    def _sync_at(self, width: int, drawing: bool) -> bool:
        key = (width, self.app.theme)
        if key != self._layout_key:
            self._layout_key = key
            self._base_style = self.rich_style
            self._probes = {}
            self._bullet_probes = {}
            self._made = MadeLines()
            self._blank = Strip.blank(width, self._base_style)
            for entry in self.entries:
                entry.forget_rendering()
            self._dirty = True
        view = self.scrollable_content_region.height
        anchored = self.is_anchored and not anchor_released(self)
        if not self._dirty and (key, view, anchored, round(self.scroll_y)) == self._synced:
            return False
        if self._dirty:
            self._rebuild(width)
            self._dirty = False
        self._render_view(width, view, anchored)
        total = self._starts[-1] + self._heights[-1] if self._pieces else 0
        size = Size(width, total)
        grew = False
        if size != self.virtual_size:
            if self.container_size:
                # Only this widget's scroll range changes, never its region: setting the
                # `virtual_size` reactive would lay out the whole screen, for every chunk of
                # every pane. A scrollbar that appears or goes still lays out (its reactive asks).
                self.set_reactive(Widget.virtual_size, size)
                grew = self._grow_scrollbar(size, drawing)
                if not grew:
                    set_scroll_range(self, size)
            else:
                self.virtual_size = size  # not laid out yet: the first layout sizes it
        if anchored and self.scroll_y != self.max_scroll_y:
            end = self.max_scroll_y
            self.set_reactive(Widget.scroll_y, end)
            self.set_reactive(Widget.scroll_target_y, end)
            if self.show_vertical_scrollbar:  # one repaint of the bar: `_grow_scrollbar` asked for it
                bar = self.vertical_scrollbar
                position = bar.validate_position(end)
                if position != bar.position:
                    bar.set_reactive(ScrollBar.position, position)
                    if not grew:
                        self._repaint_bar(bar, drawing)
        # Textual keeps the drawn lines by row; what it kept was drawn from other lines (other
        # text, another width, another scroll position). `render_lines` puts back those that
        # only moved.
        clear_style_cache(self)
        if not drawing:
            self.refresh()
        self._synced = (key, view, anchored, round(self.scroll_y))
        return True

    @staticmethod
    def _repaint_bar(bar: ScrollBar, drawing: bool) -> None:
        """The bar was drawn already in this frame (it lies over the text, and the frame draws
        from the front): it repaints in the next one, with the other panes' bars."""
        if drawing:
            repaint_after_this_frame(bar)
        else:
            bar.refresh()

    def _grow_scrollbar(self, size: Size, drawing: bool = False) -> bool:
        """The text still overflows a view whose scrollbar is shown: only the bar's range
        changes (what `_scroll_update` ends in, without deciding again which scrollbars to
        show and validating both scroll offsets through their reactives). False: do it all."""
        styles = self.styles
        height = container_height(self)
        if not (self.show_vertical_scrollbar and not self.show_horizontal_scrollbar
                and styles.overflow_y == "auto" and styles.overflow_x == "hidden"
                and styles.scrollbar_size_vertical and size.height > height
                and self.scroll_y <= size.height - height):
            return False
        forget_scrollbar_changes(self)
        bar = self.vertical_scrollbar
        bar.set_reactive(ScrollBar.window_virtual_size, size.height)
        bar.set_reactive(ScrollBar.window_size, height)
        self._repaint_bar(bar, drawing)
        return True

    def _rebuild(self, width: int) -> None:
        """The pieces of every entry, with their heights: rendered ones exact, others estimated."""
        pieces: list[Piece] = []
        heights: list[int] = []
        exact: list[bool] = []
        for entry in self.entries:
            parts = entry.parts()
            follows = [False] * len(parts)
            if entry.kind == "block":
                while len(entry.nonempty) < len(entry.segments):
                    entry.nonempty.append(bool(terminal_safe(entry.segments[len(entry.nonempty)]).strip()))
                later = bool(entry.tail.strip()) and bool(terminal_safe(entry.tail).strip())
                for i in range(len(entry.segments) - 1, -1, -1):
                    follows[i + 1] = later
                    later = later or entry.nonempty[i]
            for part, followed in zip(parts, follows):
                pieces.append((entry, part, followed))
                done = entry.rendered.get(part)
                if done is not None:
                    strips, gap = done
                    heights.append(len(strips) + (1 if gap and strips and followed else 0))
                    exact.append(True)
                else:
                    estimate = self._estimate_part(entry, part, width)
                    heights.append(estimate + (1 if estimate and followed and part != HEAD else 0))
                    exact.append(False)
        self._pieces, self._heights, self._exact = pieces, heights, exact
        self._starts = [0, *accumulate(heights)][:-1] if heights else []

    def _realize(self, i: int, width: int) -> bool:
        """Render piece `i`; whether its height changed from the estimate."""
        entry, part, followed = self._pieces[i]
        strips, gap = self._render_part(entry, part, width)
        self._exact[i] = True
        height = len(strips) + (1 if gap and strips and followed else 0)
        if height == self._heights[i]:
            return False
        self._heights[i] = height
        return True

    def _render_view(self, width: int, view: int, anchored: bool) -> None:
        """Render the pieces that the view shows: the last `view` lines when anchored, else
        from the scroll position (pieces above it keep their estimates, so what is shown
        does not move when they are rendered later)."""
        heights, exact = self._heights, self._exact
        if not self._pieces or view <= 0:
            return
        if anchored:
            covered, changed = 0, False
            for i in range(len(self._pieces) - 1, -1, -1):
                if covered >= view:
                    break
                if not exact[i]:
                    changed = self._realize(i, width) or changed
                covered += heights[i]
            if changed:
                self._starts = [0, *accumulate(heights)][:-1]
            return
        for _ in range(4):  # rendering changes heights, the end of the range with them
            total = self._starts[-1] + heights[-1]
            y = max(0, min(round(self.scroll_y), total - view))
            i = max(0, bisect_right(self._starts, y) - 1)
            at, changed = self._starts[i], False
            while i < len(self._pieces) and at < y + view:
                if not exact[i]:
                    changed = self._realize(i, width) or changed
                at += heights[i]
                i += 1
            if not changed:
                return
            self._starts = [0, *accumulate(heights)][:-1]

    # ------------------------------------------------------------------ drawing

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self._layout_key[0] if self._layout_key else self._width()
        i = bisect_right(self._starts, index) - 1
        if 0 <= i < len(self._pieces) and index - self._starts[i] < self._heights[i]:
            entry, part, _ = self._pieces[i]
            if not self._exact[i]:  # outside the view rendered at the last sync: next frame fixes it
                self._dirty = True
                self.refresh()
            strips, _ = self._render_part(entry, part, width)
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
        self._sync()
        index = self.scroll_offset.y + y
        i = bisect_right(self._starts, index) - 1
        if 0 <= i < len(self._pieces) and index - self._starts[i] < self._heights[i]:
            return self._pieces[i][0]
        return None

    # ------------------------------------------------------------------ input

    def on_click(self, event: events.Click) -> None:
        entry = self.entry_at(event.y)
        if entry is not None and entry.kind == "history":
            self.toggle(entry)

"""A vertical scrollbar drawn straight into strips, for the panes that stream text.

Why: a transcript that follows its newest text moves its scrollbar's thumb in almost every
frame, and Textual draws a scrollbar like any widget: a Rich renderable, rendered through a
console into lines, then every line through the widget's style cache. At 12 agents × 400
tokens/s (bench/tui_stream.py) that was about a millisecond per scrollbar per frame, a tenth
of the app's CPU. `ScrollBarRender.render_bar` already gives one segment per row; these are
the strips Textual would make of them (tests/tui/test_plain_scrollbar.py compares the two),
and the last ones are kept while the thumb does not move.
"""

from __future__ import annotations

from math import ceil

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.scrollbar import ScrollBar
from textual.strip import Strip
from textual.widget import Widget

from ..textual_compat import clear_style_cache, dirty_lines, install_vertical_scrollbar


class PlainScrollBar(ScrollBar):
    """A `ScrollBar` whose vertical lines are made from `render_bar`'s segments directly."""

    def __init__(self, vertical: bool = True, name: str | None = None, *, thickness: int = 1) -> None:
        super().__init__(vertical, name, thickness=thickness)
        self._drawn: tuple[tuple[object, ...], list[Strip]] | None = None
        self._made: tuple[tuple[object, ...], dict[Segment, Strip]] = ((), {})
        self._kept: tuple[tuple[object, ...], list[Strip]] | None = None
        """What the last frame asked (crop, size, range, position, hover, theme…) and was given."""

    def _bar_style(self) -> Style | None:
        """The style `ScrollBar.render` gives its renderable (None: draw the usual way)."""
        parent = self.parent
        if parent is None or self.screen.styles.scrollbar_color.a == 0:
            return None
        styles = parent.styles
        if self.grabbed:
            background, color = styles.scrollbar_background_active, styles.scrollbar_color_active
        elif self.mouse_over:
            background, color = styles.scrollbar_background_hover, styles.scrollbar_color_hover
        else:
            background, color = styles.scrollbar_background, styles.scrollbar_color
        if background.a < 1:
            base_background, _ = parent.background_colors
            background = base_background + background
        color = background + color
        return Style.from_color(color.rich_color, background.rich_color)

    def render_lines(self, crop: Region) -> list[Strip]:
        # Unchanged since the last frame (another pane's text put it in the frame): the same
        # lines, without working out its colours from its ancestors again. Anything else that
        # changes how it looks refreshes it (marks its lines dirty) or is in the key.
        frame = (crop, self.outer_size, self.window_virtual_size, self.window_size, self.position,
                 self.mouse_over, self.grabbed, self.app.theme, *map(id, self.get_line_filters()))
        if self._kept is not None and self._kept[0] == frame and not dirty_lines(self):
            return self._kept[1]
        self._kept = None
        style = self._bar_style()
        if not self.vertical or style is None or self.styles.has_rule("background") or self.opacity < 1:
            return super().render_lines(crop)
        width, height = self.outer_size  # a scrollbar has no border nor padding
        window = self.window_size if self.window_size < self.window_virtual_size else 0
        base = self.visual_style.rich_style
        filters = self.get_line_filters()
        look = (width, style, base, *map(id, filters))
        key = (height, ceil(self.window_virtual_size), ceil(window), self.position, look)
        if self._drawn is None or self._drawn[0] != key:
            bar = self.renderer.render_bar(
                size=height, virtual_size=ceil(self.window_virtual_size), window_size=ceil(window),
                position=self.position, thickness=width, vertical=True,
                back_color=style.bgcolor, bar_color=style.color,  # type: ignore[arg-type]  # both set above
            )
            # A bar has a handful of different rows (track above, thumb, its ends, track below):
            # each is made into a strip (and filtered) once while the bar looks the same.
            if self._made[0] != look:
                self._made = (look, {})
            made = self._made[1]
            strips: list[Strip] = []
            for row in bar.segments:
                if row.text == "\n":
                    continue
                strip = made.get(row)
                if strip is None:
                    strip = Strip([Segment(row.text, base + row.style if row.style else base)], width)
                    if filters:  # as the style cache applies them (the ANSI colour filter, on by default)
                        _, background = self.background_colors
                        for line_filter in filters:
                            strip = strip.apply_filter(line_filter, background)
                    made[row] = strip
                strips.append(strip)
            self._drawn = key, strips
        lines = self._drawn[1][crop.y:crop.bottom]
        if crop.x or crop.width != width:
            lines = [line.crop(crop.x, crop.right) for line in lines]
        # Drawn without the style cache: nothing in it is current now, and its dirty rows are
        # what says that the bar was refreshed since these lines.
        clear_style_cache(self)
        self._kept = (frame, lines)
        return lines

def plain_vertical_scrollbar(widget: Widget) -> ScrollBar:
    """`widget.vertical_scrollbar`, created as a `PlainScrollBar` (what Textual's property does)."""
    def make() -> ScrollBar:
        bar = PlainScrollBar(vertical=True, name="vertical", thickness=widget.scrollbar_size_vertical)
        bar.display = False
        return bar

    return install_vertical_scrollbar(widget, make)

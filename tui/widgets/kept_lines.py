"""Widgets that hand the compositor the lines they gave it last time when nothing changed.

Why: Textual's compositor redraws the smallest rectangle around everything that changed,
and asks every widget in that rectangle for its lines, changed or not. While 12 panes
stream, that rectangle is the whole grid in every frame, and each pane's border, header
row, labels and gauge went through `StylesCache.render_widget` again (their background
colours from all their ancestors, their title styles, their filters…) only to return the
lines it had cached: a tenth of the app's CPU at 12 agents × 400 tokens/s
(bench/tui_stream.py). Here a widget whose style cache still holds the very lines it
returned last time, for the same crop, returns that list as it is.
"""

from __future__ import annotations

from textual.containers import Grid, Horizontal, Vertical
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Label

from ..textual_compat import cached_lines, dirty_lines


class KeptLines(Widget):
    """Put last among the bases (`class KeptLabel(Label, KeptLines)`): Textual takes default
    CSS from the first base's line only, and being a Widget this class still comes before
    Widget in the method resolution order, so its `render_lines` is the one used. Only for
    widgets that draw through Textual's style cache (none of their classes overrides
    `render_lines`)."""

    _kept: Kept | None = None

    def render_lines(self, crop: Region) -> list[Strip]:
        key = frame_key(self, crop)
        strips = still_kept(self, self._kept, key)
        if strips is None:
            strips = super().render_lines(crop)
            self._kept = keep(self, key, strips)
        return strips


Kept = tuple[tuple[object, ...], list[Strip | None], list[Strip]]
"""What a widget's last `render_lines` was asked (crop, size, hover style, line filters), the
style cache's lines it was made of, and what it returned."""


def frame_key(widget: Widget, crop: Region) -> tuple[object, ...]:
    """What the lines a widget returns depend on besides its style cache."""
    return (crop, widget.outer_size, widget.hover_style, *map(id, widget.app.get_line_filters()))


def still_kept(widget: Widget, kept: Kept | None, key: tuple[object, ...]) -> list[Strip] | None:
    """The lines the widget returned last time, if they still hold (else None).

    They hold while the style cache holds the same lines: Textual marks them dirty (or clears
    them) on every refresh, style or size change. The line filters (the ANSI colour filter,
    on by default) are the same objects while the app's colour mode is, and a strip keeps
    what a filter made of it."""
    if kept is not None and kept[0] == key and not dirty_lines(widget):
        lines = cached_lines(widget)
        crop = key[0]
        assert isinstance(crop, Region)
        if all(lines.get(y) is strip for y, strip in zip(crop.line_range, kept[1])):
            return kept[2]
    return None


def keep(widget: Widget, key: tuple[object, ...], strips: list[Strip]) -> Kept:
    """What `still_kept` compares the next call with."""
    crop = key[0]
    assert isinstance(crop, Region)
    lines = cached_lines(widget)
    return (key, [lines.get(y) for y in crop.line_range], strips)

class KeptLabel(Label, KeptLines):
    """A `Label` (CSS that names Label still applies) that keeps its lines."""


class KeptHorizontal(Horizontal, KeptLines):
    """A `Horizontal` that keeps its lines."""


class KeptVertical(Vertical, KeptLines):
    """A `Vertical` that keeps its lines."""


class KeptGrid(Grid, KeptLines):
    """A `Grid` that keeps its lines."""

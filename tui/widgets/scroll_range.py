"""A scrolling widget whose content changes its scroll range, never its region.

Textual's `virtual_size` reactive asks for a layout of the whole screen whenever it changes:
RichLog sets it for every line written, Input for every key typed. Where CSS fixes the
widget's size, only the scroll range (and the scrollbar) follows the content, so this
mixin sets it without the layout. At 12 agents × 400 tokens/s those layouts were most of
a frame's CPU (bench/tui_stream.py), and a key typed waited for one before it showed.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.reactive import Reactive
from textual.widget import Widget

from ..textual_compat import set_scroll_range


class ScrollRangeOnly(Widget):
    """Put last among the bases (`class EventLog(RichLog, ScrollRangeOnly)`): Textual takes
    CSS and component classes from the first base only, and being a Widget this class comes
    before Widget in the method resolution order, so its `virtual_size` is the one used."""

    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)

    def watch_virtual_size(self, size: Size) -> None:
        if self.container_size:
            set_scroll_range(self, size)  # the scrollbar, as the layout would have set it

"""Every use of Textual's private API, in one place.

The widgets reach under Textual's public surface in a few spots, each for a measured speed-up
or a fix of a layout race (their modules say which): a pane that streams repaints one border
row, a transcript that changes its scroll range without laying out the screen (and joins the
next frame without a message to the screen), a widget that hands back the lines it drew last
frame. Those attributes and methods are not Textual's promise, so they are named only here,
and `tests/tui/test_textual_compat.py` checks each one against the installed Textual: an
upgrade that renames or reshapes one fails there, with the hook's name, instead of somewhere
in a frame.

Checked against Textual `CHECKED_AGAINST`. Besides the functions below, two widgets override a
private message handler of the class they extend, which Textual calls in place of its own:
`CommandInput._on_key` (Input's) and `SeatEditor._on_paste` (TextArea's); the test checks those
handlers still exist where they are overridden.
"""

from __future__ import annotations

from collections.abc import Callable
from weakref import WeakKeyDictionary

from textual.geometry import Size
from textual.scrollbar import ScrollBar
from textual.strip import Strip
from textual.widget import Widget

CHECKED_AGAINST = ("8.2.8",)
"""The Textual versions these hooks were read against (the test names them when one breaks)."""

OVERRIDDEN_HANDLERS = (("textual.widgets", "Input", "_on_key"), ("textual.widgets", "TextArea", "_on_paste"))
"""Private handlers moot's widgets override: (module, class, method) of the Textual class."""


# ------------------------------------------------------------------ the style cache

def cached_lines(widget: Widget) -> dict[int, Strip]:
    """The lines a widget's style cache holds, by row (Textual redraws rows missing from it)."""
    return widget._styles_cache._cache


def dirty_lines(widget: Widget) -> set[int]:
    """The rows the style cache must draw again (marked on every refresh, style or size change)."""
    return widget._styles_cache._dirty_lines


def clear_style_cache(widget: Widget) -> None:
    """Forget every row the style cache drew (they were drawn from other text or another width)."""
    widget._styles_cache.clear()


def repaint_in_next_frame(widget: Widget) -> None:
    """What `widget.refresh()` does, the widget handed straight to its screen's next frame.

    Textual's refresh marks the widget and asks its own message queue for an idle turn, whose
    handler posts an `Update` message to the screen, whose handler adds the widget to the
    screen's dirty widgets: two trips through the event loop and two messages dispatched, for
    each pane that streams, in each batch of text. Here the widget joins the dirty widgets at
    once and only the screen is prompted. A widget not shown on a screen that draws refreshes
    as Textual does."""
    screen = widget.screen if widget.is_mounted and widget.display and not widget._closing else None
    if screen is None or screen not in screen._compositor:
        widget.refresh()
        return
    widget._layout_cache.clear()
    widget._set_dirty()
    widget.clear_cached_dimensions()
    widget._rich_style_cache.clear()
    screen._dirty_widgets.add(widget)
    screen.check_idle()


def repaint_after_this_frame(widget: Widget) -> None:
    """`repaint_in_next_frame` for a widget asked to repaint while the frame is being drawn
    (the screen forgets its dirty widgets once the frame is out, so it cannot join them now).

    Textual's refresh would send the widget a prompt and, at its idle turn, the screen an
    `Update` message: for every scrollbar that moves, in every frame. Here the widgets asked
    for during one frame wait together, and one callback on the screen's queue, run once the
    frame is out, puts them all in the next one."""
    screen = widget.screen if widget.is_mounted and not widget._closing else None
    if screen is None or screen not in screen._compositor:
        widget.refresh()
        return
    waiting = _after_frame.get(screen)
    if waiting is None:
        waiting = _after_frame[screen] = []
        screen.call_next(_repaint_waiting, screen)
    waiting.append(widget)


_after_frame: WeakKeyDictionary[Widget, list[Widget]] = WeakKeyDictionary()
"""Per screen, the widgets that asked during this frame to be in the next."""


def _repaint_waiting(screen: Widget) -> None:
    for widget in _after_frame.pop(screen, []):
        repaint_in_next_frame(widget)


def nothing_queued(widget: Widget) -> bool:
    """The widget's message queue is running and holds nothing (no message, none taken out and
    held back, no `call_next` callback): work for it done now comes after all it was sent."""
    if not widget.is_running or not widget.is_mounted or widget._closing or widget.message_queue_size:
        return False
    return widget._pending_message is None and not widget._next_callbacks


# ------------------------------------------------------------------ scrolling

def set_scroll_range(widget: Widget, size: Size) -> None:
    """The scrollbars follow a new virtual size, as a layout of the widget would set them,
    without laying out the screen."""
    widget._scroll_update(size)


def container_height(widget: Widget) -> int:
    """The height of the widget's content area as the last layout gave it."""
    return widget._container_size.height


def forget_scrollbar_changes(widget: Widget) -> None:
    """Drop the scrollbar changes Textual queued for the next layout (the caller set them itself)."""
    widget._scrollbar_changes.clear()


def anchor_released(widget: Widget) -> bool:
    """The user scrolled away from an anchored widget's end (Textual stops following it)."""
    return bool(getattr(widget, "_anchor_released", False))


def follow_anchor_again(widget: Widget) -> None:
    """Scrolled back down to the end: an anchored widget follows the newest line again (what
    Textual's own widgets do in their scroll watcher and ScrollView's leaves out)."""
    if widget._anchored and widget._anchor_released:
        widget._check_anchor()


def install_vertical_scrollbar(widget: Widget, make: Callable[[], ScrollBar]) -> ScrollBar:
    """`widget.vertical_scrollbar`, created by `make` the first time (what Textual's property
    does with its own class)."""
    if widget._vertical_scrollbar is None:
        bar = make()
        widget._vertical_scrollbar = bar
        widget.app._start_widget(widget, bar)
    return widget._vertical_scrollbar


# ------------------------------------------------------------------ layout and borders

def layout_pending(widget: Widget) -> bool:
    """A layout of this widget was asked for and has not run yet."""
    return widget._layout_required


def invalidate_box_model(widget: Widget) -> None:
    """Make the next layout measure the widget again instead of reusing the size it cached
    (Textual keys that cache by a counter it bumps only when no layout was pending)."""
    widget._layout_updates += 1


def set_border_subtitle_text(widget: Widget, markup: str) -> None:
    """The bottom border's text, stored as Textual's `border_subtitle` setter stores it but
    without the refresh of the whole widget the setter asks for."""
    widget._border_subtitle = widget.render_str(markup).expand_tabs(4).split()[0]

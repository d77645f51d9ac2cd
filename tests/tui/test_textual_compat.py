"""Each private Textual hook the widgets use (`tui/textual_compat.py`), checked on real mounted
widgets of the installed Textual: after an upgrade, the hook that changed fails here by name."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version

import pytest
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.scrollbar import ScrollBar
from textual.widgets import Label, Static

from moot.tui import textual_compat as compat

TEXTUAL = version("textual")


@contextmanager
def hook(name: str) -> Iterator[None]:
    """Turn any failure into one message: which hook, which Textual, which versions it was read against."""
    try:
        yield
    except (AttributeError, AssertionError, TypeError, KeyError) as exc:
        pytest.fail(f"Textual {TEXTUAL}: the private hook `{name}` in tui/textual_compat.py no longer works "
                    f"(checked against {', '.join(compat.CHECKED_AGAINST)}): {exc!r}")


class Lines(App[None]):
    def compose(self) -> ComposeResult:
        yield Label("The committee weighs the second proposal before lunch.", id="label")
        with VerticalScroll(id="scroll"):
            for i in range(40):
                yield Static(f"Line {i}: the archive keeps every reply it was sent.")


def test_the_installed_textual_is_one_the_hooks_were_read_against() -> None:
    """Not a failure of a hook, a reminder: a new Textual runs the hooks' tests and, once they
    pass, joins `CHECKED_AGAINST`."""
    assert TEXTUAL in compat.CHECKED_AGAINST, (
        f"Textual {TEXTUAL} is not among {compat.CHECKED_AGAINST}: run tests/tui/test_textual_compat.py "
        "and add it to CHECKED_AGAINST in tui/textual_compat.py once they pass")


async def test_style_cache_lines_dirty_rows_and_clearing() -> None:
    async with Lines().run_test(size=(80, 24)) as pilot:
        label = pilot.app.query_one("#label", Label)
        await pilot.pause()
        with hook("cached_lines"):
            lines = compat.cached_lines(label)
            assert isinstance(lines, dict) and lines, "a drawn label has rows in its style cache"
            assert all(isinstance(y, int) for y in lines)
        with hook("dirty_lines"):
            label.refresh()
            assert isinstance(compat.dirty_lines(label), set) and compat.dirty_lines(label)
            await pilot.pause()
            assert not compat.dirty_lines(label), "drawn again: nothing left dirty"
        with hook("clear_style_cache"):
            compat.clear_style_cache(label)
            assert compat.cached_lines(label) == {}


async def test_scroll_range_without_a_layout() -> None:
    async with Lines().run_test(size=(80, 24)) as pilot:
        scroll = pilot.app.query_one("#scroll", VerticalScroll)
        await pilot.pause()
        with hook("container_height"):
            assert compat.container_height(scroll) == scroll.container_size.height > 0
        with hook("set_scroll_range"):
            tall = Size(scroll.virtual_size.width, 500)
            scroll.set_reactive(VerticalScroll.virtual_size, tall)
            compat.set_scroll_range(scroll, tall)
            assert scroll.max_scroll_y == 500 - compat.container_height(scroll)
            assert scroll.vertical_scrollbar.window_virtual_size == 500
        with hook("forget_scrollbar_changes"):
            scroll._scrollbar_changes.add((True, False))
            compat.forget_scrollbar_changes(scroll)
            assert scroll._scrollbar_changes == set()


async def test_the_anchor_is_released_and_followed_again() -> None:
    async with Lines().run_test(size=(80, 24)) as pilot:
        scroll = pilot.app.query_one("#scroll", VerticalScroll)
        await pilot.pause()
        scroll.anchor()
        await pilot.pause()
        with hook("anchor_released"):
            assert compat.anchor_released(scroll) is False
            scroll.release_anchor()
            assert compat.anchor_released(scroll) is True
        with hook("follow_anchor_again"):
            scroll.scroll_home(animate=False, immediate=True)
            await pilot.pause()
            compat.follow_anchor_again(scroll)
            assert compat.anchor_released(scroll), "still away from the end: still released"
            scroll.scroll_end(animate=False, immediate=True)
            await pilot.pause()
            scroll._anchor_released = True  # as a wheel that came back down leaves it
            compat.follow_anchor_again(scroll)
            assert compat.anchor_released(scroll) is False


async def test_a_vertical_scrollbar_of_our_own() -> None:
    async with Lines().run_test(size=(80, 24)) as pilot:
        label = pilot.app.query_one("#label", Label)
        made: list[ScrollBar] = []

        def make() -> ScrollBar:
            made.append(ScrollBar(vertical=True, name="vertical"))
            return made[-1]

        with hook("install_vertical_scrollbar"):
            bar = compat.install_vertical_scrollbar(label, make)
            assert compat.install_vertical_scrollbar(label, make) is bar and made == [bar]
            assert label.vertical_scrollbar is bar
            await pilot.pause()
            assert bar.parent is label and bar.is_mounted


async def test_layout_pending_and_a_fresh_measure() -> None:
    async with Lines().run_test(size=(80, 24)) as pilot:
        label = pilot.app.query_one("#label", Label)
        await pilot.pause()
        with hook("layout_pending"):
            assert compat.layout_pending(label) is False
            label.refresh(layout=True)
            assert compat.layout_pending(label) is True
            await pilot.pause()
            assert compat.layout_pending(label) is False
        with hook("invalidate_box_model"):
            label.update("A much longer line the chair reads out to the whole committee.")
            label.refresh(layout=True)
            size = label.container_size
            first = label._get_box_model(size, size, label.app.size.width, label.app.size.height)
            label._renderable = None
            label.update("Short.")
            compat.invalidate_box_model(label)
            second = label._get_box_model(size, size, label.app.size.width, label.app.size.height)
            assert second.width < first.width, "measured again, not the cached size of the longer text"


async def test_a_repaint_handed_to_the_screen() -> None:
    async with Lines().run_test(size=(80, 24)) as pilot:
        label = pilot.app.query_one("#label", Label)
        await pilot.pause()
        with hook("repaint_in_next_frame"):
            label.update("The second proposal waits for the committee.", layout=False)
            await pilot.pause()
            compat.repaint_in_next_frame(label)
            assert label in pilot.app.screen._dirty_widgets and compat.dirty_lines(label)
            await pilot.pause()
            assert not compat.dirty_lines(label), "drawn in the next frame"
            assert "The second proposal" in "".join(strip.text for strip in compat.cached_lines(label).values())


async def test_repaint_after_this_frame() -> None:
    async with Lines().run_test(size=(80, 24)) as pilot:
        label = pilot.app.query_one("#label", Label)
        await pilot.pause()
        compositor = pilot.app.screen._compositor
        painted: list[set[object]] = []
        update_widgets = compositor.update_widgets

        def recording(widgets: set) -> None:  # type: ignore[type-arg]
            painted.append(set(widgets))
            update_widgets(widgets)

        compositor.update_widgets = recording  # type: ignore[method-assign]
        with hook("repaint_after_this_frame"):
            compat.repaint_after_this_frame(label)
            compat.repaint_after_this_frame(label)  # asked twice: painted in one frame
            for _ in range(50):  # the next frame, however loaded the machine is
                await pilot.pause(0.01)
                if any(label in widgets for widgets in painted):
                    break
            assert [widgets for widgets in painted if label in widgets], painted
            assert not compat.dirty_lines(label), "drawn in a later frame"


async def test_nothing_queued() -> None:
    async with Lines().run_test(size=(80, 24)) as pilot:
        label = pilot.app.query_one("#label", Label)
        await pilot.pause()
        with hook("nothing_queued"):
            assert compat.nothing_queued(label)
            label.call_later(lambda: None)
            assert not compat.nothing_queued(label)
            await pilot.pause()
            assert compat.nothing_queued(label)
            label.call_next(lambda: None)
            assert not compat.nothing_queued(label)
            await pilot.pause()
            assert compat.nothing_queued(label)
        assert not compat.nothing_queued(Label("not mounted"))


async def test_the_border_subtitle_without_a_refresh() -> None:
    async with Lines().run_test(size=(80, 24)) as pilot:
        label = pilot.app.query_one("#label", Label)
        await pilot.pause()
        with hook("set_border_subtitle_text"):
            compat.set_border_subtitle_text(label, "[b]3 turns[/b] · 12s")
            stored = label._border_subtitle
            label.border_subtitle = "[b]3 turns[/b] · 12s"  # what Textual's own setter stores
            assert stored == label._border_subtitle and stored is not None and stored.plain == "3 turns · 12s"


@pytest.mark.parametrize(("module", "cls", "method"), compat.OVERRIDDEN_HANDLERS)
def test_the_private_handlers_our_widgets_override_still_exist(module: str, cls: str, method: str) -> None:
    with hook(f"{cls}.{method}"):
        assert callable(getattr(getattr(importlib.import_module(module), cls), method))

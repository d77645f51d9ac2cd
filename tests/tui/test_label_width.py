"""A label updated while a layout of it is pending keeps the width of its newest text
(tui/widgets/label_text.py: the header's "turn 12/16" was drawn as "turn 12/1")."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label

from moot.tui.widgets.label_text import update_label


class Header(App[None]):
    CSS = "Horizontal { height: 1; } Label { width: auto; margin-right: 1; }"

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Label("", id="round")
            yield Label("critiques", id="phase")


async def _width_after_two_updates(update_second) -> int:  # type: ignore[no-untyped-def]
    app = Header()
    async with app.run_test(size=(60, 5)) as pilot:
        await pilot.pause()
        label = app.query_one("#round", Label)
        label.update("turn 9/16")
        # The screen lays out before the label's idle has passed its request on (as when
        # the screen takes events a loop step at a time), the row arranged anew because a
        # sibling asked for it; then the text changes again.
        label.parent._clear_arrangement_cache()  # type: ignore[union-attr]
        app.screen._refresh_layout()
        update_second(label, "turn 12/16")
        await pilot.pause()
        await pilot.pause()
        return label.region.width


async def test_a_second_update_before_the_layout_gets_the_width_of_its_text() -> None:
    assert await _width_after_two_updates(lambda label, text: update_label(label, text)) == len("turn 12/16")


async def test_textual_still_keeps_the_stale_width_without_the_helper() -> None:
    """If this fails, Textual measures a label again after every update and `update_label`
    can go back to `Label.update`."""
    assert await _width_after_two_updates(lambda label, text: label.update(text)) == len("turn 9/16")


async def test_same_width_text_is_shown_without_a_layout() -> None:
    app = Header()
    async with app.run_test(size=(60, 5)) as pilot:
        label = app.query_one("#round", Label)
        update_label(label, "turn 9/16")
        await pilot.pause()
        layouts: list[int] = []
        refresh_layout = app.screen._refresh_layout
        app.screen._refresh_layout = lambda *a, **k: (layouts.append(1), refresh_layout(*a, **k))  # type: ignore[method-assign]
        update_label(label, "turn 8/16", "turn 9/16")
        await pilot.pause()
        assert str(label.render()) == "turn 8/16" and label.region.width == 9
        assert layouts == []

"""Find in the messages view (`/context AGENT ROUND`, then `/`): every match it lands on is
scrolled into view and highlighted, at every size a newcomer tries; the first esc ends the
search, the second closes the view (as the README says)."""

from __future__ import annotations

import pytest
from textual.widgets import Input, Label

from moot.core.events import Event
from moot.tui.app import create_app
from moot.tui.screens.context import ContextScreen, MessageText, find_all
from moot.tui.screens.debate import DebateScreen
from tests.tui.scripted import ScriptedRuntime

from .conftest import command, fixed_clock, settle

SIZES = pytest.mark.parametrize("size", [(80, 24), (100, 30), (120, 36)], ids=["80x24", "100x30", "120x36"])
WORD = "outbox"


def match_row(area: MessageText) -> int:
    """The row of the wrapped text where the selected match starts."""
    return area.wrapped_document.location_to_offset(area.selection.start).y


def on_screen(area: MessageText) -> bool:
    top = area.scroll_offset.y
    return top <= match_row(area) < top + area.scrollable_content_region.height


def status(inspector: ContextScreen) -> str:
    return str(inspector.query_one("#ctx-find-status", Label).render())


@SIZES
async def test_find_scrolls_to_each_match_and_the_first_esc_ends_the_search(recorded: list[Event],
                                                                          size: tuple[int, int]) -> None:
    runtime = ScriptedRuntime(events=recorded, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, runtime)
        await command(pilot, "/context architect 2")
        inspector = app.screen
        assert isinstance(inspector, ContextScreen)
        area = inspector.query_one(MessageText)
        expected = find_all(area.text, WORD)
        assert len(expected) >= 3

        await pilot.press("slash", *WORD)
        await pilot.pause()
        assert isinstance(app.focused, Input) and inspector.match_at == 0
        assert area.selected_text.casefold() == WORD and on_screen(area)
        await pilot.press("enter")
        await pilot.pause()
        assert area.has_focus and status(inspector).startswith(f"2 of {len(expected)}")
        assert area.selected_text.casefold() == WORD and on_screen(area)
        below_the_first_screen = match_row(area) >= area.scrollable_content_region.height
        for n in range(2, len(expected) + 1):  # n steps through every match, wrapping round
            await pilot.press("n")
            await pilot.pause()
            assert status(inspector).startswith(f"{(n % len(expected)) + 1} of {len(expected)}")
            assert area.selected_text.casefold() == WORD and on_screen(area), n
            below_the_first_screen |= match_row(area) >= area.scrollable_content_region.height
        assert below_the_first_screen  # the view had to move for at least one of them
        await pilot.press("N")
        await pilot.pause()
        assert status(inspector).startswith(f"{len(expected)} of {len(expected)}") and on_screen(area)

        # The first esc ends the search: the bar and the highlight go, the text stays put.
        await pilot.press("n")
        await pilot.pause()
        where = area.scroll_offset.y
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ContextScreen)
        assert not inspector.query_one("#ctx-find").display and area.selected_text == ""
        assert area.scroll_offset.y == where and area.has_focus
        await pilot.press("n")  # no search: n does nothing
        assert area.selected_text == "" and inspector.match_at == -1
        # `/` brings the last search back; esc while typing ends it too
        await pilot.press("slash")
        await pilot.pause()
        assert inspector.query_one("#ctx-find-input", Input).value == WORD and inspector.match_at == 0
        await pilot.press("escape")
        assert isinstance(app.screen, ContextScreen) and area.has_focus
        # the second esc closes the view
        await pilot.press("escape")
        assert isinstance(app.screen, DebateScreen)


def test_the_found_match_is_highlighted_at_80x24(recorded: list[Event], snap_compare) -> None:  # type: ignore[no-untyped-def]
    runtime = ScriptedRuntime(events=recorded, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)
        await command(pilot, "/context architect 2")
        await pilot.press("slash", *WORD, "enter", "n")
        await settle(pilot, rounds=1)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


async def test_a_search_with_no_match_is_said_literally(recorded: list[Event]) -> None:
    """What a person searches for is text, never markup: "[/x]" found nowhere is said as typed
    (drawn as markup, the notice raised MarkupError and the app ended with a traceback)."""
    from textual.app import Notify
    from textual.widgets._toast import Toast

    notices: list[Notify] = []
    runtime = ScriptedRuntime(events=recorded, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    hook = lambda m: notices.append(m) if isinstance(m, Notify) else None  # noqa: E731
    async with app.run_test(size=(100, 30), message_hook=hook) as pilot:
        await settle(pilot, runtime)
        await command(pilot, "/context architect 2")
        query = "[/x] zq[b]"
        await pilot.press("slash", *query, "enter")
        await pilot.pause()
        assert isinstance(app.screen, ContextScreen) and app.screen.matches == []
    [notice] = notices
    drawn = Toast(notice.notification).render()  # what the toast draws, the way Textual draws it
    assert str(drawn) == f"no match for {query!r}"


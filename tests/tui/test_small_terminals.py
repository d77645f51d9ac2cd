"""A 4-agent debate in any terminal from 80×24 up: the focus layout, the header, the footer keys."""

from __future__ import annotations

from textual.widgets import Footer, Label
from textual.widgets._footer import FooterKey

from moot.core.events import Event
from moot.tui.app import create_app
from moot.tui.screens.debate import DebateScreen, needs_focus_layout
from moot.tui.widgets.agent_pane import AgentPane
from moot.tui.widgets.agent_roster import AgentRoster
from tests.tui.scripted import ScriptedRuntime

from .conftest import fixed_clock, settle, upto


def midstream(recorded: list[Event]) -> list[Event]:
    """Round 1's proposals done, its critiques in flight."""
    return upto(recorded, lambda e: e.type == "phase_started" and e.round == 1 and e.phase == "critique")


def shown_panes(screen: DebateScreen) -> list[AgentPane]:
    return [p for p in screen.panes.values() if p.display and p.region.area > 0]


def footer_keys(screen: DebateScreen) -> list[str]:
    """The keys the footer shows inside the screen's width, left to right."""
    width = screen.size.width
    keys = [k for k in screen.query_one(Footer).query(FooterKey) if k.region.right <= width and k.region.width]
    return [k.key for k in sorted(keys, key=lambda k: k.region.x)]


def test_focus_layout_only_when_panes_cannot_show_text() -> None:
    assert needs_focus_layout(5, 80, 24 - 13)
    assert needs_focus_layout(5, 100, 30 - 13)
    assert not needs_focus_layout(5, 160, 48 - 13)
    assert not needs_focus_layout(2, 80, 24 - 13)  # two panes side by side still show text
    assert not needs_focus_layout(1, 20, 5)


async def test_80x24_shows_one_agent_with_text_and_the_others_in_the_roster(recorded4) -> None:  # type: ignore[no-untyped-def]
    runtime = ScriptedRuntime(events=midstream(recorded4), clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, runtime)
        screen = app.screen
        assert isinstance(screen, DebateScreen) and screen.compact
        [pane] = shown_panes(screen)
        assert pane.info.id == "architect" and pane.has_focus
        body = pane.transcript
        assert body.region.height >= 8 and body.virtual_size.height > 5  # text, not just the gauge
        roster = screen.query_one(AgentRoster)
        assert roster.display and roster.region.width > 0
        assert list(roster.rows) == ["architect", "performance", "kiss", "security", "judge"]
        assert roster.rows["architect"].has_class("-focused")
        # The title keeps the problem's start; help and quit are the footer's first keys.
        title = str(screen.query_one("#hdr-title", Label).render())
        assert title.startswith("Design a URL short")
        assert footer_keys(screen)[:2] == ["question_mark", "q"]

        await pilot.press("3")
        [pane] = shown_panes(screen)
        assert pane.info.id == "kiss" and roster.rows["kiss"].has_class("-focused")
        await pilot.press("right_square_bracket")
        assert shown_panes(screen)[0].info.id == "security"
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert shown_panes(screen)[0].info.id == "performance"
        await pilot.press("0")
        assert shown_panes(screen)[0].info.id == "judge"
        await pilot.click("#row-architect")
        await pilot.pause()
        assert shown_panes(screen)[0].info.id == "architect"
        # tab moves focus among what is shown, and the roster follows the focused pane
        assert screen.current == "architect"


async def test_resizing_switches_between_grid_and_focus_layout(recorded4) -> None:  # type: ignore[no-untyped-def]
    runtime = ScriptedRuntime(events=midstream(recorded4), clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, runtime)
        screen = app.screen
        assert isinstance(screen, DebateScreen) and not screen.compact
        assert len(shown_panes(screen)) == 5
        assert not screen.query_one(AgentRoster).display or screen.query_one(AgentRoster).region.area == 0
        assert "right_square_bracket" not in footer_keys(screen)  # next agent: only in the focus layout
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert screen.compact and len(shown_panes(screen)) == 1
        assert "right_square_bracket" in [b.key for b in screen.query_one(Footer).query(FooterKey)]
        await pilot.press("2")
        await pilot.resize_terminal(160, 48)
        await settle(pilot)
        assert not screen.compact and len(shown_panes(screen)) == 5
        assert screen.focused is screen.panes["performance"]  # the agent picked stays focused


async def test_conversation_at_80x24_keeps_transcript_and_roster(recorded_conversation) -> None:  # type: ignore[no-untyped-def]
    events = upto(recorded_conversation, lambda e: e.type == "contribution_added" and e.contribution.round == 10)
    runtime = ScriptedRuntime(events=events, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, runtime)
        screen = app.screen
        assert isinstance(screen, DebateScreen) and screen.conversation is not None
        conv = screen.conversation
        roster = screen.query_one(AgentRoster)
        assert conv.region.width >= 40 and conv.region.height >= 12
        assert roster.region.width > 0 and len(roster.rows) == 5
        assert footer_keys(screen)[:2] == ["question_mark", "q"]
        assert str(screen.query_one("#hdr-round", Label).render()) == "turn 10/16"

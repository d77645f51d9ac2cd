"""Two numbers a newcomer compared: the pane's gauge (`1.9k / 7k`) and `/context` name the same
budget — the view's — and `/context` adds the window it sits in; and the footer's keys fit 80
columns."""

from __future__ import annotations

from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from moot.core.context.index import DebateIndex
from moot.core.context.outlook import outlook
from moot.core.events import Event
from moot.tui.app import create_app
from moot.tui.format import k
from moot.tui.screens.context_overview import AgentOutlook, ContextOverviewScreen
from moot.tui.screens.debate import DebateScreen
from tests.tui.scripted import ScriptedRuntime
from tests.tui.test_snapshots import midstream

from .conftest import command, fixed_clock, settle, upto


async def test_gauge_and_context_overview_say_which_budget(recorded4: list[Event]) -> None:
    events = upto(recorded4, lambda e: e.type == "phase_started" and e.round == 2 and e.phase == "refinement")
    runtime = ScriptedRuntime(events=events, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, runtime)
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        gauge = screen.panes["kiss"].gauge
        assert gauge.tokens is not None
        view = outlook(screen.state, DebateIndex(screen.state), "kiss").view
        assert view is not None and view.tokens.total == gauge.tokens.total
        assert gauge.label == f"{k(view.tokens.total)} / {k(view.budget)}"
        assert "the window less the tokens kept for the answer" in str(gauge.tooltip)
        await pilot.press("c")
        await pilot.pause()
        overview = app.screen
        assert isinstance(overview, ContextOverviewScreen)
        widget = next(w for w in overview.query(AgentOutlook) if w.info.id == "kiss")
        text = " ".join(str(widget.render()).split())
        window = view.budget + view.max_tokens
        assert f"view {k(view.tokens.total)} of {k(view.budget)} · window {k(window)}" in text
        assert k(view.budget) != k(window)  # two budgets, each named


async def test_the_footer_fits_80_columns(recorded4: list[Event]) -> None:
    runtime = ScriptedRuntime(events=midstream(recorded4), clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, runtime)
        screen = app.screen
        assert isinstance(screen, DebateScreen) and screen.state.status == "running"
        footer = screen.query_one(Footer)
        shown = [key for key in footer.query(FooterKey) if key.region.width]
        assert {key.key for key in shown} >= {"question_mark", "q", "s", "c", "p", "x", "slash"}
        assert all(key.region.right <= 80 for key in shown), [(key.key, key.region) for key in shown]
        assert footer.max_scroll_x == 0  # nothing cut off to scroll to
        assert "ctrl+p" not in {key.key for key in shown}  # the palette's key gives way (ctrl+p works)
        await pilot.resize_terminal(120, 36)
        await settle(pilot)
        assert "ctrl+p" in {key.key for key in footer.query(FooterKey) if key.region.width}


async def test_the_roster_gauges_are_as_wide_as_each_other(recorded4: list[Event]) -> None:
    """At 80x24 the agents' list shows a gauge per row; the judge's, before its first call
    (`– / –`), was longer than the agents' beside their numbers."""
    from moot.tui.widgets.agent_roster import AgentRoster
    from moot.tui.widgets.token_gauge import TokenGauge

    runtime = ScriptedRuntime(events=midstream(recorded4), clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, runtime)
        roster = app.screen.query_one(AgentRoster)
        gauges = {row.info.id: row.query_one(TokenGauge) for row in roster.rows.values()}
        drawn = {a: g.render().plain for a, g in gauges.items()}
        assert "– / –" in drawn["judge"] and "k/" in drawn["kiss"], drawn
        bars = {a: text.index("▏") for a, text in drawn.items()}
        assert len(set(bars.values())) == 1, drawn


async def test_the_messages_view_footer_fits_80_columns(recorded4: list[Event]) -> None:
    """Every key the messages view shows is whole at 80 columns (its last one read `Next ro`)."""
    runtime = ScriptedRuntime(events=midstream(recorded4), clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, runtime)
        await command(pilot, "/context kiss")
        await settle(pilot)
        screen = app.screen
        assert type(screen).__name__ == "ContextScreen"
        footer = screen.query_one(Footer)
        shown = [key for key in footer.query(FooterKey) if key.region.width]
        assert {key.key for key in shown} >= {"left", "right", "escape", "slash", "left_square_bracket",
                                              "right_square_bracket", "comma", "full_stop"}
        assert all(key.region.right <= 80 for key in shown), [(key.key, key.region) for key in shown]
        assert footer.max_scroll_x == 0  # nothing cut off to scroll to

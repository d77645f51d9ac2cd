"""The context overview (`/context`, key c) and the exact-messages inspector (enter, i)."""

from __future__ import annotations

from textual.widgets import Input, Label, ListView

from moot.core.context.index import DebateIndex
from moot.core.context.outlook import outlook
from moot.core.events import Event
from moot.core.storage.state import apply, new_state
from moot.tui.app import create_app
from moot.tui.screens.context import ContextScreen, MessageText, find_all
from moot.tui.screens.context_overview import AgentOutlook, ContextOverviewScreen
from moot.tui.screens.debate import DebateScreen
from tests.tui.scripted import ScriptedRuntime

from .conftest import command, feedback, fixed_clock, settle, upto


def folded(events: list[Event]):  # type: ignore[no-untyped-def]
    state = new_state("")
    for e in events:
        apply(state, e)
    return state


def round2_critiques(recorded: list[Event]) -> list[Event]:
    return upto(recorded, lambda e: e.type == "phase_started" and e.round == 2 and e.phase == "refinement")


def outlook_text(screen: ContextOverviewScreen, agent_id: str) -> str:
    widget = next(w for w in screen.query(AgentOutlook) if w.info.id == agent_id)
    return " ".join(str(widget.render()).split())  # the tier table pads its columns


def title(screen) -> str:  # type: ignore[no-untyped-def]
    return str(screen.query_one("#ctx-title", Label).render())


async def test_overview_breaks_each_view_down_and_says_when_the_next_summary_comes(recorded4) -> None:  # type: ignore[no-untyped-def]
    events = round2_critiques(recorded4)
    state = folded(events)
    runtime = ScriptedRuntime(events=events, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, runtime)
        await pilot.press("c")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ContextOverviewScreen)
        assert [w.info.id for w in screen.query(AgentOutlook)] == ["architect", "performance", "kiss", "security",
                                                                   "judge"]
        legend = str(screen.query_one("Legend").render())
        for word in ("system", "summary", "history", "task", "free", "reserved for the answer"):
            assert word in legend
        look = outlook(state, DebateIndex(state), "kiss")
        view = look.view
        assert view is not None
        text = outlook_text(screen, "kiss")
        room = view.budget + view.max_tokens
        assert f"R2 critique → {view.target_agent_id}" in text
        assert f"system {view.tokens.system} {round(100 * view.tokens.system / room)}%" in text
        assert f"answer {view.max_tokens // 1000}k" in text
        chars, tokens = look.triggers
        # (at this point of the recorded debate, kiss's history may already have passed the threshold)
        assert (f"next summary: {chars.at - chars.now:,} chars to go ({chars.now:,} of {chars.at:,})" in text
                if chars.at > chars.now else f"next summary: due ({chars.now:,} of {chars.at:,} chars)" in text)
        assert "tokens to go (" in text
        assert "off for this agent" not in text
        assert "no call yet" in outlook_text(screen, "judge")

        # enter opens the exact messages of the selected agent's latest call
        await pilot.press("down", "down")
        await pilot.press("enter")
        await pilot.pause()
        inspector = app.screen
        assert isinstance(inspector, ContextScreen) and inspector.agent_id == "kiss"
        kiss_calls = [v for r in state.rounds for v in r.calls if v.agent_id == "kiss"]
        assert f"call {len(kiss_calls)} of {len(kiss_calls)}" in title(inspector)
        assert inspector.record is not None and inspector.record.call_id == kiss_calls[-1].call_id
        await pilot.press("escape")
        await pilot.press("escape")
        assert isinstance(app.screen, DebateScreen)


async def test_inspector_steps_through_calls_and_finds_text(recorded) -> None:  # type: ignore[no-untyped-def]
    state = folded(recorded)
    runtime = ScriptedRuntime(events=recorded, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, runtime)
        await command(pilot, "/context architect 1")
        inspector = app.screen
        assert isinstance(inspector, ContextScreen)
        calls = [v for r in state.rounds for v in r.calls if v.agent_id == "architect"]
        first_in_round1 = next(i for i, v in enumerate(calls) if v.round == 1)
        assert inspector.at == first_in_round1 and "round 1/2" in title(inspector)
        area = inspector.query_one(MessageText)
        assert area.has_focus and area.text.startswith("━━ [system] system")
        # scrollable at once: down moves the view, not a hidden cursor
        await pilot.press("down", "down")
        assert area.scroll_offset.y == 2
        await pilot.press("right")
        assert inspector.at == first_in_round1 + 1
        await pilot.press("right_square_bracket")
        assert inspector.record is not None and inspector.record.round == 2
        await pilot.press("full_stop")
        assert inspector.agent_id == "performance" and inspector.record.round == 2

        # find: / opens the box, typing finds, enter goes to the text, n / N step
        word = "performance"
        expected = find_all(area.text, word)
        assert len(expected) >= 2
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*word)
        await pilot.pause()
        assert inspector.matches == expected and inspector.match_at == 0
        await pilot.press("enter")
        assert area.has_focus and inspector.match_at == 1
        assert area.selected_text.casefold() == word
        start = area.selection.start
        await pilot.press("n")
        assert inspector.match_at == 2 % len(expected) and area.selection.start != start
        await pilot.press("N", "N")
        assert inspector.match_at == (2 - 2) % len(expected)
        status = str(inspector.query_one("#ctx-find-status", Label).render())
        assert status.startswith(f"{inspector.match_at + 1} of {len(expected)}")
        # the last match is scrolled into view
        inspector.match_at = len(expected) - 2
        await pilot.press("n")
        await pilot.pause()
        row = area.selection.end[0]
        assert area.scroll_offset.y <= area.wrapped_document.location_to_offset(area.selection.end).y
        assert row >= 0
        # escape closes the find box first (when typing), then the inspector
        await pilot.press("slash")
        await pilot.press("escape")
        assert isinstance(app.screen, ContextScreen) and area.has_focus
        await pilot.press("escape")
        assert isinstance(app.screen, DebateScreen)


async def test_context_errors_are_one_line(recorded) -> None:  # type: ignore[no-untyped-def]
    runtime = ScriptedRuntime(events=recorded, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, runtime)
        await command(pilot, "/context achitect")
        assert "no agent 'achitect' — did you mean architect?" in feedback(app)
        await command(pilot, "/context architect 9")
        assert "no round 9" in feedback(app)
        assert isinstance(app.screen, DebateScreen)
        await pilot.press("i")  # nothing focused: the first agent's latest call
        assert isinstance(app.screen, ContextScreen) and app.screen.agent_id == "architect"
        assert isinstance(app.screen.query_one("#ctx-find"), object)
        assert not app.screen.query(ListView)

"""Pilot tests against a real demo debate run by the app (LiveRuntime)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from textual.widgets import Input, Label

from moot.core.session import SessionOptions, resume_session
from moot.tui.app import create_app
from moot.tui.runtime import LiveRuntime
from moot.tui.screens.confirm import ConfirmScreen
from moot.tui.screens.context import ContextScreen, MessageText
from moot.tui.screens.debate import DebateScreen
from moot.tui.screens.help import HelpScreen
from moot.tui.settings import SettingsStore
from moot.tui.widgets.command_input import CommandInput

from .conftest import command, events_of, feedback, fixed_clock, make_session, settle, wait_for


def paused_after_first_proposal(session) -> None:  # type: ignore[no-untyped-def]
    """Pause the engine at the call boundary after the architect's first proposal."""
    orch = session.orchestrator
    done = []

    def listen(event) -> None:  # type: ignore[no-untyped-def]
        if event.type == "contribution_added" and event.contribution.agent_id == "architect" and not done:
            done.append(True)
            asyncio.get_running_loop().call_soon(orch.pause)

    session.bus.listen(listen)


async def test_live_debate_runs_to_the_solution(session) -> None:  # type: ignore[no-untyped-def]
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        await wait_for(pilot, lambda: screen.state.status == "completed", timeout=60)
        await settle(pilot)
        assert set(screen.panes) == {"architect", "performance", "kiss", "judge"}
        assert screen.panes["architect"].gauge.label.endswith("/ 7k")
        judge = screen.panes["judge"]
        assert judge.solution_shown and screen.zoomed is judge
        assert "DEMO" in str(screen.query_one("#hdr-demo", Label).render())
        await pilot.press("q")  # finished: no question
    assert app.return_value == 0
    assert session.state.status == "completed"


async def test_manual_summarize_lands_in_the_event_log(session) -> None:  # type: ignore[no-untyped-def]
    paused_after_first_proposal(session)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: session.orchestrator.paused and any(
            c.agent_id == "architect" for r in screen.state.rounds for c in r.contributions))
        await command(pilot, "/summarize architect")
        assert "summary of architect requested" in feedback(app)
        await command(pilot, "/resume")
        await wait_for(pilot, lambda: screen.state.status == "completed", timeout=60)
        await settle(pilot)
        badge = str(screen.panes["architect"].query_one(".pane-badge", Label).render())
        assert "(manual)" in badge or "R2" in badge
    manual = [e for e in events_of(session) if e["type"] == "summary_added" and e["summary"]["trigger"] == "manual"]
    assert manual and manual[0]["summary"]["agent_id"] == "architect"
    assert any(e["type"] == "summary_requested" for e in events_of(session))


async def test_pause_resume_and_bad_commands(tmp_path: Path) -> None:
    session = make_session(tmp_path / "state", delay=0.01)  # slow enough to pause again after resuming
    paused_after_first_proposal(session)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: session.orchestrator.paused)
        await command(pilot, "/pause")
        assert "already paused" in feedback(app)
        await command(pilot, "/resume")
        assert not session.orchestrator.paused and feedback(app) == "resumed"
        await command(pilot, "/pause")
        assert session.orchestrator.paused
        assert "PAUSED" in str(screen.query_one("#hdr-status", Label).render())
        # Calls scheduled by their inputs run many at once: let those in flight end first, so the
        # "paused: no call in flight" line does not replace the answers to the commands below.
        await wait_for(pilot, lambda: "no call in flight" in feedback(app), timeout=30)
        for line, expected in [
            ("/frobnicate", "unknown command /frobnicate"),
            ("/summarize nobody", "no agent 'nobody'"),
            ("/summarize judge", "the judge summarizes"),
            ("/context nobody", "no agent 'nobody'"),
            ("/context architect 9", "no round 9"),
            ("/context architect two", "round must be a number"),
            ("/theme nope", "unknown theme 'nope'"),
            ("/pause extra", "too many arguments"),
        ]:
            await command(pilot, line)
            assert expected in feedback(app), (line, feedback(app))
            assert isinstance(app.screen, DebateScreen)
        await command(pilot, "/summarize all")
        assert "every agent" in feedback(app)
        await command(pilot, "/stop")
        await wait_for(pilot, lambda: screen.state.status == "stopped")
        await settle(pilot)
        assert "STOPPED" in str(screen.query_one("#hdr-status", Label).render())
        assert isinstance(app.screen, DebateScreen)  # stays open
        await command(pilot, "/pause")
        assert "the debate is stopped" in feedback(app)
    kinds = [e["type"] for e in events_of(session)]
    assert kinds[-1] == "debate_interrupted"
    assert [e["action"] for e in events_of(session)
            if e["type"] == "control" and not e.get("effective")] == ["pause", "resume", "pause", "stop"]


async def test_quit_asks_once_then_stops_cleanly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Paused, the stop acts at once; a grace that runs out on a loaded machine would cancel
    # the session's close and leave the lock to the process's exit.
    monkeypatch.setattr(LiveRuntime, "STOP_GRACE_S", 600.0)
    session = make_session(tmp_path / "state")
    paused_after_first_proposal(session)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: session.orchestrator.paused)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, DebateScreen) and app.is_running
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_value == 0
    assert session.state.status == "stopped"
    # saved, unlocked and resumable
    resumed = resume_session("snap", SessionOptions(state_dir=tmp_path / "state", demo_delay=0))
    assert resumed.state.status == "stopped"
    resumed.lock.release()


async def test_slash_theme_help_and_context(session) -> None:  # type: ignore[no-untyped-def]
    paused_after_first_proposal(session)
    settings = SettingsStore()
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False, settings=settings)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: session.orchestrator.paused)
        await settle(pilot)
        # "/" anywhere focuses the command line with a slash typed
        screen.set_focus(None)
        await pilot.press("slash")
        command_input = screen.query_one(CommandInput)
        assert command_input.has_focus and command_input.value == "/"
        await pilot.press("t", "h", "e", "m", "e", "space", "l", "i", "g", "h", "t", "enter")
        await pilot.pause()
        assert app.theme == "light"
        assert json.loads(settings.path.read_text())["theme"] == "light"
        await command(pilot, "/help")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        await command(pilot, "/context architect 1")
        ctx = app.screen
        assert isinstance(ctx, ContextScreen) and ctx.agent_id == "architect"
        assert ctx.record is not None and ctx.record.round == 1
        text = ctx.query_one(MessageText).text
        assert text.startswith("━━ [system] system ·")
        system_prompt = session.state.prompts["architect/system"]
        assert system_prompt.splitlines()[0] in text
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DebateScreen)
    # remembered by the next app
    assert create_app(None, settings=SettingsStore()).theme == "light"


async def test_input_completion_and_history(session) -> None:  # type: ignore[no-untyped-def]
    paused_after_first_proposal(session)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: session.orchestrator.paused)
        await settle(pilot)
        await pilot.press("slash", "s", "u")
        await pilot.pause(0.1)
        await pilot.press("tab")
        command_input = app.screen.query_one(Input)
        assert command_input.value == "/summarize"
        await pilot.press("space", "a", "r")
        await pilot.pause(0.1)
        await pilot.press("tab", "enter")
        await pilot.pause()
        assert "summary of architect requested" in feedback(app)
        app.screen.query_one(CommandInput).focus()
        await pilot.press("up")
        assert command_input.value == "/summarize architect"
        await pilot.press("escape")
        assert not command_input.has_focus

"""An `adaptive` debate in the app: its decisions land in the event log as they are made, and the
judge's pane is the final answer by vote (no judge call)."""

from __future__ import annotations

from pathlib import Path

from moot.tui.app import create_app
from moot.tui.runtime import LiveRuntime
from moot.tui.screens.debate import DebateScreen
from moot.tui.widgets.event_log import EventLog

from .conftest import fixed_clock, make_session, settle, wait_for


async def test_adaptive_decisions_in_the_event_log_and_the_final_answer_pane(tmp_path: Path) -> None:
    session = make_session(tmp_path / "state", debate={"protocol": "adaptive"})
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        await wait_for(pilot, lambda: screen.state.status == "completed", timeout=60)
        await settle(pilot)
        log = "\n".join(strip.text for strip in screen.query_one(EventLog).lines)
        assert "⚖ draw in round 1 (2 calls" in log
        assert "P(leader is the most likely answer)" in log
        judge = screen.panes[session.state.judge.id if session.state.judge else "judge"]
        assert judge.info.name == "Final answer" and judge.solution_shown
        await pilot.press("q")

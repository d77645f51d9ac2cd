"""Quitting a running debate (`q`, then yes) has one outcome whatever the calls in flight had
left: the debate is `stopped`, saved and resumable, and moot exits 0. The calls get
`STOP_GRACE_S` to finish; what is still running then is cancelled (and redone on resume)."""

from __future__ import annotations

from pathlib import Path

import pytest

from moot.core.session import SessionOptions, resume_session
from moot.tui.app import create_app
from moot.tui.runtime import LiveRuntime
from moot.tui.screens.confirm import ConfirmScreen

from .conftest import events_of, fixed_clock, make_session, wait_for


@pytest.mark.parametrize("grace", [0.0, 120.0], ids=["calls-cancelled", "calls-finish"])
async def test_quitting_mid_call_always_stops_the_debate(tmp_path: Path, grace: float) -> None:
    session = make_session(tmp_path / "state", delay=0.02)  # a demo call streams for seconds
    runtime = LiveRuntime(session, clock=fixed_clock)
    runtime.STOP_GRACE_S = grace
    app = create_app(runtime, cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: any(r.calls for r in session.state.rounds), timeout=60)
        assert not any(r.contributions for r in session.state.rounds)  # the first calls are in flight
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.is_running, timeout=120)
    assert app.return_value == 0
    assert session.state.status == "stopped"
    last = events_of(session)[-1]
    assert last["type"] == "debate_interrupted" and last["status"] == "stopped"
    if grace == 0:
        assert "cancelled" in last["reason"]
    else:
        assert any(r.contributions for r in session.state.rounds)  # they finished and were kept
    resumed = resume_session("snap", SessionOptions(state_dir=tmp_path / "state", demo_delay=0))
    assert resumed.state.status == "stopped"  # unlocked and resumable
    resumed.lock.release()

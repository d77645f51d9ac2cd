"""`moot watch` attached to a debate another process runs: pause, summarize with a focus, inject,
resume and stop it from the TUI, and see each take effect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from moot.core.events import (
    CallStarted,
    ControlChanged,
    NoteInjected,
    SummaryAdded,
    SummaryRequested,
)
from moot.core.storage.folder import writer_alive
from moot.core.storage.log import read_events
from moot.core.storage.state_dir import StateDir
from moot.tui.app import create_app
from moot.tui.runtime import WatchRuntime
from moot.tui.screens.confirm import ConfirmScreen
from moot.tui.screens.debate import DebateScreen

from .conftest import command, feedback, settle, wait_for

NOTE = "Assume a single region for now."
FOCUS = "keep the numbers"


def start_debate(state_dir: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "MOOT_DEMO_DELAY": "0.02", "MOOT_CONFIG_DIR": str(state_dir.parent / "config")}
    env.pop("OPENAI_API_KEY", None)
    return subprocess.Popen(
        [sys.executable, "-m", "moot", "run", "Design a rate limiter", "--headless", "--provider", "demo",
         "-r", "6", "-a", "architect,performance,kiss", "--state-dir", str(state_dir)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.slow
async def test_attached_watch_steers_the_debate(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    proc = start_debate(state_dir)
    try:
        import asyncio

        for _ in range(600):
            folders = StateDir(state_dir).debates() if state_dir.exists() else []
            if folders and writer_alive(folders[0]) and folders[0].events_path.exists():
                break
            await asyncio.sleep(0.05)
        [folder] = StateDir(state_dir).debates()
        app = create_app(WatchRuntime(folder, poll_s=0.05), cursor_blink=False)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            assert isinstance(screen, DebateScreen)
            await wait_for(pilot, lambda: screen.loaded and screen.state.agents and screen.runtime.can_steer)
            status = str(screen.query_one("#hdr-status").render())
            assert "read-only" not in status

            await pilot.press("p")
            await wait_for(pilot, lambda: feedback(app).startswith("paused: no call in flight"))
            assert "PAUSED" in str(screen.query_one("#hdr-status").render())
            await command(pilot, f"/summarize kiss {FOCUS}")
            await wait_for(pilot, lambda: feedback(app).startswith("summary requested"))
            await command(pilot, f"/inject {NOTE}")
            await wait_for(pilot, lambda: feedback(app).startswith("moderator note added"))
            paused_calls = sum(isinstance(e, CallStarted) for e in read_events(folder.events_path))
            await pilot.pause(0.5)  # nothing starts while paused
            assert sum(isinstance(e, CallStarted) for e in read_events(folder.events_path)) == paused_calls
            await command(pilot, "/resume")
            await wait_for(pilot, lambda: feedback(app).startswith("kiss summarized:"), timeout=60)
            await pilot.press("x")
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await wait_for(pilot, lambda: feedback(app).startswith("stopped and saved"), timeout=60)
            await settle(pilot)
            assert "STOPPED" in str(screen.query_one("#hdr-status").render())
            await command(pilot, "/pause")
            assert "the debate is stopped" in feedback(app)
        assert proc.wait(timeout=60) == 0, proc.stderr.read().decode() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    events = list(read_events(folder.events_path))
    sent = [e for e in events if getattr(e, "command_id", None)]
    kinds = [(type(e).__name__, getattr(e, "action", None)) for e in sent]
    assert kinds == [("ControlChanged", "pause"), ("SummaryRequested", None), ("NoteInjected", None),
                     ("ControlChanged", "resume"), ("ControlChanged", "stop")]
    assert len({e.command_id for e in sent}) == 5  # type: ignore[attr-defined]
    effective = next(i for i, e in enumerate(events) if isinstance(e, ControlChanged) and e.effective)
    resumed = next(i for i, e in enumerate(events) if isinstance(e, ControlChanged) and e.action == "resume")
    assert not [e for e in events[effective:resumed] if isinstance(e, CallStarted)]
    request = next(e for e in sent if isinstance(e, SummaryRequested))
    assert request.agent_id == "kiss" and request.focus == FOCUS
    made = next(e for e in events if isinstance(e, SummaryAdded) and e.summary.trigger == "manual")
    assert made.summary.agent_id == "kiss" and made.summary.focus == FOCUS
    note = next(e for e in sent if isinstance(e, NoteInjected))
    assert note.note.text == NOTE

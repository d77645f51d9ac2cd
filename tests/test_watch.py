"""`moot watch`: follows a debate through a resume, ends when the debate ends, and says so
when the process writing it died without an end (exit 130), headless and in the TUI.

A watcher knows whether a writer is alive by probing the debate's lock (the writer holds an
exclusive flock on `<folder>/.lock`); the debates here are real CLI processes.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from moot.core.storage.folder import DebateFolder
from moot.core.storage.state_dir import StateDir
from moot.tui.app import create_app
from moot.tui.runtime import WatchRuntime
from moot.tui.screens.debate import DebateScreen
from moot.tui.widgets.event_log import EventLog
from tests.test_resume import TRACEBACK, check_complete, cli_env, only_debate, resume_hint
from tests.tui.conftest import settle, wait_for

ROLES = "kiss,security"


def _moot(*args: str, delay: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "moot", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=cli_env(MOOT_DEMO_DELAY=delay))


def _lines(folder: Path) -> list[str]:
    path = folder / "events.jsonl"
    return path.read_text().splitlines() if path.exists() else []


def _wait(predicate, timeout: float = 30) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def _running_debate(sd: Path, delay: str = "0.02") -> tuple[subprocess.Popen, Path]:
    """A headless demo debate in its own process, once its first call is in flight."""
    proc = _moot("run", "Design a URL shortener", "--provider", "demo", "--headless", "-r", "1", "-a", ROLES,
                 "--state-dir", str(sd), delay=delay)
    _wait(lambda: sd.is_dir() and any(not p.name.startswith(".") for p in sd.iterdir()))
    folder = only_debate(sd)
    _wait(lambda: any('"call_started"' in line for line in _lines(folder)))
    return proc, folder


def _interrupted_then_resumed(sd: Path) -> tuple[subprocess.Popen, Path]:
    """A debate stopped by SIGTERM (an `interrupted` line), then resumed in its own process,
    returned once the resume has logged `debate_resumed` (it holds the lock)."""
    proc, folder = _running_debate(sd)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    resume = _moot(*resume_hint(err), "--headless", delay="0.004")
    _wait(lambda: any('"debate_resumed"' in line for line in _lines(folder)))
    return resume, folder


@pytest.mark.slow
def test_headless_watch_follows_a_resume_and_ends_with_the_debate(tmp_path: Path) -> None:
    sd = tmp_path / "D"
    resume, folder = _interrupted_then_resumed(sd)
    kinds = [line for line in _lines(folder) if '"debate_interrupted"' in line]
    assert kinds  # the log already holds an earlier end
    watch = _moot("watch", folder.name, "--headless", "--state-dir", str(sd), delay="0")
    out, err = watch.communicate(timeout=120)
    assert watch.returncode == 0, err
    assert resume.wait(timeout=60) == 0
    assert "■ debate interrupted" in out and f"▶ debate {folder.name} resumed at round" in out
    assert out.rstrip().splitlines()[-1].startswith("✓ debate completed")  # not the old interrupted line
    assert err == "" and TRACEBACK not in out
    check_complete(folder, 1, ROLES.split(","))


def test_headless_watch_of_a_killed_writer_says_so_and_exits_non_zero(tmp_path: Path) -> None:
    sd = tmp_path / "D"
    proc, folder = _running_debate(sd, delay="0.05")
    watch = _moot("watch", folder.name, "--headless", "--state-dir", str(sd), delay="0")
    time.sleep(0.5)
    assert watch.poll() is None  # the writer is alive: the watch keeps following
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    out, err = watch.communicate(timeout=30)
    assert watch.returncode == 130, err
    assert err.splitlines() == [
        f"moot: debate {folder.name} stopped without an end and no process is writing it (killed?); "
        f"continue with `moot resume {folder.name} --state-dir {sd}`"]
    assert DebateFolder(folder).load().status == "running"  # nothing was written by the watcher


@pytest.mark.slow
@pytest.mark.timeout(600)  # a hang guard; a loaded machine is slow
async def test_tui_watch_follows_a_resume_then_a_killed_writer(tmp_path: Path) -> None:
    sd = tmp_path / "D"
    resume, folder = _interrupted_then_resumed(sd)
    runtime = WatchRuntime(StateDir(sd).open(folder.name), poll_s=0.05)
    app = create_app(runtime, cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        await wait_for(pilot, lambda: not runtime.following, timeout=90)
        await settle(pilot, rounds=1)
        assert screen.state.status == "completed" and runtime.gone is None
        assert app.exit_code() == 0
    assert resume.wait(timeout=30) == 0

    sd2 = tmp_path / "K"
    proc, folder2 = _running_debate(sd2, delay="0.05")
    runtime = WatchRuntime(StateDir(sd2).open(folder2.name), poll_s=0.05)
    app = create_app(runtime, cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        await wait_for(pilot, lambda: screen.loaded)
        await pilot.pause(0.3)
        assert runtime.following
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        await wait_for(pilot, lambda: not runtime.following, timeout=30)
        await settle(pilot, rounds=1)
        log = " ".join("".join(strip.text for strip in screen.query_one(EventLog).lines).split())
        assert "stopped without an end and no process is writing it" in log
        assert "NOT RUNNING" in str(screen.query_one("#hdr-status").render())
        assert app.exit_code() == 130

"""Ctrl-C, SIGINT and SIGTERM while the TUI runs: stop at once, saved and resumable, no traceback."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from moot.core.session import SessionOptions, resume_session
from moot.tui import app as app_module
from moot.tui.app import create_app
from moot.tui.runtime import LiveRuntime
from moot.tui.screens.confirm import ConfirmScreen
from moot.tui.screens.debate import DebateScreen
from tests.conftest import cli

from .conftest import fixed_clock, make_session, wait_for


def _events(path: Path) -> list[dict]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip().endswith("}")]


class _PtyRun:
    """`moot ARGS` with stdin, stdout and stderr on a pseudo-terminal (so it runs the TUI)."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "CI")}
        env.update(TERM="xterm-256color", COLUMNS="120", LINES="40", MOOT_DEMO_DELAY="0.05")
        self.proc = subprocess.Popen([sys.executable, "-m", "moot", *args], stdin=slave, stdout=slave,
                                     stderr=slave, env=env, cwd=cwd, start_new_session=True, close_fds=True)
        os.close(slave)
        self.master = master
        self._out = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO once the child is gone
                break
            if not data:
                break
            self._out.extend(data)

    @property
    def output(self) -> str:
        return bytes(self._out).decode("utf-8", "replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(5)
        os.close(self.master)


def _wait_for_contribution(run: _PtyRun, state_dir: Path, timeout: float = 90) -> Path:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert run.proc.poll() is None, f"moot exited early ({run.proc.returncode}):\n{run.output[-3000:]}"
        for path in state_dir.glob("*/events.jsonl"):
            if any(e["type"] == "contribution_added" for e in _events(path)):
                return path
        time.sleep(0.1)
    raise AssertionError(f"no contribution within {timeout}s:\n{run.output[-3000:]}")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "ctrl+c"])
def test_signal_in_a_terminal_stops_at_once_and_resumes(tmp_path: Path, how: str) -> None:
    state_dir = tmp_path / "state"
    run = _PtyRun(["run", "Design a URL shortener", "--provider", "demo", "--state-dir", str(state_dir)], tmp_path)
    try:
        events_path = _wait_for_contribution(run, state_dir)
        if how == "ctrl+c":
            os.write(run.master, b"\x03")  # the key, in the terminal's raw mode
        else:
            run.proc.send_signal(getattr(signal, how))
        try:
            code = run.proc.wait(timeout=60)  # a hang guard; "at once" is the interrupted status below
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running 60 s after {how}:\n{run.output[-3000:]}") from None
        run._reader.join(5)
        out = run.output
    finally:
        run.close()
    assert code == 130, out[-3000:]
    assert "Traceback" not in out and "never awaited" not in out, out[-5000:]
    events = _events(events_path)
    assert events[-1]["type"] == "debate_interrupted" and events[-1]["status"] == "interrupted"
    assert events[-1]["reason"] == how  # what cut it short, kept with the debate
    debate_id = events_path.parent.name
    assert (f"moot: debate interrupted ({how}); saved in {events_path.parent}; "
            f"continue with `moot resume {debate_id}") in out
    assert "\x1b[?1049l" in out  # the terminal left the alternate screen
    if how != "SIGTERM":
        return
    resumed = cli("resume", debate_id, "--state-dir", str(state_dir), "--headless")  # headless, in this process
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((events_path.parent / "state.json").read_text())["status"] == "completed"


def test_run_app_owns_the_stop_signals_and_gives_them_back(tmp_path: Path) -> None:
    """SIGTERM while the app runs reaches the app on its loop, never the CLI's handler."""
    seen: list[str] = []

    def cli_handler(signum: int, frame: object) -> None:
        seen.append("cli")
        raise KeyboardInterrupt

    class FakeApp:
        def __init__(self) -> None:
            self.stopped = None

        def interrupt_now(self, cause: str = "") -> None:
            seen.append(f"app {cause}")
            if self.stopped is not None:
                self.stopped.set()

        async def run_async(self) -> int:
            import asyncio

            self.stopped = asyncio.Event()
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.wait_for(self.stopped.wait(), 5)
            return 130

        async def shutdown_runtimes(self) -> None:
            seen.append("shutdown")

    before_int = signal.getsignal(signal.SIGINT)
    previous = signal.signal(signal.SIGTERM, cli_handler)
    try:
        assert app_module._run(FakeApp()) == 130  # type: ignore[arg-type]
        assert signal.getsignal(signal.SIGTERM) is cli_handler
        assert signal.getsignal(signal.SIGINT) is before_int
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert seen == ["app SIGTERM", "shutdown"]


async def test_ctrl_c_stops_the_debate_at_once_without_a_dialog(tmp_path: Path) -> None:
    session = make_session(tmp_path / "state", delay=0.02)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        await wait_for(pilot, lambda: any(r.contributions for r in screen.state.rounds), timeout=60)
        assert app.debate_running
        await pilot.press("ctrl+c")
        assert not isinstance(app.screen, ConfirmScreen)
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_value == 130
    assert session.state.status == "interrupted"
    kinds = [json.loads(line)["type"] for line in session.folder.events_path.read_text().splitlines()]
    assert kinds[-1] == "debate_interrupted"
    resumed = resume_session("snap", SessionOptions(state_dir=tmp_path / "state", demo_delay=0))  # unlocked
    assert resumed.state.status == "interrupted"
    resumed.lock.release()


async def test_ctrl_c_in_the_quit_dialog_stops_at_once(tmp_path: Path) -> None:
    session = make_session(tmp_path / "state", delay=0.02)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: any(r.contributions for r in session.state.rounds), timeout=60)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)  # q still asks once
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_value == 130 and session.state.status == "interrupted"


async def test_ctrl_c_on_a_finished_debate_just_quits(tmp_path: Path) -> None:
    session = make_session(tmp_path / "state", rounds=1)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: session.state.status == "completed", timeout=60)
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_value == 0 and session.state.status == "completed"

"""`moot run` in a terminal shows its first screen before the debate is built: the header names
the problem and says what is still loading; the session is built behind it, and a build that
fails (a bad config) closes the app and is said in one line with its exit code. `moot resume` too."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Label

from moot.core.session import DebateSession
from moot.tui.app import create_app
from moot.tui.runtime import LiveRuntime
from moot.tui.screens.debate import DebateScreen

from .conftest import fixed_clock, make_session, wait_for
from .test_signals import _PtyRun

PROBLEM = "Design a URL shortener"


def _held_build(state_dir: Path, release: threading.Event,
                rounds: int = 1) -> Callable[[Callable[[str], None]], DebateSession]:
    """A build that says what it loads, then waits for `release` before it makes the session."""

    def build(step: Callable[[str], None]) -> DebateSession:
        step("loading the openai SDK")
        release.wait(30)
        return make_session(state_dir, rounds=rounds)

    return build


def _header(app: object) -> tuple[str, str]:
    screen = app.screen  # type: ignore[attr-defined]
    title = str(screen.query_one("#hdr-title", Label).render())
    status = str(screen.query_one("#hdr-status", Label).render())
    return title, status


async def test_the_header_names_the_problem_and_what_loads_before_the_session_exists(tmp_path: Path) -> None:
    release = threading.Event()
    runtime = LiveRuntime(build=_held_build(tmp_path / "state", release), title=PROBLEM, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        assert isinstance(app.screen, DebateScreen)
        await wait_for(pilot, lambda: "openai SDK" in _header(app)[1], timeout=30)
        assert runtime.built is None
        assert _header(app) == (PROBLEM, "STARTING · loading the openai SDK")
        release.set()
        await wait_for(pilot, lambda: app.screen.state.status == "completed", timeout=60)  # type: ignore[attr-defined]
        assert _header(app)[1] == "COMPLETED"
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.is_running)
    await runtime.finish_building()
    assert app.return_value == 0
    assert runtime.built is not None and runtime.built.state.final_solution is not None


async def test_quitting_while_the_session_is_built_leaves_its_folder_unlocked(tmp_path: Path) -> None:
    release = threading.Event()
    runtime = LiveRuntime(build=_held_build(tmp_path / "state", release), title=PROBLEM, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: runtime.loading == "loading the openai SDK", timeout=30)
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.is_running)
    assert app.return_value == 130
    release.set()  # the build ends after the app: what it made is closed, never started
    await runtime.finish_building()
    session = runtime.built
    assert session is not None and not session.state.problem  # never started: no debate recorded
    assert not session.folder.path.exists()  # its half-made folder is gone with its lock
    assert not [p for p in (tmp_path / "state").iterdir() if p.name != ".locks"]


@pytest.mark.slow
def test_a_config_error_found_behind_the_first_screen_is_one_line_and_its_code(tmp_path: Path) -> None:
    config = tmp_path / "moot.toml"
    config.write_text('[debate]\nrounds = "three of them"\n')
    run = _PtyRun(["run", PROBLEM, "--provider", "demo", "-c", str(config), "--state-dir", str(tmp_path / "s")],
                  tmp_path)
    try:
        try:
            code = run.proc.wait(timeout=60)  # a hang guard
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running:\n{run.output[-3000:]}") from None
        time.sleep(0.2)
        run._reader.join(5)
        out = run.output
    finally:
        run.close()
    assert code == 4, out[-3000:]
    # The app's screen came first (the config is read behind it), then the terminal is restored
    # and the error said after it: one line, no traceback.
    assert "\x1b[?1049l" in out, f"the app's screen never came:\n{out[-3000:]}"
    screen, after = out.split("\x1b[?1049l", 1)
    assert "\x1b[?1049h" in screen and PROBLEM in re.sub(r"\x1b\[[0-9;?<>$]*[a-zA-Z]", "", screen), out[-3000:]
    said = re.sub(r"\x1b\[[0-9;?<>$]*[a-zA-Z]", "", after)  # the terminal restored, then the line
    errors = [line for line in said.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("moot: ") and "debate.rounds" in errors[0], after
    assert "Traceback" not in out
    assert not list((tmp_path / "s").glob("*/events.jsonl"))  # nothing half-made


def _screen_text(raw: str) -> str:
    return re.sub(r"\x1b\[[0-9;?<>$]*[a-zA-Z]", "", raw)


@pytest.mark.slow
def test_moot_resume_paints_first_then_reads_the_debate_and_says_a_refusal_after_its_screen(tmp_path: Path) -> None:
    """`moot resume` in a terminal, as `moot run`: the first screen says which debate it resumes
    before the debate is read; the resumed debate then runs to its end. Resumed again, the refusal
    (it is completed) comes after the app's screen, in one line with its code."""
    from tests.conftest import cli

    sd = tmp_path / "s"
    problem = "Choose between a queue and a shared table for handing orders to the warehouse"
    made = cli("run", problem, "--headless", "--protocol", "conversation", "--turns", "3", "--provider", "demo",
               "--demo-delay", "0", "--state-dir", str(sd))
    assert made.returncode == 0, made.stderr
    (folder,) = [p for p in sd.iterdir() if not p.name.startswith(".")]
    # Cut as a crash at the start of its last turn leaves it (the snapshot is derived: gone too).
    lines = (folder / "events.jsonl").read_bytes().splitlines(keepends=True)
    cut = max(i for i, line in enumerate(lines) if b'"type":"round_started"' in line)
    (folder / "events.jsonl").write_bytes(b"".join(lines[:cut]))
    (folder / "state.json").unlink()

    run = _PtyRun(["resume", folder.name, "--demo-delay", "0", "--state-dir", str(sd)], tmp_path)
    try:
        end = time.monotonic() + 90
        while b'"type":"debate_completed"' not in (folder / "events.jsonl").read_bytes():
            assert run.proc.poll() is None, run.output[-3000:]
            assert time.monotonic() < end, run.output[-3000:]
            time.sleep(0.05)
        # The debate has ended; the screen shows its problem once it has painted since it was read
        # (on a loaded machine that paint can come well after the log's last line).
        while "queue and a shared table" not in _screen_text(run.output):
            assert time.monotonic() < end, run.output[-3000:]
            time.sleep(0.05)
        os.write(run.master, b"\x03")
        code = run.proc.wait(timeout=60)
        run._reader.join(5)
        out = _screen_text(run.output)
    finally:
        run.close()
    assert code == 0, out[-3000:]
    assert "Traceback" not in out
    shown = out.index(f"resuming debate {folder.name}")
    assert shown < out.index("queue and a shared table")  # the problem is known once the debate is read

    again = _PtyRun(["resume", folder.name, "--state-dir", str(sd)], tmp_path)
    try:
        code = again.proc.wait(timeout=60)
        time.sleep(0.2)
        again._reader.join(5)
        raw = again.output
    finally:
        again.close()
    assert code == 2, raw[-3000:]
    assert "\x1b[?1049l" in raw, f"the app's screen never came:\n{raw[-3000:]}"
    screen, after = raw.split("\x1b[?1049l", 1)
    assert f"resuming debate {folder.name}" in _screen_text(screen)
    said = [line for line in _screen_text(after).splitlines() if line.strip()]
    assert said == [f"moot: debate {folder.name} is already completed"], after

"""A built-in tool over a large reference set: it has a deadline, and a pause, a stop or SIGTERM
cuts it short instead of waiting for it (one search over 300 MB took half a minute, and
SIGTERM waited for it)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from moot.core.errors import ExitCode
from tests.conftest import LoopbackServer
from tests.grounding_helpers import call, first_turn_calls, is_proposal, make_refs, run, tool_messages
from tests.prose import reply

QUERY = "zebra crossing"
"""A phrase no file holds: the search reads every file."""


def big_refs(tmp_path: Path, files: int = 30) -> Path:
    """The project of the other grounding tests plus `files` meeting minutes of about 0.7 MB each:
    many times what a search can read before its deadline, and made of varied prose."""
    refs = make_refs(tmp_path)
    blocks = [reply(seed, 4000).text for seed in range(64)]
    (refs / "minutes").mkdir()
    for i in range(files):
        body = "\n\n".join(blocks[(i + k) % len(blocks)] for k in range(len(blocks)))
        (refs / "minutes" / f"review-{i:02d}.md").write_text("\n\n".join([body] * 4))
    return refs


def test_a_search_past_its_deadline_is_a_tool_error_and_the_debate_goes_on(tmp_path: Path) -> None:
    refs = big_refs(tmp_path)
    Path("moot.toml").write_text("[tools]\ntimeout_s = 0.5\n")
    with LoopbackServer(tool_calls=first_turn_calls(call("search", query=QUERY))) as server:
        result = run(server.base_url, refs, "-a", "architect", "-c", "moot.toml")
        follow = next(r for r in server.requests if is_proposal(r) and tool_messages(r))
    assert result.returncode == 0, result.stderr
    assert tool_messages(follow)[0]["content"] == (
        "error: search did not finish within 0.5s (tools.timeout_s); narrow the query or the path")


async def _debate_interrupted_during_search(tmp_path: Path, pause: bool) -> tuple[str, list[str]]:
    """A demo debate over the large set (the demo lists, reads one file, then searches): a pause
    or a stop asked for while its search runs. Returns its status and the events in order."""
    from moot.core.config import Overrides, build_config
    from moot.core.events import Event
    from moot.core.session import SessionOptions, new_session

    refs = big_refs(tmp_path)
    cfg = build_config({"debate": {"references": [str(refs)]}}, Overrides(rounds=1, provider="demo",
                                                                          roles=["architect"]))
    session = new_session(f"Plan the {QUERY} study", cfg, SessionOptions(state_dir=tmp_path / "d", demo_delay=0))
    orch = session.orchestrator
    loop = asyncio.get_running_loop()
    seen: list[str] = []

    def listen(event: Event) -> None:
        name = getattr(getattr(event, "tool", None), "name", None) or getattr(event, "name", None)
        effective = event.type == "control" and getattr(event, "effective", False)
        seen.append(f"{event.type}:{name}" if event.type.startswith("tool_") else
                    "pause_effective" if effective else event.type)
        if event.type == "tool_called" and name == "search":
            loop.call_later(0.2, orch.pause if pause else orch.stop)
        if effective:
            orch.stop()  # the pause held the call: end here rather than run the search again

    orch.bus.listen(listen)
    state = await session.run()
    return state.status, seen


async def test_a_stop_cuts_a_running_search_short(tmp_path: Path) -> None:
    status, seen = await _debate_interrupted_during_search(tmp_path, pause=False)
    assert status == "stopped"
    assert "tool_called:search" in seen and "tool_returned:search" not in seen  # stopped, not waited for


async def test_a_pause_cuts_a_running_search_short_and_holds_the_call(tmp_path: Path) -> None:
    status, seen = await _debate_interrupted_during_search(tmp_path, pause=True)
    assert status == "stopped"
    effective = seen.index("pause_effective", seen.index("tool_called:search"))
    assert "tool_returned:search" not in seen[:effective]  # the pause did not wait for the search


@pytest.mark.slow
def test_sigterm_during_a_search_ends_the_run_without_waiting_for_it(tmp_path: Path) -> None:
    refs = big_refs(tmp_path, files=90)  # about a minute of reading: far past the guard below
    proc = subprocess.Popen([sys.executable, "-m", "moot", "run", f"Plan the {QUERY} study", "--ref", str(refs),
                             "--provider", "demo", "-r", "1", "-a", "architect", "--headless", "--state-dir",
                             "debates"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "NO_COLOR": "1"})
    assert proc.stderr is not None
    for line in proc.stderr:
        if "→ search(" in line:  # the search has started
            break
    proc.send_signal(signal.SIGTERM)
    try:  # a hang guard, far below what the search takes: before, the exit waited for all of it
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail("moot waited for the search after SIGTERM")
    assert proc.returncode == ExitCode.INTERRUPTED

"""Steering a debate that another process runs: `moot ctl` against a headless `moot run`, and the
control folder under hostile contents (the writer's side, `moot.core.control.commands.Inbox`)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from moot.core.config import Overrides, load_config
from moot.core.control.commands import (
    MAX_FILE_BYTES,
    ControlCommand,
    Inbox,
    control_dir,
    send,
    withdraw,
    writer_alive,
)
from moot.core.errors import InputError
from moot.core.events import CallStarted, ControlChanged, Event
from moot.core.session import SessionOptions, new_session
from moot.core.storage.folder import DebateFolder
from moot.core.storage.state_dir import StateDir
from tests.conftest import cli, moot, read_jsonl, run_debate
from tests.loopback import LoopbackServer, default_reply

WAIT_S = 120.0
"""How long a condition may take on a loaded machine before the test calls it a failure."""


def wait_for(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def events_of(folder: Path) -> list[dict[str, Any]]:
    path = folder / "events.jsonl"
    if not path.exists():
        return []
    *complete, _ = path.read_bytes().split(b"\n")  # the last piece may be a line still being written
    return [json.loads(line) for line in complete if line]


def command_id(stdout: str) -> str:
    found = re.match(r"(cmd-[0-9a-f]{8}): ", stdout)
    assert found, stdout
    return found.group(1)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY")}


@pytest.mark.slow
def test_a_headless_debate_is_paused_summarized_noted_and_resumed_from_other_processes(tmp_path: Path) -> None:
    focus = "the cost of running it at ten times today's load"
    note = "Assume the team is two engineers for three months."
    release = threading.Event()
    arrivals: list[tuple[float, int]] = []

    def reply(body: dict[str, Any], n: int) -> str:
        arrivals.append((time.time(), n))
        # Calls 1-3 are round 1's proposals; later calls wait here until the test has its pause
        # taken, so the pause deterministically lands while calls are in flight.
        if n > 3:
            release.wait(WAIT_S)
        return default_reply(body, n)

    srv = LoopbackServer(reply).start()
    states = tmp_path / "states"
    log_out, log_err = (tmp_path / "run.out").open("w"), (tmp_path / "run.err").open("w")
    run = subprocess.Popen(
        [sys.executable, "-m", "moot", "run", "Design a rate limiter for a public API", "--headless", "-r", "2",
         "-a", "architect,performance,kiss", "--provider", "openai", "--base-url", srv.base_url,
         "--state-dir", str(states)],
        stdin=subprocess.DEVNULL, stdout=log_out, stderr=log_err, env=_env())
    pause: subprocess.Popen[str] | None = None
    try:
        wait_for(lambda: len(arrivals) > 3, "round 1's critiques to reach the server")
        (folder,) = list(states.iterdir())
        debate = folder.name
        ctl = ("ctl", debate, "--state-dir", str(states))

        pause = subprocess.Popen([sys.executable, "-m", "moot", *ctl[:2], "pause", *ctl[2:], "--wait", str(WAIT_S)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
        wait_for(lambda: [e for e in events_of(folder) if e["type"] == "control" and e.get("command_id")],
                 "the pause to be taken")
        assert not [e for e in events_of(folder) if e["type"] == "control" and e["effective"]], \
            "paused while calls were still in flight"
        release.set()
        out, err = pause.communicate(timeout=WAIT_S)
        assert pause.returncode == 0, err
        pause_id = command_id(out)
        assert f"{pause_id}: ⏸ paused: no call in flight" in out
        requests_when_paused = len(arrivals)

        summarize = moot(*ctl[:2], "summarize", "kiss", *focus.split(), *ctl[2:])
        assert summarize.returncode == 0, summarize.stderr
        assert f"summary requested for kiss (at its next call, focus: {focus})" in summarize.stdout
        inject = moot(*ctl[:2], "inject", note, *ctl[2:])
        assert inject.returncode == 0, inject.stderr
        assert note in inject.stdout
        again = moot(*ctl[:2], "pause", *ctl[2:])
        assert again.returncode == 2 and again.stdout == ""
        assert again.stderr.startswith("moot: command cmd-") and "already paused" in again.stderr
        assert again.stderr.count("\n") == 1
        assert len(arrivals) == requests_when_paused, "a request reached the server while paused"
        resume = moot(*ctl[:2], "resume", *ctl[2:])
        assert resume.returncode == 0, resume.stderr
        assert "resumed (from another process)" in resume.stdout

        assert run.wait(timeout=WAIT_S) == 0, (tmp_path / "run.err").read_text()
        bodies = srv.requests
    finally:
        release.set()
        for proc in (run, pause):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        log_out.close()
        log_err.close()
        srv.stop()

    events = read_jsonl(folder / "events.jsonl")
    assert events[-1]["type"] == "debate_completed"
    ids = {name: command_id(p.stdout) for name, p in (("summarize", summarize), ("inject", inject),
                                                    ("resume", resume))}
    again_id = re.search(r"cmd-[0-9a-f]{8}", again.stderr)
    assert again_id
    # Each command recorded once, carrying its id, in the order sent.
    assert [(e["type"], e.get("action"), e["command_id"]) for e in events if e.get("command_id")] == [
        ("control", "pause", pause_id), ("summary_requested", None, ids["summarize"]),
        ("note_injected", None, ids["inject"]), ("warning", None, again_id.group(0)),
        ("control", "resume", ids["resume"])]
    by_id = {e.get("command_id"): e for e in events if e.get("command_id")}
    assert by_id[ids["summarize"]]["agent_id"] == "kiss" and by_id[ids["summarize"]]["focus"] == focus
    assert by_id[ids["inject"]]["note"]["text"] == note

    # Nothing started between the pause taking effect and the resume: not in the log, not at the server.
    taken = by_id[pause_id]
    effective = next(e for e in events if e["type"] == "control" and e["effective"])
    resumed = by_id[ids["resume"]]
    assert taken["seq"] < effective["seq"] < by_id[ids["summarize"]]["seq"]
    assert not [e for e in events if e["type"] == "call_started" and effective["seq"] < e["seq"] < resumed["seq"]]
    assert not [n for t, n in arrivals if effective["ts"] < t < resumed["ts"]]
    after = [n for t, n in arrivals if t > resumed["ts"]]
    assert after and min(after) == requests_when_paused + 1

    # The focus reached kiss's summarization request, and only that.
    summary = next(e["summary"] for e in events if e["type"] == "summary_added" and e["summary"]["agent_id"] == "kiss"
                   and e["summary"]["trigger"] == "manual")
    assert summary["focus"] == focus and summary["method"] == "llm"
    focused_calls = [e["view"] for e in events if e["type"] == "call_started" and e["view"]["phase"] == "summarize"
                     and e["view"]["task_params"].get("focus") == focus]
    assert focused_calls and {v["agent_id"] for v in focused_calls} == {"kiss"}
    with_focus = [b for b in bodies if focus in json.dumps(b, ensure_ascii=False)]
    assert len(with_focus) == len(focused_calls)

    # The note: in no request before the resume; after it, in every request but summarizations.
    before, later = bodies[:requests_when_paused], bodies[requests_when_paused:]
    assert not [b for b in before if note in json.dumps(b)]
    later_calls = [e["view"] for e in events if e["type"] == "call_started" and e["seq"] > resumed["seq"]]
    assert len(later_calls) == len(later)
    without_note = [b for b in later if note not in json.dumps(b)]
    summarizing = [v for v in later_calls if v["phase"] == "summarize"]
    assert len(later) > len(summarizing) and len(without_note) <= len(summarizing)


# ---------------------------------------------------------------------- moot ctl's answers


@pytest.fixture
def finished(tmp_path: Path) -> DebateFolder:
    """A completed demo debate (no process runs it)."""
    import asyncio

    _, folder = asyncio.run(run_debate(tmp_path, rounds=1, roles=["architect", "kiss"]))
    return folder


def _ctl(folder: DebateFolder, *args: str) -> Any:
    """`moot ctl` in-process: what it answers is the CLI's, not the process's (the live-writer
    tests below start real processes)."""
    return cli("ctl", folder.id, *args, "--state-dir", str(folder.path.parent))


def test_ctl_without_a_live_writer_is_one_line_and_exit_2(finished: DebateFolder) -> None:
    for args in (["pause"], ["summarize", "kiss", "shorter"], ["inject", "a note"]):
        proc = _ctl(finished, *args)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr == (f"moot: debate {finished.id} is not running in any process: nothing to {args[0]} "
                               "(it has completed)\n")
    assert not control_dir(finished).exists()  # made by the first command sent, and none was


def test_ctl_names_the_agent_it_does_not_know_and_checks_the_text(finished: DebateFolder) -> None:
    proc = _ctl(finished, "summarize", "kis", "keep", "it", "short")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "no agent 'kis'" in proc.stderr and "did you mean 'kiss'?" in proc.stderr
    long = _ctl(finished, "inject", "x" * 5000)
    assert (long.returncode, long.stderr) == (2, "moot: the note is 5000 characters; the limit is 4000\n")
    bare = _ctl(finished, "summarize")
    assert bare.returncode == 2 and "usage: moot ctl ID summarize AGENT|all" in bare.stderr
    extra = _ctl(finished, "resume", "now")
    assert (extra.returncode, extra.stderr) == (2, "moot: resume takes no arguments\n")


def test_ctl_say_reads_stdin_no_further_than_an_answer_may_be(finished: DebateFolder) -> None:
    """`say -` fed an endless pipe (`< /dev/zero`) read it whole until memory ran out
    (MemoryError, exit 1); it reads one character past the limit and says no."""
    import io

    from moot.core.control.commands import MAX_SAY

    class Endless(io.TextIOBase):
        def read(self, size: int | None = -1) -> str:
            if size is None or size < 0:
                raise AssertionError("stdin read without a bound")
            return "a" * size

    r = cli("ctl", finished.id, "say", "-", "--state-dir", str(finished.path.parent), stdin=Endless())
    assert (r.returncode, r.stderr) == (2, f"moot: the answer on stdin is over {MAX_SAY:,} characters, the limit "
                                           "of an answer\n")
    assert not control_dir(finished).exists()  # nothing was sent

def test_ctl_wait_says_when_nobody_took_the_command_and_withdraws_it(finished: DebateFolder) -> None:
    """A process holds the debate's lock but never reads its commands (a stuck writer)."""
    lock = finished.lock()
    lock.acquire()
    try:
        proc = _ctl(finished, "pause", "--wait", "0.5")
        assert proc.returncode == 2 and proc.stdout == ""
        assert re.fullmatch(rf"moot: debate {finished.id}: its process did not take it within 0.5 s \(is it "
                            r"stuck\?\); cmd-[0-9a-f]{8} withdrawn, nothing changed\n", proc.stderr), proc.stderr
        assert os.listdir(control_dir(finished)) == []
        sent = _ctl(finished, "resume", "--wait", "0")
        assert sent.returncode == 0 and re.fullmatch(r"sent cmd-[0-9a-f]{8}; the running debate takes it at its "
                                                     r"next call boundary\n", sent.stdout)
        assert len(list(control_dir(finished).glob("*.json"))) == 1
    finally:
        lock.release()


def test_ctl_wait_says_when_the_writer_ended_before_taking_it(finished: DebateFolder) -> None:
    lock = finished.lock()
    lock.acquire()
    proc = subprocess.Popen([sys.executable, "-m", "moot", "ctl", finished.id, "stop", "--wait", str(WAIT_S),
                             "--state-dir", str(finished.path.parent)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        wait_for(lambda: list(control_dir(finished).glob("*.json")), "the command file")
    finally:
        lock.release()
    out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 2 and out == ""
    assert "the process running it ended; cmd-" in err and err.endswith("withdrawn, nothing changed\n")
    assert os.listdir(control_dir(finished)) == []


# ---------------------------------------------------------------------- the writer's side


class Recorder:
    def __init__(self, fail: Exception | None = None) -> None:
        self.applied: list[ControlCommand] = []
        self.warnings: list[tuple[str, str | None]] = []
        self.fail = fail

    def apply(self, command: ControlCommand) -> None:
        if self.fail is not None and command.action == "stop":
            raise self.fail
        self.applied.append(command)

    def warn(self, message: str, command_id: str | None) -> None:
        self.warnings.append((message, command_id))


@pytest.fixture
def live(tmp_path: Path) -> Any:
    """A debate folder whose lock this test holds, as the process running it would."""
    folder = StateDir(tmp_path / "d").create("live")
    lock = folder.lock()
    lock.acquire()
    yield folder
    lock.release()


def _inbox(folder: DebateFolder, rec: Recorder, since: float = 0.0) -> Inbox:
    return Inbox(folder, rec.apply, rec.warn, since=since)


def test_commands_are_applied_once_in_the_order_sent_with_private_files(live: DebateFolder) -> None:
    assert writer_alive(live)
    sent = [ControlCommand(action="pause"), ControlCommand(action="inject", text="n1"),
            ControlCommand(action="summarize", agent="kiss", text="focus")]
    seen_modes = []
    for c in sent:
        send(live, c)
        seen_modes.append(os.stat(control_dir(live) / c.filename).st_mode & 0o777)
    assert seen_modes == [0o600] * 3 and os.stat(control_dir(live)).st_mode & 0o777 == 0o700
    rec = Recorder()
    inbox = _inbox(live, rec)
    assert inbox.drain() == 3 and inbox.drain() == 0
    assert [c.id for c in rec.applied] == [c.id for c in sent] and rec.warnings == []
    assert os.listdir(control_dir(live)) == []


def test_a_command_from_before_the_writer_took_the_debate_is_dropped_not_replayed(live: DebateFolder) -> None:
    old = ControlCommand(action="stop", ts=time.time() - 7 * 86400)
    (control_dir(live)).mkdir(mode=0o700)
    (control_dir(live) / old.filename).write_text(old.model_dump_json())
    fresh = ControlCommand(action="pause")
    send(live, fresh)
    rec = Recorder()
    assert _inbox(live, rec, since=time.time() - 60).drain() == 1
    assert [c.id for c in rec.applied] == [fresh.id]
    ((message, cid),) = rec.warnings
    assert cid == old.id and "before this process took the debate; dropped, not replayed" in message
    assert os.listdir(control_dir(live)) == []


def test_files_that_are_not_commands_are_reported_never_followed_and_never_crash(live: DebateFolder,
                                                                                 tmp_path: Path) -> None:
    inbox_dir = control_dir(live)
    inbox_dir.mkdir(mode=0o700)
    outside = tmp_path / "outside.json"
    outside.write_text(ControlCommand(action="stop").model_dump_json())
    (inbox_dir / "1-link.json").symlink_to(outside)
    os.mkfifo(inbox_dir / "2-fifo.json")
    (inbox_dir / "3-junk.json").write_text("{not json")
    (inbox_dir / "4-big.json").write_bytes(b" " * (MAX_FILE_BYTES + 1))
    (inbox_dir / "5-folder.json").mkdir()
    (inbox_dir / "6-\x1b[31mred.json").write_text('{"action": "explode"}')
    (inbox_dir / "7-nan.json").write_text('{"action": "pause", "ts": NaN}')
    good = ControlCommand(action="inject", text="still works")
    send(live, good)
    rec = Recorder()
    inbox = _inbox(live, rec)
    assert inbox.drain() == 1
    assert [c.id for c in rec.applied] == [good.id]
    ((message, cid),) = rec.warnings
    assert cid is None and message.startswith("ignored 7 files in control/ that are not commands: ")
    for part in ("1-link.json (a symbolic link", "2-fifo.json (a FIFO", "3-junk.json (not a moot command)",
                 f"4-big.json ({MAX_FILE_BYTES + 1} bytes; the limit is {MAX_FILE_BYTES})", "5-folder.json (a folder"):
        assert part in message, part
    assert "\x1b" not in message and "and 2 more" in message
    assert outside.exists() and json.loads(outside.read_text())["action"] == "stop"  # the target is untouched
    assert os.listdir(inbox_dir) == ["5-folder.json"]
    assert inbox.drain() == 0 and len(rec.warnings) == 1  # the folder it cannot remove is reported once


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_a_command_file_of_another_user_is_refused(live: DebateFolder) -> None:
    cmd = ControlCommand(action="stop")
    send(live, cmd)
    os.chown(control_dir(live) / cmd.filename, 12345, 12345)
    rec = Recorder()
    assert _inbox(live, rec).drain() == 0 and rec.applied == []
    assert "written by another user" in rec.warnings[0][0]


def test_a_control_folder_that_is_a_link_is_neither_read_nor_written(live: DebateFolder, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = elsewhere / "1-x.json"
    planted.write_text(ControlCommand(action="stop").model_dump_json())
    control_dir(live).symlink_to(elsewhere)
    rec = Recorder()
    inbox = _inbox(live, rec)
    assert inbox.drain() == 0 and inbox.drain() == 0
    assert rec.applied == [] and planted.exists()
    ((message, _),) = rec.warnings
    assert message.startswith("commands from other processes are not read: ") and "not a folder" in message
    with pytest.raises(InputError, match="not a folder"):
        send(live, ControlCommand(action="pause"))
    assert os.listdir(elsewhere) == ["1-x.json"]


def test_a_command_the_debate_cannot_take_is_a_warning_with_its_id(live: DebateFolder) -> None:
    stop, pause = ControlCommand(action="stop"), ControlCommand(action="pause")
    send(live, stop)
    send(live, pause)
    rec = Recorder(fail=RuntimeError("boom"))
    assert _inbox(live, rec).drain() == 1
    assert [c.id for c in rec.applied] == [pause.id]
    assert rec.warnings == [(f"command {stop.id} (stop) from another process refused: RuntimeError: boom", stop.id)]


def test_a_withdrawn_command_is_never_applied_and_a_claimed_one_cannot_be_withdrawn(live: DebateFolder) -> None:
    first, second = ControlCommand(action="pause"), ControlCommand(action="resume")
    send(live, first)
    assert withdraw(live, first) is True
    rec = Recorder()
    assert _inbox(live, rec).drain() == 0 and rec.applied == [] and rec.warnings == []
    send(live, second)
    assert _inbox(live, rec).drain() == 1
    assert withdraw(live, second) is False


def test_commands_wait_until_the_debate_takes_them_and_leftover_claims_are_swept(live: DebateFolder) -> None:
    cmd = ControlCommand(action="pause")
    send(live, cmd)
    (control_dir(live) / ".claimed-0123456789abcdef").write_text("{}")
    rec = Recorder()
    ready = False
    inbox = Inbox(live, rec.apply, rec.warn, since=0.0, ready=lambda: ready)
    inbox.sweep()
    assert inbox.drain() == 0 and rec.applied == []
    assert os.listdir(control_dir(live)) == [cmd.filename]
    ready = True
    assert inbox.drain() == 1


async def test_the_orchestrator_refuses_commands_that_would_change_nothing(tmp_path: Path) -> None:
    from moot.core.config import Overrides, build_config
    from moot.core.session import SessionOptions, new_session

    cfg = build_config({}, Overrides(rounds=1, roles=["architect", "kiss"], provider="demo"))
    session = new_session("Design a cache", cfg, SessionOptions(state_dir=tmp_path / "d", demo_delay=0))
    try:
        orch = session.orchestrator
        with pytest.raises(ValueError, match="not paused"):
            orch.apply_command(ControlCommand(action="resume"))
        orch.apply_command(ControlCommand(action="pause"))
        with pytest.raises(ValueError, match="already paused"):
            orch.apply_command(ControlCommand(action="pause"))
        with pytest.raises(ValueError, match="no agent 'nobody'; agents: architect, kiss"):
            orch.apply_command(ControlCommand(action="summarize", agent="nobody"))
        with pytest.raises(ValueError, match="empty note"):
            orch.apply_command(ControlCommand(action="inject", text="  "))
        orch.apply_command(ControlCommand(action="stop"))
        with pytest.raises(ValueError, match="already stopping"):
            orch.apply_command(ControlCommand(action="stop"))
    finally:
        await session.close()


async def test_a_pause_soon_after_a_resume_is_said_again_once_its_calls_end(tmp_path: Path) -> None:
    """The second pause of a debate, taken while calls started after the resume are in flight,
    is reported effective when they end, as the first was (it was not: the engine remembered
    having said it, and a TUI waiting for "no call in flight" waited for ever)."""
    config = load_config(None, Overrides(rounds=1, provider="demo", roles=["architect", "kiss"]))
    session = new_session("Design a rate limiter for a public API", config,
                          SessionOptions(state_dir=tmp_path / "s", demo_delay=0.01))
    orch = session.orchestrator
    effective: list[ControlChanged] = []
    started: list[CallStarted] = []

    def listen(event: Event) -> None:
        if isinstance(event, ControlChanged) and event.action == "pause" and event.effective:
            effective.append(event)
        elif isinstance(event, CallStarted):
            started.append(event)

    session.bus.listen(listen)
    run = asyncio.create_task(session.run())

    async def until(predicate: Callable[[], bool]) -> None:
        for _ in range(2000):
            if predicate():
                return
            await asyncio.sleep(0.01)
        raise AssertionError("timed out")

    await until(lambda: len(started) >= 1)
    assert orch.pause()
    await until(lambda: len(effective) == 1)
    calls_before = len(started)
    assert orch.resume()
    await until(lambda: len(started) > calls_before)  # a call began after the resume and is in flight
    assert orch.pause()
    await until(lambda: len(effective) == 2)
    assert orch.resume()
    await run
    assert session.state.status == "completed"


@pytest.mark.slow
def test_a_debate_named_with_run_id_is_the_one_ctl_steers_whatever_else_is_in_the_folder(tmp_path: Path) -> None:
    """Guessing the newest folder picked an older debate; the caller names the debate instead."""
    states = tmp_path / "debates"
    older = cli("run", "Pick a message queue for the billing events", "--headless", "--provider", "demo",
                "--protocol", "single", "--id", "queue-choice", "--state-dir", str(states))
    assert older.returncode == 0, older.stderr
    log_err = (tmp_path / "run.err").open("w")
    run = subprocess.Popen(
        [sys.executable, "-m", "moot", "run", "Design a rate limiter for a public API", "--headless", "-r", "3",
         "--provider", "demo", "--demo-delay", "0.05", "--id", "rate-limiter", "--state-dir", str(states)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_err, env=_env())
    try:
        wait_for(lambda: (states / "rate-limiter" / "events.jsonl").exists(), "the named debate's first event")
        stop = moot("ctl", "rate-limiter", "stop", "--state-dir", str(states), "--wait", str(WAIT_S))
        assert stop.returncode == 0, stop.stderr
        assert run.wait(timeout=WAIT_S) == 0, (tmp_path / "run.err").read_text()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert sorted(p.name for p in states.iterdir()) == ["queue-choice", "rate-limiter"]
    assert [e for e in events_of(states / "rate-limiter") if e["type"] == "control"]
    assert not [e for e in events_of(states / "queue-choice") if e["type"] == "control"]


@pytest.mark.parametrize("name", ["../elsewhere", "/tmp/debate", ".hidden", "a b", "x" * 65, ""])
def test_run_id_takes_a_name_never_a_path(tmp_path: Path, name: str) -> None:
    r = cli("run", "Pick a message queue", "--headless", "--provider", "demo", "--id", name,
            "--state-dir", str(tmp_path / "debates"))
    assert r.returncode == 2 and "is not a debate name" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "debates").exists()
    assert not (tmp_path / "elsewhere").exists()


def test_run_id_of_a_debate_that_exists_is_refused_and_leaves_it_alone(tmp_path: Path) -> None:
    states = tmp_path / "debates"
    args = ("run", "Pick a message queue", "--headless", "--provider", "demo", "--protocol", "single",
            "--id", "queue-choice", "--state-dir", str(states))
    assert cli(*args).returncode == 0
    before = (states / "queue-choice" / "events.jsonl").read_bytes()
    again = cli(*args)
    assert again.returncode == 2 and "queue-choice already exists" in again.stderr
    assert again.stderr.count("\n") == 1
    assert (states / "queue-choice" / "events.jsonl").read_bytes() == before

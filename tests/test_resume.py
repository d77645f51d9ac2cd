"""Nothing lost: a debate killed at any moment resumes to the same structure.

The crash tests drive the real CLI in subprocesses against the loopback server
(itself a subprocess, `python -m tests.loopback`), kill them with SIGKILL, SIGTERM
and SIGINT, and resume them with `moot resume`. The sweep at the end cuts a
recorded log at every event boundary (and inside every line) and resumes each cut
through the library API, so "any moment" is covered exhaustively at event grain.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from moot.core.config import Overrides, build_config
from moot.core.errors import StoreError
from moot.core.events import parse_event
from moot.core.models.state import DebateState
from moot.core.session import SessionOptions, new_session, resume_session
from moot.core.storage.folder import DebateFolder
from moot.core.storage.state import apply, new_state
from tests.conftest import ROOT, LoopbackServer, cli

PROBLEM = "Design a URL shortener for 10k writes per second"
AGENTS = ["architect", "performance", "kiss"]
KEY = "sk-test-secret-123456"
TRACEBACK = "Traceback (most recent call last)"


# ---------------------------------------------------------------- helpers (also used by the other files)


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY")}
    env.update(extra)
    return env


def spawn(*args: str, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start `moot ARGS` in the background; its stdout/stderr go to log.out / log.err."""
    with open(log.with_suffix(".out"), "w") as out, open(log.with_suffix(".err"), "w") as err:
        return subprocess.Popen([sys.executable, "-m", "moot", *args], stdout=out, stderr=err,
                                env=env or cli_env(), text=True)


def start_loopback(*args: str) -> tuple[subprocess.Popen, str]:
    """`python -m tests.loopback --port 0 ARGS` as a subprocess; returns it and its base URL."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.loopback", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT, text=True,
                            env=cli_env())
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("PORT "), line
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/v1"


def only_debate(state_dir: Path) -> Path:
    folders = [p for p in state_dir.iterdir() if p.is_dir()]
    assert len(folders) == 1, folders
    return folders[0]


def wait_for_events(folder_root: Path, n: int, timeout: float = 60) -> Path:
    """Wait until the (only) debate under `folder_root` has logged at least n lines."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if folder_root.is_dir():
            dirs = [p for p in folder_root.iterdir() if (p / "events.jsonl").exists()]
            if dirs and (dirs[0] / "events.jsonl").read_bytes().count(b"\n") >= n:
                return dirs[0]
        time.sleep(0.05)
    raise AssertionError(f"no debate with {n} events under {folder_root}")


def call_in_flight(folder_root: Path, min_events: int = 10) -> bool:
    """Has a call just started (the log's last line is a call_started) after at least
    `min_events` lines? Replies take ~0.5 s, so a signal sent now lands mid-call; a plain
    event count can land exactly between two phases, with nothing in flight."""
    if not folder_root.is_dir():
        return False
    dirs = [p for p in folder_root.iterdir() if (p / "events.jsonl").exists()]
    if not dirs:
        return False
    lines = (dirs[0] / "events.jsonl").read_bytes().splitlines()
    return len(lines) >= min_events and b'"type":"call_started"' in lines[-1]


def slot(c) -> tuple:  # type: ignore[no-untyped-def]
    return (c.round, c.agent_id, c.type, c.target_agent_id)


def logged_contributions(folder: Path) -> list:
    """Contributions in a log as it is on disk (a torn last line is ignored)."""
    lines = (folder / "events.jsonl").read_bytes().split(b"\n")
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            e = parse_event(line)
        except ValueError:
            assert i == len(lines) - 1, f"line {i + 1} of the log is corrupt"
            continue
        if e.type == "contribution_added":
            out.append(e.contribution)
    return out


def check_complete(folder: Path, rounds: int, agents: list[str]) -> DebateState:
    """The structure of an uninterrupted debate, a log that parses line by line with
    contiguous seqs, one contribution per call slot in the whole log, and a snapshot
    equal to the fold of the log from scratch."""
    raw = (folder / "events.jsonl").read_bytes()
    assert raw.endswith(b"\n"), "the log ends in a torn line"
    events = [parse_event(line) for line in raw.split(b"\n") if line]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert sum(e.type == "debate_started" for e in events) == 1
    per_slot = Counter(slot(e.contribution) for e in events if e.type == "contribution_added")
    assert per_slot and max(per_slot.values()) == 1, [s for s, n in per_slot.items() if n > 1]

    scratch = new_state(folder.name)
    for e in events:
        apply(scratch, e)
    snapshot = DebateState.model_validate_json((folder / "state.json").read_bytes())
    assert snapshot.model_dump(exclude={"log_offset"}) == scratch.model_dump(exclude={"log_offset"})
    assert snapshot.log_offset == len(raw)  # the final snapshot covers the whole log
    state = DebateFolder(folder).load()
    assert state.model_dump(exclude={"log_offset"}) == scratch.model_dump(exclude={"log_offset"})

    assert state.status == "completed", state.error
    assert len(state.rounds) == rounds
    n = len(agents)
    for rnd in state.rounds:
        kinds = Counter(c.type for c in rnd.contributions)
        if state.protocol == "conversation":  # one message a turn, speakers in config order
            assert [(c.type, c.agent_id) for c in rnd.contributions] == [("message", agents[(rnd.number - 1) % n])]
            continue
        if state.protocol == "simultaneous":
            assert kinds == {"answer": n} and sorted(c.agent_id for c in rnd.contributions) == sorted(agents)
            continue
        assert kinds == {"proposal": n, "critique": n * (n - 1), "refinement": n}, (rnd.number, kinds)
        assert sorted(c.agent_id for c in rnd.contributions if c.type == "proposal") == sorted(agents)
        pairs = {(c.agent_id, c.target_agent_id) for c in rnd.contributions if c.type == "critique"}
        assert pairs == {(a, t) for a in agents for t in agents if a != t}
    assert state.final_solution is not None and state.final_solution.description
    return state


def resume_hint(stderr: str) -> list[str]:
    """The `moot resume …` command a message tells the user to run, as argv."""
    m = re.search(r"continue with `moot (resume [^`]+)`", stderr)
    assert m, stderr
    return m.group(1).split()


@pytest.fixture(scope="module")
def slow_server() -> Iterator[str]:
    """A loopback server whose replies take about half a second to stream."""
    proc, url = start_loopback("--delay", "0.15", "--chunk-delay", "0.01")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def fast_server() -> Iterator[str]:
    with LoopbackServer() as srv:
        yield srv.base_url


# ---------------------------------------------------------------- SIGKILL at any moment


def kill_once_logged(proc: subprocess.Popen, sd: Path, after: int) -> None:
    """SIGKILL `proc` once the debate under `sd` has logged `after` contributions, then a random
    fraction of a reply later, so the kill lands mid-call, mid-write or between calls (counted in
    events, not seconds, so a loaded machine moves nothing)."""
    deadline = time.monotonic() + 120  # a hang guard, not a limit
    while True:
        assert time.monotonic() < deadline, f"no {after} contributions under {sd}"
        assert proc.poll() is None, "the debate ended before the kill; the server is too fast for this test"
        logs = list(sd.glob("*/events.jsonl"))
        if logs and logs[0].read_bytes().count(b'"type":"contribution_added"') >= after:
            break
        time.sleep(0.02)
    time.sleep(random.uniform(0.0, 0.4))  # replies take about 0.5 s
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL


@pytest.mark.slow
def test_sigkill_early_midway_and_late_then_resume(tmp_path: Path, slow_server: str, fast_server: str) -> None:
    """One debate killed with SIGKILL early, midway and late (once 1, 12 and 24 of its 36
    contributions are logged) and resumed after each kill, so a resumed debate is killed and
    resumed again; the last resume completes it with no lost and no repeated contribution, and
    what each kill left on disk is still there, unchanged (not redone)."""
    env = cli_env(OPENAI_API_KEY=KEY)
    sd = tmp_path / "D"
    proc = spawn("run", PROBLEM, "--provider", "openai", "--base-url", slow_server, "--headless", "-r", "3",
                 "--state-dir", str(sd), log=tmp_path / "run", env=env)
    kept: list[list] = []  # per kill: the contributions on disk when it landed
    for i, after in enumerate((1, 12, 24)):
        kill_once_logged(proc, sd, after)
        folder = only_debate(sd)
        assert DebateFolder(folder).load().status == "running"  # killed mid-debate, no final event
        kept.append(logged_contributions(folder))
        # The slow server again until the last kill, so that each kill lands mid-debate.
        proc = spawn("resume", folder.name, "--state-dir", str(sd), "--headless", "--base-url",
                     slow_server if i < 2 else fast_server, log=tmp_path / f"resume{i}", env=env)
    assert proc.wait(timeout=90) == 0, (tmp_path / "resume2.err").read_text()[-2000:]
    for i in range(3):
        err = (tmp_path / f"resume{i}.err").read_text()
        assert TRACEBACK not in err
        assert f"debate {folder.name} resumed at round" in err
    state = check_complete(folder, 3, AGENTS)
    final = {c.id: c for c in state.all_contributions()}
    for c in (c for contributions in kept for c in contributions):
        assert final[c.id].content == c.content
    assert "Confidence" in (tmp_path / "resume2.out").read_text()
    for path in folder.iterdir():
        assert KEY.encode() not in path.read_bytes()
    # The later the kill, the more was already done and kept.
    done = [len(k) for k in kept]
    assert all(n >= after for n, after in zip(done, (1, 12, 24))) and done[0] < done[1] < done[2], done


# ---------------------------------------------------------------- SIGTERM / SIGINT


@pytest.mark.slow
def test_sigterm_and_sigint_stop_at_once_and_resume(tmp_path: Path, slow_server: str, fast_server: str) -> None:
    """One debate stopped by SIGTERM with calls in flight, resumed with the exact command the
    message gave, stopped again by SIGINT, then resumed to completion: each signal stops it at
    once (calls in flight never finish), in one line that names its cause, with the log flushed."""
    sd = tmp_path / "D"
    proc = spawn("run", PROBLEM, "--base-url", slow_server, "--headless", "-r", "1", "--state-dir", str(sd),
                 log=tmp_path / "SIGTERM")
    logged = 0  # lines in the log when this process started
    for sig, then in ((signal.SIGTERM, "SIGINT"), (signal.SIGINT, "resume")):
        deadline = time.monotonic() + 120  # a hang guard
        # Some contributions of this process are in, other calls are in flight.
        while not (call_in_flight(sd, max(10, logged + 2))
                   and b'"type":"contribution_added"' in b"\n".join(
                       (only_debate(sd) / "events.jsonl").read_bytes().split(b"\n")[logged:])):
            assert time.monotonic() < deadline, f"no call in flight under {sd}"
            assert proc.poll() is None, f"the debate ended before its {sig.name}; the server is too fast"
            time.sleep(0.01)
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 130  # "at once" is checked below: calls in flight never finished
        folder = only_debate(sd)
        err = (tmp_path / f"{sig.name}.err").read_text()
        assert TRACEBACK not in err
        last = err.strip().splitlines()[-1]
        assert last == (f"moot: debate interrupted ({sig.name}); saved in {folder}; "
                        f"continue with `moot resume {folder.name} --state-dir {sd}`")
        # said once, with its cause (not "interrupted: interrupted")
        assert err.replace(str(tmp_path), "").count("interrupted") == 1, err
        raw = (folder / "events.jsonl").read_bytes()
        assert raw.endswith(b"\n")  # no torn line: the log was flushed
        events = [parse_event(line) for line in raw.split(b"\n") if line]
        assert events[-1].type == "debate_interrupted"
        assert DebateFolder(folder).load().status == "interrupted"
        # It did not wait for its calls in flight: some started and never finished.
        mine = events[logged:]
        started = {e.view.call_id for e in mine if e.type == "call_started"}
        finished = {e.contribution.metadata.call_id for e in mine if e.type == "contribution_added"}
        assert finished and started - finished
        logged = len(events)
        # The exact command the message gave, plus the server to talk to (the slow one until the
        # second signal has landed).
        proc = spawn(*resume_hint(err), "--headless", "--base-url", fast_server if then == "resume" else slow_server,
                     log=tmp_path / then)
    assert proc.wait(timeout=60) == 0, (tmp_path / "resume.err").read_text()[-2000:]
    check_complete(folder, 1, AGENTS)


@pytest.mark.slow
def test_second_writer_is_refused_with_one_line(tmp_path: Path, slow_server: str) -> None:
    sd = tmp_path / "D"
    # Four rounds (about 8 s against this server): the checks below take ~1 s, long before it ends.
    proc = spawn("run", PROBLEM, "--base-url", slow_server, "--headless", "-r", "4", "--state-dir", str(sd),
                 log=tmp_path / "run")
    try:
        folder = wait_for_events(sd, 3)
        # In this process: another one than the writer, as a person's second `moot` would be.
        r = cli("resume", folder.name, "--state-dir", str(sd), "--headless", "--base-url", slow_server)
        assert r.returncode == 2
        assert r.stderr == f"moot: debate {folder.name} is being written by another moot process\n"
        # Readers are never blocked by the writer.
        shown = cli("show", folder.name, "--state-dir", str(sd))
        assert shown.returncode == 0 and " · running · " in shown.stdout
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    check_complete(folder, 4, AGENTS)
    # The lock went with the writer: now the debate is complete, resume says so.
    r = cli("resume", folder.name, "--state-dir", str(sd), "--headless")
    assert r.returncode == 2 and r.stderr == f"moot: debate {folder.name} is already completed\n"


def test_lock_is_held_by_a_library_session(tmp_path: Path) -> None:
    cfg = build_config({}, Overrides(rounds=1, provider="demo"))
    session = new_session(PROBLEM, cfg, SessionOptions(state_dir=tmp_path, demo_delay=0))
    try:
        with pytest.raises(StoreError, match="being written by another moot process"):
            resume_session(session.folder.id, SessionOptions(state_dir=tmp_path))
    finally:
        session.lock.release()


# ---------------------------------------------------------------- torn lines and snapshots


def _demo_debate(tmp_path: Path, rounds: int = 2, roles: list[str] | None = None) -> DebateFolder:
    r = cli("run", PROBLEM, "--provider", "demo", "--headless", "-r", str(rounds), "--state-dir", str(tmp_path),
            *(["-a", ",".join(roles)] if roles else []))  # in-process: headless demo runs without pacing
    assert r.returncode == 0, r.stderr
    return DebateFolder(only_debate(tmp_path))


def _cut_log(folder: DebateFolder, keep_lines: int, torn: bytes = b"") -> None:
    lines = folder.events_path.read_bytes().split(b"\n")[:keep_lines]
    folder.events_path.write_bytes(b"".join(line + b"\n" for line in lines) + torn)


def test_torn_last_line_and_corrupt_snapshot_then_cli_resume(tmp_path: Path) -> None:
    folder = _demo_debate(tmp_path)
    lines = folder.events_path.read_bytes().split(b"\n")
    k = len(lines) // 2
    _cut_log(folder, k, torn=lines[k][: len(lines[k]) // 2])  # killed mid-append
    folder.state_path.write_bytes(b'{"id": "x", "problem": ')  # killed mid-rename cannot do this; a disk can
    shown = cli("show", folder.id, "--state-dir", str(tmp_path))
    assert shown.returncode == 0 and " · unfinished · " in shown.stdout, shown.stderr  # no process runs it
    r = cli("resume", folder.id, "--state-dir", str(tmp_path), "--headless")
    assert r.returncode == 0, r.stderr
    check_complete(folder.path, 2, AGENTS)


def test_stale_snapshot_temp_files_are_cleaned_on_resume(tmp_path: Path) -> None:
    folder = _demo_debate(tmp_path, rounds=1)
    _cut_log(folder, 10)
    folder.state_path.unlink()
    stale = folder.path / ".state.json.99999.tmp"
    stale.write_bytes(b'{"half": ')
    r = cli("resume", folder.id, "--state-dir", str(tmp_path), "--headless")
    assert r.returncode == 0, r.stderr
    assert not stale.exists()
    check_complete(folder.path, 1, AGENTS)


def test_resume_from_every_cut_of_the_log(tmp_path: Path) -> None:
    """Cut a recorded log after every event and inside every line, with the snapshot
    taken at a random earlier event (or none); each cut resumes to the full structure,
    keeping every contribution the cut log held."""
    roles = ["architect", "kiss"]
    source = _demo_debate(tmp_path / "src", rounds=2, roles=roles)
    lines = source.events_path.read_bytes().split(b"\n")[:-1]
    rng = random.Random(5)

    async def resume_all() -> None:
        for k in range(1, len(lines)):
            torn = lines[k][: rng.randrange(1, len(lines[k]))] if k % 2 else b""
            root = tmp_path / f"cut{k}"
            folder = DebateFolder(root / source.id)
            folder.path.mkdir(parents=True)
            folder.events_path.write_bytes(b"".join(line + b"\n" for line in lines[:k]) + torn)
            snap_at = rng.randrange(0, k + 1)
            if snap_at:
                state = new_state(source.id)
                for line in lines[:snap_at]:
                    apply(state, parse_event(line))
                folder.state_path.write_text(state.model_dump_json())
            kept = logged_contributions(folder.path)
            session = resume_session(source.id, SessionOptions(state_dir=root, demo_delay=0))
            await session.run()
            final = check_complete(folder.path, 2, roles)
            ids = {c.id for c in final.all_contributions()}
            assert {c.id for c in kept} <= ids, f"cut after line {k} lost a contribution"

    asyncio.run(resume_all())


def test_resume_mid_round_summarizes_like_an_uninterrupted_debate(tmp_path: Path) -> None:
    """Killed during round 1's refinements, a debate must not summarize round 1's own
    work on resume: the summaries (and so what later calls see) match an uninterrupted run."""
    source = _demo_debate(tmp_path / "src", rounds=3)
    lines = source.events_path.read_bytes().split(b"\n")[:-1]
    events = [parse_event(line) for line in lines]
    k = next(i for i, e in enumerate(events) if e.type == "contribution_added" and e.contribution.type == "refinement")
    folder = DebateFolder(tmp_path / "cut" / source.id)
    folder.path.mkdir(parents=True)
    folder.events_path.write_bytes(b"".join(line + b"\n" for line in lines[: k + 1]))
    asyncio.run(resume_session(source.id, SessionOptions(state_dir=tmp_path / "cut", demo_delay=0)).run())

    def summaries(f: DebateFolder) -> list[tuple[int, str]]:
        logged = map(parse_event, f.events_path.read_bytes().split(b"\n")[:-1])
        return sorted((e.summary.round, e.summary.agent_id) for e in logged if e.type == "summary_added")

    assert summaries(folder) == summaries(source)


def test_disk_full_stops_the_debate_and_it_resumes(tmp_path: Path) -> None:
    """The event log hits a file-size limit (as on a full disk): one line, exit 2,
    what reached the disk stays readable, and the debate resumes once there is room."""
    import resource

    def small_files() -> None:  # in the child only
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead of a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, 40_000))

    sd = tmp_path / "D"
    r = subprocess.run([sys.executable, "-m", "moot", "run", PROBLEM, "--provider", "demo", "--headless", "-r", "2",
                        "--state-dir", str(sd)], capture_output=True, text=True, env=cli_env(MOOT_DEMO_DELAY="0"),
                       preexec_fn=small_files, timeout=60)
    assert r.returncode == 2, r.stderr
    assert TRACEBACK not in r.stderr
    folder = only_debate(sd)
    errors = [line for line in r.stderr.splitlines() if line.startswith("moot:")]
    assert errors == [f"moot: cannot write the event log {folder / 'events.jsonl'}: File too large; the debate "
                      f"stopped and every event on disk is kept; once that is fixed, continue with "
                      f"`moot resume {folder.name} --state-dir {sd}`"]
    assert (folder / "events.jsonl").stat().st_size <= 40_000
    kept = logged_contributions(folder)
    assert kept and DebateFolder(folder).load().status == "running"
    r = cli(*resume_hint(r.stderr), "--headless")  # in-process: headless demo runs without pacing
    assert r.returncode == 0, r.stderr
    final = check_complete(folder, 2, AGENTS)
    assert {c.id for c in kept} <= {c.id for c in final.all_contributions()}

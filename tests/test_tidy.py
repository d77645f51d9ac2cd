"""The saved debates kept tidy: a bench listed as one entry, `moot list`'s filters, and
`moot rm` / `moot prune` (asked in a terminal, `--yes` elsewhere, never a running debate)."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import cli

PROBLEMS = ("Pick a message queue for the billing events", "Design a rate limiter for a public API")


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """`moot list` cuts the problem to the terminal's width: read it whole here."""
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state dir with one bench (3 questions × 2 protocols) and two debates run on their own."""
    sd = tmp_path_factory.mktemp("tidy") / "debates"
    r = cli("bench", "arithmetic:3", "--protocols", "single,vote", "--provider", "demo", "--headless",
            "--state-dir", str(sd), "-o", str(sd.parent / "bench.md"))
    assert r.returncode == 0, r.stderr
    for name, problem, protocol in (("queue", PROBLEMS[0], "single"), ("limiter", PROBLEMS[1], "vote")):
        r = cli("run", problem, "--headless", "--provider", "demo", "--protocol", protocol, "--id", name,
                "--state-dir", str(sd))
        assert r.returncode == 0, r.stderr
    return sd


@pytest.fixture
def states(filled: Path, tmp_path: Path) -> Path:
    """A copy of `filled` each test may change."""
    return Path(shutil.copytree(filled, tmp_path / "debates"))


def rows(stdout: str) -> list[str]:
    return stdout.splitlines()[1:]


def test_a_bench_is_one_entry_of_the_list_and_lists_its_debates_on_request(filled: Path) -> None:
    r = cli("list", "--state-dir", str(filled))
    assert r.returncode == 0, r.stderr
    assert len(rows(r.stdout)) == 3, r.stdout  # the bench and the two debates
    (bench,) = [row for row in rows(r.stdout) if row.startswith("b-")]
    group = bench.split()[0]
    assert "6 completed" in bench and "6 debates" in bench and "single ×3" in bench and "vote ×3" in bench
    inside = cli("list", "--bench", group, "--state-dir", str(filled))
    assert inside.returncode == 0 and len(rows(inside.stdout)) == 6
    assert all(row.startswith(group + "-") and "What is the result of" in row for row in rows(inside.stdout))
    unknown = cli("list", "--bench", "b-00000000", "--state-dir", str(filled))
    assert unknown.returncode == 2 and "no bench 'b-00000000'" in unknown.stderr


def test_list_filters_by_protocol_and_status_and_keeps_the_newest(filled: Path) -> None:
    votes = cli("list", "--protocol", "vote", "--state-dir", str(filled))
    assert [row.split()[0] for row in rows(votes.stdout)][0] == "limiter"
    assert any("vote ×3" in row and "single" not in row for row in rows(votes.stdout))
    assert not any(row.startswith("queue") for row in rows(votes.stdout))
    newest = cli("list", "--limit", "1", "--state-dir", str(filled))
    assert [row.split()[0] for row in rows(newest.stdout)] == ["limiter"]
    failed = cli("list", "--status", "failed", "--state-dir", str(filled))
    assert failed.returncode == 0 and failed.stdout == "" and "no debates that match" in failed.stderr
    bad = cli("list", "--status", "finished", "--state-dir", str(filled))
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_rm_outside_a_terminal_needs_yes_and_an_unknown_id_removes_nothing(states: Path) -> None:
    before = sorted(p.name for p in states.iterdir() if not p.name.startswith("."))
    asked = cli("rm", "queue", "--state-dir", str(states))
    assert asked.returncode == 2 and "confirm it in a terminal, or pass --yes" in asked.stderr
    assert asked.stderr.count("\n") == 1
    typo = cli("rm", "queue", "limitr", "--yes", "--state-dir", str(states))
    assert typo.returncode == 2 and "no debate 'limitr'" in typo.stderr and "nothing removed" in typo.stderr
    prefix = cli("rm", "que", "--yes", "--state-dir", str(states))  # a prefix is not an id here
    assert prefix.returncode == 2
    assert sorted(p.name for p in states.iterdir() if not p.name.startswith(".")) == before
    group = next(name for name in before if name.startswith("b-"))[:10]
    done = cli("rm", "queue", group, "--yes", "--state-dir", str(states))
    assert done.returncode == 0 and "removed 7 of 7 debates" in done.stderr, done.stderr
    assert sorted(p.name for p in states.iterdir() if not p.name.startswith(".")) == ["limiter"]
    assert [row.split()[0] for row in rows(cli("list", "--state-dir", str(states)).stdout)] == ["limiter"]


def test_prune_removes_only_what_is_older_than_the_age(states: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli("prune", "--older-than", "30d", "--yes", "--state-dir", str(states)).returncode == 0
    assert len([p for p in states.iterdir() if not p.name.startswith(".")]) == 8  # nothing is that old
    bad = cli("prune", "--older-than", "a month", "--yes", "--state-dir", str(states))
    assert bad.returncode == 2 and "bad age 'a month'" in bad.stderr
    in_a_month = time.time() + 31 * 86400
    monkeypatch.setattr("moot.commands.tidy.time.time", lambda: in_a_month)
    asked = cli("prune", "--older-than", "30d", "--state-dir", str(states))
    assert asked.returncode == 2 and "8 debates" in asked.stderr
    pruned = cli("prune", "--older-than", "30d", "--yes", "--state-dir", str(states))
    assert pruned.returncode == 0 and "removed 8 of 8 debates" in pruned.stderr
    assert not [p for p in states.iterdir() if not p.name.startswith(".")]


def test_rm_asks_in_a_terminal_and_takes_no_for_an_answer(states: Path) -> None:
    def answer(reply: bytes) -> tuple[int, str]:
        controller, terminal = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "moot", "rm", "queue", "--state-dir", str(states)],
                                stdin=terminal, stdout=terminal, stderr=terminal, env=os.environ.copy())
        os.close(terminal)
        seen = b""
        while b"[y/N]" not in seen:
            ready, _, _ = select.select([controller], [], [], 60)
            assert ready, seen
            seen += os.read(controller, 4096)
        os.write(controller, reply)
        code = proc.wait(timeout=60)
        try:
            while select.select([controller], [], [], 0.2)[0]:
                seen += os.read(controller, 4096)
        except OSError:  # the terminal closed with the process
            pass
        os.close(controller)
        return code, seen.decode("utf-8", "replace")

    code, shown = answer(b"n\n")
    assert code == 1 and "Remove 1 debate" in shown and "nothing removed" in shown
    assert (states / "queue").is_dir()
    code, shown = answer(b"y\n")
    assert code == 0 and "removed 1 of 1 debates" in shown
    assert not (states / "queue").exists()


def test_a_debate_that_a_process_runs_is_never_removed(states: Path) -> None:
    from moot.core.storage.state_dir import StateDir

    lock = StateDir(states).open("queue").lock()
    lock.acquire()  # as the process that runs (or resumes) it holds it
    try:
        r = cli("rm", "queue", "limiter", "--yes", "--state-dir", str(states))
        assert r.returncode == 2 and "queue is being run by a moot process; nothing removed" in r.stderr
        assert (states / "queue").is_dir() and (states / "limiter").is_dir()
    finally:
        lock.release()
    assert cli("rm", "queue", "--yes", "--state-dir", str(states)).returncode == 0
    assert not (states / "queue").exists()

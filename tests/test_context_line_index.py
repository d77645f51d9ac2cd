"""`moot context --turn` reads only the lines of the log a turn's views need, found through the
line index cached beside the log (`lines.sqlite`); what it prints is the same whether that index
is there, missing, behind the log, cut off by a torn last line, damaged or made for another log.

A demo conversation of a hundred-odd turns with a pinned constraint, a summary every few turns
and the recall tier (old messages brought back) gives views that read items from all over the log.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from moot.core.config import Overrides, build_config
from moot.core.context.inspect import calls_at_turn
from moot.core.session import SessionOptions, new_session
from moot.core.storage.folder import DebateFolder
from tests.conftest import cli

TURNS = 120
LATE = (1, 57, TURNS - 1, TURNS)
PROBLEM = "Design a rate limiter for a public API that thousands of tenants share"
CONSTRAINT = "Every tenant keeps its own quota of one thousand requests a minute, whatever its plan."


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The state dir of a finished demo conversation `conv` (never changed: each test copies it)."""
    state_dir = tmp_path_factory.mktemp("recorded")
    cfg = build_config({"debate": {"protocol": "conversation", "turns": TURNS, "pinned": [CONSTRAINT],
                                   "conversation": {"recent_messages": 8, "summary_every": 8}}},
                       Overrides(provider="demo", roles=["architect", "performance", "security"]))
    session = new_session(PROBLEM, cfg, SessionOptions(state_dir=state_dir, demo_delay=0, deterministic_ids=True,
                                                       debate_id="conv"))
    assert asyncio.run(session.run()).status == "completed"
    assert not (state_dir / "conv" / "lines.sqlite").exists()  # made by the first reader, not the run
    return state_dir


def _copy(recorded: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(recorded, tmp_path / "sd"))


def _context(state_dir: Path, turn: int, *extra: str) -> str:
    out = cli("context", "conv", "--turn", str(turn), *extra, "--state-dir", str(state_dir))
    assert out.returncode == 0, out.stderr
    return out.stdout


def _covered(state_dir: Path) -> int:
    with closing(sqlite3.connect(state_dir / "conv" / "lines.sqlite")) as db:
        (covered,) = db.execute("SELECT covered FROM meta").fetchone()
    return int(covered)


def _line_by_line(state_dir: Path) -> dict[int, str]:
    """The views as read without an index: a folder where the index goes is never used or written."""
    blocked = state_dir / "conv" / "lines.sqlite"
    blocked.mkdir()
    views = {t: _context(state_dir, t) for t in LATE}
    blocked.rmdir()
    return views


def test_views_are_the_same_whatever_state_the_line_index_is_in(recorded: Path, tmp_path: Path) -> None:
    sd = _copy(recorded, tmp_path)
    log = sd / "conv" / "events.jsonl"
    whole = log.read_bytes()
    want = _line_by_line(sd)
    # ...which is what the folded state of the whole debate shows.
    state = DebateFolder(sd / "conv").load(bounded=False)
    for turn in (1, TURNS):
        assert json.loads(_context(sd, turn, "--json")) == json.loads(json.dumps(calls_at_turn(state, turn)))
    viewed = want[TURNS]
    assert "pinned: constraint 1" in viewed and "recall:" in viewed and "] summary · " in viewed

    # Absent: built by the first reader; then present.
    (sd / "conv" / "lines.sqlite").unlink()
    assert {t: _context(sd, t) for t in LATE} == want
    assert _covered(sd) == len(whole)
    assert {t: _context(sd, t) for t in LATE} == want

    # Behind the log: built while the log held its first half, extended from there once it grew.
    (sd / "conv" / "lines.sqlite").unlink()
    half = whole.index(b"\n", len(whole) // 2) + 1
    log.write_bytes(whole[:half])
    assert _context(sd, 1) == want[1]
    assert _covered(sd) == half
    log.write_bytes(whole)
    assert {t: _context(sd, t) for t in LATE} == want
    assert _covered(sd) == len(whole)

    # A torn last line (an append cut short) is left out until it is whole.
    with log.open("ab") as fh:
        fh.write(b'{"debate_id":"conv","ts":1795808809.96,"seq":99999,"type":"warn')
    assert {t: _context(sd, t) for t in LATE} == want
    assert _covered(sd) == len(whole)
    log.write_bytes(whole)

    # Damaged: a file SQLite cannot read, or one without the table of offsets, is made again.
    (sd / "conv" / "lines.sqlite").write_bytes(b"Not an index: these bytes were written over it. " * 200)
    assert {t: _context(sd, t) for t in LATE} == want
    assert _covered(sd) == len(whole)
    with closing(sqlite3.connect(sd / "conv" / "lines.sqlite")) as db:
        db.execute("DROP TABLE lines")
        db.commit()
    assert {t: _context(sd, t) for t in LATE} == want
    with closing(sqlite3.connect(sd / "conv" / "lines.sqlite")) as db:
        assert db.execute("SELECT count(*) FROM lines").fetchone()[0] > TURNS


def test_an_index_made_for_another_log_is_built_again(recorded: Path, tmp_path: Path) -> None:
    sd = _copy(recorded, tmp_path)
    log = sd / "conv" / "events.jsonl"
    whole = log.read_bytes()
    want = _line_by_line(sd)
    assert _context(sd, TURNS) == want[TURNS]  # the index of the log as it is
    # The same events with one line written twice near the start: every later line has moved, so
    # the offsets the index holds are wrong. It must not be trusted, and is built again.
    first_step = whole.index(b'"type":"round_started"')
    start = whole.rindex(b"\n", 0, first_step) + 1
    end = whole.index(b"\n", first_step) + 1
    moved = whole[:end] + whole[start:end] + whole[end:]
    log.write_bytes(moved)
    assert {t: _context(sd, t) for t in LATE} == want
    assert _covered(sd) == len(moved)
    # A shorter log (a copy cut early) than the index covers: built again too.
    cut = whole.index(b"\n", len(whole) // 3) + 1
    log.write_bytes(whole[:cut])
    assert _context(sd, 1) == want[1]
    assert _covered(sd) == cut


def _bytes_read() -> int:
    """Bytes this process has read through system calls so far (Linux)."""
    with open("/proc/self/io") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("rchar:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="counts bytes read through /proc/self/io")
def test_a_late_turn_is_read_through_the_index_not_line_by_line(recorded: Path, tmp_path: Path) -> None:
    sd = _copy(recorded, tmp_path)
    size = (sd / "conv" / "events.jsonl").stat().st_size
    first = _context(sd, TURNS)  # the first reader indexes the log
    before = _bytes_read()
    again = _context(sd, TURNS)
    read = _bytes_read() - before
    assert again == first
    # The turn's calls, the messages of its window, its summary, the turns it recalled and the pin
    # are a small part of the log; two passes over it (what this used to take) read it twice.
    assert read < size / 4, (read, size)

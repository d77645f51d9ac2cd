"""The rows of the sessions screen (`moot.core.storage.sessions`): read once, then taken from the
cache until a debate's files change; a bad cache is rebuilt, never an error."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from moot.core.storage.sessions import CACHE_FILE, SessionList
from moot.core.storage.state_dir import StateDir
from tests.conftest import run_debate


@pytest.fixture
def state_dir(tmp_path: Path) -> StateDir:
    asyncio.run(run_debate(tmp_path, "Design a URL shortener", rounds=1))
    asyncio.run(run_debate(tmp_path, "Pick a message queue for billing events", rounds=1,
                           config={"debate": {"protocol": "conversation", "turns": 4}}))
    return StateDir(tmp_path / "debates")


def test_rows_are_read_once_then_cached_until_the_files_change(state_dir: StateDir) -> None:
    listing = SessionList(state_dir)
    first = listing.rows()
    assert listing.loaded == 2 and (state_dir.root / CACHE_FILE).is_file()
    rows = {row.problem: row for _, row in first}
    assert set(rows) == {"Design a URL shortener", "Pick a message queue for billing events"}
    talk = rows["Pick a message queue for billing events"]
    assert (talk.protocol, talk.unit, talk.done, talk.total, talk.status) == ("conversation", "turns", 4, 4,
                                                                            "completed")
    assert talk.tokens > 0 and talk.demo
    again = SessionList(state_dir)
    assert [r for _, r in again.rows()] == [r for _, r in first] and again.loaded == 0
    folder = next(f for f, r in first if r.protocol == "conversation")
    with folder.events_path.open("a") as fh:  # the log grew (a resumed debate, say): read again
        fh.write("\n")
    third = SessionList(state_dir)
    third.rows()
    assert third.loaded == 1


def test_a_corrupt_or_foreign_cache_is_rebuilt_and_gone_debates_leave_it(state_dir: StateDir) -> None:
    cache = state_dir.root / CACHE_FILE
    cache.write_text('{"version": 1, "rows": {"x": [')
    listing = SessionList(state_dir)
    assert len(listing.rows()) == 2 and listing.loaded == 2
    cache.write_text('{"version": 99, "rows": {}}')
    assert len(SessionList(state_dir).rows()) == 2
    gone = state_dir.debates()[0]
    for path in gone.path.iterdir():
        path.unlink()
    gone.path.rmdir()
    assert len(SessionList(state_dir).rows()) == 1
    assert gone.id not in cache.read_text()


def test_an_unreadable_debate_is_a_row_saying_why(state_dir: StateDir) -> None:
    folder = state_dir.debates()[0]
    folder.state_path.unlink()
    folder.events_path.write_text("not an event\n")
    rows = dict((f.id, r) for f, r in SessionList(state_dir).rows())
    assert rows[folder.id].status == "unreadable" and "corrupt" in rows[folder.id].error

"""A search index lost before a resume is rebuilt beside the debate: the first request does not wait for it,
its progress is said, and it is whole at the end, even after a kill -9 in the middle of it."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path

import pytest

from moot.core.search.index import INDEX_FILE
from moot.core.storage.folder import DebateFolder
from tests.conftest import cli, read_jsonl
from tests.test_recall import _index_ids, _texts
from tests.test_resume import spawn

PROBLEM = ("Our checkout service times out under the evening peak; decide how to split its database "
           "reads from its writes without losing an order.")
CUT_AT_TURN = 120
"""Where the log is cut: about 400 events before it, more than an index may lack and still be
caught up before the first request."""


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo conversation of 128 turns as a crash at the start of turn 120 leaves it at worst: its
    log cut there, its snapshot and search index gone (both are derived from the log)."""
    tmp = tmp_path_factory.mktemp("rebuild")
    sd = tmp / "debates"
    r = cli("run", PROBLEM, "--headless", "--protocol", "conversation", "--turns", "128", "-a",
            "architect,performance,security,kiss", "--provider", "demo", "--demo-delay", "0", "--state-dir", str(sd))
    assert r.returncode == 0, r.stderr
    (folder,) = [p for p in sd.iterdir() if not p.name.startswith(".")]
    log = folder / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines)
               if json.loads(line)["type"] == "round_started" and json.loads(line)["round"] == CUT_AT_TURN)
    log.write_bytes(b"".join(lines[:cut]))
    (folder / "state.json").unlink()
    return folder


def _without_index(folder: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "debates" / folder.name
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns(".lock"))
    for suffix in ("", "-wal", "-shm"):
        Path(f"{copy / INDEX_FILE}{suffix}").unlink(missing_ok=True)
    return copy


def _early_message(folder: Path) -> tuple[str, str]:
    """(id, text) of the debate's second turn."""
    state = DebateFolder(folder).load()
    c = next(c for c in state.all_contributions() if c.type == "message" and c.round == 2)
    return c.id, c.content


@pytest.mark.slow
def test_a_lost_index_is_rebuilt_after_the_first_request_and_is_whole_at_the_end(crashed: Path,
                                                                                  tmp_path: Path) -> None:
    folder = _without_index(crashed, tmp_path)
    logged = len(read_jsonl(folder / "events.jsonl"))
    # Paced a little, so the debate outlasts the rebuild (one that ends first stops it: see below).
    r = cli("resume", folder.name, "--headless", "--demo-delay", "0.005", "--state-dir", str(folder.parent))
    assert r.returncode == 0, r.stderr
    events = read_jsonl(folder / "events.jsonl")[logged:]
    types = [e["type"] for e in events]
    # Rebuilding starts once the first request is on its way, and says so (on the log and on stderr).
    assert "index_rebuilding" in types
    assert types.index("call_started") < types.index("index_rebuilding")
    said = [e for e in events if e["type"] == "index_rebuilding"]
    assert said[0]["done"] == 0 and said[0]["total"] > 300  # the events of the turns before the cut
    assert said[-1]["done"] == said[-1]["total"] == said[0]["total"] and said[-1]["texts"] > 100
    assert "⌕ search index: rebuilding 0 % …" in r.stderr and "⌕ search index: rebuilt (" in r.stderr
    # Whole once the run is over: every text of the debate once, the resumed turns' among them.
    assert _index_ids(folder) == _texts(DebateFolder(folder))
    doc_id, text = _early_message(folder)
    hits = cli("search", text, "--debate", folder.name, "--json", "--limit", "5", "--state-dir", str(folder.parent))
    assert hits.returncode == 0, hits.stderr
    assert doc_id in [row["id"] for row in json.loads(hits.stdout)]


@pytest.mark.slow
def test_a_kill_while_the_index_is_rebuilt_leaves_the_next_resume_to_finish_it(crashed: Path, tmp_path: Path) -> None:
    folder = _without_index(crashed, tmp_path)
    # Paced, so the debate is still running while its index is rebuilt; killed once it says so.
    proc = spawn("resume", folder.name, "--headless", "--demo-delay", "0.05", "--state-dir", str(folder.parent),
                 log=tmp_path / "resume")
    try:
        end = time.monotonic() + 60
        while "search index: rebuilding" not in (tmp_path / "resume.err").read_text():
            assert proc.poll() is None, (tmp_path / "resume.err").read_text()
            assert time.monotonic() < end
            time.sleep(0.005)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    r = cli("resume", folder.name, "--headless", "--demo-delay", "0", "--state-dir", str(folder.parent))
    assert r.returncode == 0, r.stderr
    assert DebateFolder(folder).load().status == "completed"
    # Whatever that run left undone (it may end before its rebuild), `moot search` catches up.
    doc_id, text = _early_message(folder)
    hits = cli("search", text, "--debate", folder.name, "--json", "--limit", "5", "--state-dir", str(folder.parent))
    assert hits.returncode == 0, hits.stderr
    assert doc_id in [row["id"] for row in json.loads(hits.stdout)]
    assert _index_ids(folder) == _texts(DebateFolder(folder))

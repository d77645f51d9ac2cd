"""The search index through the CLI: killed, deleted mid-debate, searched across debates, hostile queries."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from moot.core.search.index import INDEX_FILE
from moot.core.storage.folder import DebateFolder
from tests.conftest import LoopbackServer, cli
from tests.prose import FactScript, planted, turn_of
from tests.test_recall import KEY, MENTIONS, PLANTS, PROBLEM, _index_ids, _texts, run, write_config
from tests.test_resume import cli_env, spawn


def _turns_logged(sd: Path) -> int:
    logs = list(sd.glob("*/events.jsonl"))
    if not logs:
        return 0
    return logs[0].read_bytes().count(b'"type":"message"')


def _wait(proc: Any, sd: Path, turns: int, deadline: float = 90) -> None:
    end = time.monotonic() + deadline
    while _turns_logged(sd) < turns:
        assert proc.poll() is None, "the debate ended before the test could act on it"
        assert time.monotonic() < end
        time.sleep(0.02)


def _unlink_index(folder: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{folder / INDEX_FILE}{suffix}").unlink(missing_ok=True)


@pytest.mark.slow
def test_deleting_the_index_mid_debate_then_killing_and_resuming_rebuilds_it(tmp_path: Path) -> None:
    config = write_config(tmp_path, extra="recall_tokens = 400")
    sd = tmp_path / "debates"
    with LoopbackServer(reply=FactScript(PLANTS, MENTIONS, chars=500), delay=0.05) as srv:
        proc = spawn("run", PROBLEM, "--provider", "openai", "--base-url", srv.base_url, "--headless", "-c",
                     str(config), "-a", "architect,performance,kiss", "--state-dir", str(sd),
                     log=tmp_path / "run", env=cli_env(OPENAI_API_KEY=KEY))
        try:
            _wait(proc, sd, 10)
            (folder,) = [p for p in sd.iterdir() if not p.name.startswith(".")]
            _unlink_index(folder)
            _wait(proc, sd, 18)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        assert not (folder / INDEX_FILE).exists()  # the process wrote on into the deleted file
        before = srv.calls
        r = cli("resume", folder.name, "--headless", "--base-url", srv.base_url, "--state-dir", str(sd))
        assert r.returncode == 0, r.stderr
        assert _index_ids(folder) == _texts(DebateFolder(folder))  # rebuilt whole from the log
        old = next(c for c in DebateFolder(folder).load().all_contributions()
                   if c.type == "message" and c.round == 3).content
        (body,) = [b for b in srv.requests[before:] if turn_of(b) == 31]
        assert old.strip() in "\n".join(m["content"] for m in body["messages"])


@pytest.mark.slow
def test_kill_9_at_random_moments_loses_nothing_and_indexes_nothing_twice(tmp_path: Path) -> None:
    """Killed three times while it writes (the index commits before the log line of the same event
    is written, so a kill often leaves it ahead of the log, sometimes behind), resumed each time:
    the finished index holds every text of the debate once, and nothing the log does not."""
    config = write_config(tmp_path, turns=48)
    sd = tmp_path / "debates"
    rng = random.Random(7)
    with LoopbackServer(reply=FactScript(PLANTS, MENTIONS, chars=500), delay=0.02) as srv:
        env = cli_env(OPENAI_API_KEY=KEY)
        command = ["run", PROBLEM, "--provider", "openai", "--base-url", srv.base_url, "--headless", "-c",
                   str(config), "-a", "architect,performance,kiss", "--state-dir", str(sd)]
        for i, turns in enumerate((8, 20, 32)):
            proc = spawn(*command, log=tmp_path / f"run{i}", env=env)
            try:
                _wait(proc, sd, turns)
                time.sleep(rng.uniform(0, 0.05))
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=10)
            (folder,) = [p for p in sd.iterdir() if not p.name.startswith(".")]
            command = ["resume", folder.name, "--headless", "--base-url", srv.base_url, "--state-dir", str(sd)]
        r = cli(*command)
        assert r.returncode == 0, r.stderr
        done = DebateFolder(folder)
        assert done.load().status == "completed"
        assert _index_ids(folder) == _texts(done)


@pytest.fixture(scope="module")
def two_debates(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """Two saved debates, each with its own planted facts (facts 0–2 in the first, 3–5 in the second)."""
    tmp = tmp_path_factory.mktemp("two")
    os.environ["OPENAI_API_KEY"] = KEY
    try:
        ids = []
        for plants in ({2: 0, 3: 1, 4: 2}, {2: 3, 3: 4, 4: 5}):
            with LoopbackServer(reply=FactScript(plants, {}, chars=400)) as srv:
                _, folder = run(srv, tmp, write_config(tmp, turns=12))
                ids.append(folder.id)
    finally:
        del os.environ["OPENAI_API_KEY"]
    return tmp / "debates", ids[0], ids[1]


def test_moot_search_across_two_debates(two_debates: tuple[Path, str, str]) -> None:
    sd, first, second = two_debates
    r = cli("search", planted(4).name, "--state-dir", str(sd))
    assert r.returncode == 0, r.stderr
    head, excerpt = r.stdout.splitlines()[:2]
    assert head.startswith(f"{second} · turn 3 · Kiss · score ")
    assert f"[{planted(4).name}]" in excerpt
    assert first not in r.stdout
    # A word of both: hits from each, best first; --debate keeps one; --json for programs.
    both = cli("search", "lease", "quota", "shard", "--state-dir", str(sd), "--json", "--limit", "50")
    rows = json.loads(both.stdout)
    assert {row["debate_id"] for row in rows} == {first, second}
    assert [row["score"] for row in rows] == sorted((row["score"] for row in rows), reverse=True)
    for debate in (first, second):  # the planted messages of each are among the hits, as messages
        assert {2, 3, 4} <= {row["turn"] for row in rows if row["debate_id"] == debate and row["kind"] == "message"}
    one = json.loads(cli("search", "lease", "--debate", first, "--state-dir", str(sd), "--json").stdout)
    assert one and {row["debate_id"] for row in one} == {first}


def test_moot_search_indexes_a_debate_whose_index_is_missing(two_debates: tuple[Path, str, str]) -> None:
    sd, first, _ = two_debates
    _unlink_index(sd / first)
    r = cli("search", planted(1).name, "--debate", first, "--state-dir", str(sd))
    assert r.returncode == 0 and f"{first} · turn 3 · " in r.stdout, r.stderr
    assert (sd / first / INDEX_FILE).exists()


@pytest.mark.parametrize("query", ['"unbalanced', "NEAR(lease shard", "lease AND OR NOT", "*", "col:umn", "^lease",
                                   "lease" + " x" * 5000, "'; DROP TABLE docs; --", "\x1b[2J\x00 lease",
                                   '"lease" "quota"', "🙂 ünïcödé lease", "x" * 10_000])
def test_a_hostile_query_is_results_or_one_line_never_a_traceback(two_debates: tuple[Path, str, str],
                                                                  query: str) -> None:
    sd, first, second = two_debates
    r = cli("search", "--state-dir", str(sd), "--", query)
    assert r.returncode in (0, 2), r.stderr  # 2: nothing in it is a word ("*"), said in one line
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) <= 1
    lines = r.stdout.splitlines()
    assert all(line.startswith((first, second, "  ")) for line in lines)
    assert "\x1b" not in r.stdout


def test_a_query_with_no_word_is_one_line_exit_2(two_debates: tuple[Path, str, str]) -> None:
    sd, *_ = two_debates
    for query in ("()*:^", '""', "   "):
        r = cli("search", "--state-dir", str(sd), "--", query)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "no word" in r.stderr
    r = cli("search", "lease", "--debate", "nope", "--state-dir", str(sd))
    assert r.returncode == 2 and "no debate 'nope'" in r.stderr


@pytest.mark.slow
def test_moot_search_from_another_process_while_the_debate_runs(tmp_path: Path) -> None:
    """A running debate's index is read as it is (its process keeps it current), never written."""
    config = write_config(tmp_path, turns=60)
    sd = tmp_path / "debates"
    with LoopbackServer(reply=FactScript(PLANTS, {}, chars=400), delay=0.05) as srv:
        proc = spawn("run", PROBLEM, "--provider", "openai", "--base-url", srv.base_url, "--headless", "-c",
                     str(config), "-a", "architect,performance,kiss", "--state-dir", str(sd),
                     log=tmp_path / "run", env=cli_env(OPENAI_API_KEY=KEY))
        try:
            _wait(proc, sd, 8)
            r = cli("search", planted(1).name, "--state-dir", str(sd))
            assert r.returncode == 0, r.stderr
            assert " · turn 3 · " in r.stdout
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)


def test_a_linked_index_is_refused_like_any_file_of_the_folder(tmp_path: Path, monkeypatch: Any) -> None:
    """moot never opens a debate's files through a link: `moot resume` refuses in one line and
    changes nothing; `moot search` says it did not search that debate."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with LoopbackServer(reply=FactScript(PLANTS, {}, chars=400)) as srv:
        _, folder = run(srv, tmp_path, write_config(tmp_path, turns=6))
    path = Path(folder.path)
    _unlink_index(path)
    elsewhere = tmp_path / "elsewhere.sqlite"
    elsewhere.write_bytes(b"")
    (path / INDEX_FILE).symlink_to(elsewhere)
    lines = (path / "events.jsonl").read_bytes().splitlines(keepends=True)
    (path / "events.jsonl").write_bytes(b"".join(lines[:-3]))  # unfinished, so there is something to resume
    (path / "state.json").unlink(missing_ok=True)
    before = (path / "events.jsonl").read_bytes()
    r = cli("resume", folder.id, "--headless", "--state-dir", str(path.parent))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "symbolic link" in r.stderr, r.stderr
    assert (path / "events.jsonl").read_bytes() == before and elsewhere.read_bytes() == b""
    s = cli("search", "lease", "--state-dir", str(path.parent))
    assert s.returncode == 0 and s.stdout == "" and "not searched" in s.stderr and "symbolic link" in s.stderr


async def test_a_debate_not_searched_is_named_terminal_safe(tmp_path: Path) -> None:
    """A state dir is not trusted: the note on a debate that could not be searched names its folder,
    and a folder's name may hold escape sequences (printed raw, they set the terminal's title)."""
    import shutil

    from moot.core.safety.sanitize import UNSAFE
    from tests.conftest import run_debate

    _, folder = await run_debate(tmp_path, "Design a rate limiter for a public API", rounds=1,
                                 roles=["architect", "kiss"])
    hostile = folder.path.parent / "z\x1b]0;pwned\x07\x1b[2Jx"
    shutil.copytree(folder.path, hostile)
    _unlink_index(hostile)
    (hostile / INDEX_FILE).symlink_to(tmp_path / "elsewhere.sqlite")
    r = cli("search", "limiter", "--state-dir", str(folder.path.parent))
    assert r.returncode == 0 and "not searched" in r.stderr and "symbolic link" in r.stderr, r.stderr
    assert UNSAFE.findall(r.stderr) == [] and "moot: zx: not searched" in r.stderr

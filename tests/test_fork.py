"""`moot fork`: a saved debate's history up to a point, run on from there with changes.

Each parent debate runs against the loopback OpenAI-compatible server, which records every
request; the fork then runs against the same server, so "no early request is sent again" and
"the note is in every later call" are read off what the server received.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from moot.core.context.line_index import INDEX_FILE as LINE_INDEX
from moot.core.storage.folder import DebateFolder
from moot.core.storage.sessions import read_row
from moot.core.storage.state_dir import StateDir
from tests.conftest import LoopbackServer, cli, run_debate
from tests.test_resume import cli_env

NOTE = "Assume the service must run in a single region with no managed database."
CONFIG = {"agents": [{"id": "architect", "role": "architect"}, {"id": "performance", "role": "performance"},
                     {"id": "kiss", "role": "kiss"}],
          "debate": {"summarization": {"method": "rule-based", "threshold": 1500}}}


def _hashes(folder: Path) -> dict[str, str]:
    """The folder's files, less the line index that `moot context` (run on the parent here) caches
    beside the log: derived from the log, it is no part of what a fork must leave as it was."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())
            if p.is_file() and p.name != LINE_INDEX}


def _context(debate: str, state_dir: Path, *where: str) -> Any:
    out = cli("context", debate, *where, "--json", "--state-dir", str(state_dir))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _parent(tmp_path: Path, srv: LoopbackServer, *, rounds: int = 3, protocol: str = "rounds",
            turns: int | None = None) -> tuple[str, Path]:
    config: dict[str, Any] = json.loads(json.dumps(CONFIG))
    config["debate"]["protocol"] = protocol
    if turns is not None:
        config["debate"]["turns"] = turns
    state, folder = asyncio.run(run_debate(tmp_path, config=config, rounds=rounds, provider="openai",
                                           base_url=srv.base_url))
    assert state.status == "completed"
    return state.id, folder.path


def _fork_id(state_dir: Path, parent: str) -> str:
    (fork,) = [f.id for f in StateDir(state_dir).debates() if f.id != parent]
    return fork


def _new_messages(srv: LoopbackServer, since: int) -> list[str]:
    return [json.dumps(b["messages"], ensure_ascii=False) for b in srv.requests[since:]]


def _round_calls(debate: str, state_dir: Path, rounds: range, agents: tuple[str, ...]) -> dict[str, Any]:
    return {f"{r}/{a}": _context(debate, state_dir, "--round", str(r), "--agent", a) for r in rounds for a in agents}


def test_fork_at_a_round_keeps_the_history_and_sends_only_what_follows(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # `moot list` fits its columns to the terminal: a wide one here
    with LoopbackServer() as srv:
        parent, path = _parent(tmp_path, srv)
        state_dir = path.parent
        before = _hashes(path)
        sent = len(srv.requests)
        out = cli("fork", parent, "--at", "round:2", "--inject", NOTE, "--headless", "--state-dir", str(state_dir))
        assert out.returncode == 0, out.stderr
        fork = _fork_id(state_dir, parent)
        new = _new_messages(srv, sent)
    assert _hashes(path) == before  # the parent's files are never changed
    agents = ("architect", "performance", "kiss", "judge")
    # Round 1 is the parent's, byte for byte, and none of its requests was sent again.
    early = _round_calls(parent, state_dir, range(1, 2), agents)
    assert _round_calls(fork, state_dir, range(1, 2), agents) == early
    early_messages = {json.dumps(c["messages"], ensure_ascii=False) for calls in early.values() for c in calls}
    assert early_messages and not early_messages & set(new)
    # Rounds 2 and 3 and the synthesis ran again, each with the moderator's note.
    later = [c for calls in _round_calls(fork, state_dir, range(2, 4), agents).values() for c in calls]
    assert len(later) >= 9
    assert all(NOTE in json.dumps(c["messages"], ensure_ascii=False) for c in later)
    assert all(NOTE in m for m in new if "Summarize" not in m[:400])
    shown = cli("show", fork, "--state-dir", str(state_dir))
    assert f"⑂ {parent}@round 2" in shown.stdout
    assert "completed" in shown.stdout.splitlines()[0]
    listed = cli("list", "--state-dir", str(state_dir))
    assert f"⑂ {parent}@round 2" in listed.stdout
    # Dated (and so listed, newest first) by when it was made, not by when its parent began; its
    # history keeps the parent's times.
    shown_json = {d: json.loads(cli("show", d, "--json", "--state-dir", str(state_dir)).stdout) for d in (parent, fork)}
    assert shown_json[fork]["created_at"] == shown_json[parent]["created_at"]
    assert shown_json[fork]["forked_from"]["made_at"] > shown_json[parent]["updated_at"]
    assert read_row(DebateFolder(state_dir / fork)).created_at == shown_json[fork]["forked_from"]["made_at"]
    assert listed.stdout.index(fork) < listed.stdout.index(f"{parent} ")


def test_fork_at_a_phase_redoes_that_phase_and_keeps_the_ones_before(tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        parent, path = _parent(tmp_path, srv, rounds=2)
        state_dir = path.parent
        sent = len(srv.requests)
        out = cli("fork", parent, "--at", "round:2:critique", "--agent-model", "kiss=small-model", "--headless",
                  "--state-dir", str(state_dir))
        assert out.returncode == 0, out.stderr
        fork = _fork_id(state_dir, parent)
        new = srv.requests[sent:]
    proposals = []
    for agent in ("architect", "performance", "kiss"):
        proposal = ["--round", "2", "--agent", agent, "--phase", "proposal"]
        proposals += _context(parent, state_dir, *proposal)
        assert _context(fork, state_dir, *proposal) == _context(parent, state_dir, *proposal)
    assert len(proposals) == 3 and not any(b["messages"] == c["messages"] for b in new for c in proposals)
    # kiss speaks on its new model from the critiques on; the others stay on theirs.
    assert "small-model" in {b["model"] for b in new}
    critique = _context(fork, state_dir, "--round", "2", "--agent", "kiss", "--phase", "critique")
    assert critique and all(c["model"] == "small-model" for c in critique)


def test_fork_at_a_turn_keeps_the_turns_before_it(tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        parent, path = _parent(tmp_path, srv, protocol="conversation", turns=12)
        state_dir = path.parent
        before = _hashes(path)
        out = cli("fork", parent, "--at", "turn:8", "--turns", "10", "--headless", "--state-dir", str(state_dir))
        assert out.returncode == 0, out.stderr
        fork = _fork_id(state_dir, parent)
        for turn in range(1, 8):
            where = ["--turn", str(turn)]
            assert _context(fork, state_dir, *where) == _context(parent, state_dir, *where)
        shown = cli("show", fork, "--state-dir", str(state_dir)).stdout
        assert "10/10 turns" in shown.splitlines()[0]
    assert _hashes(path) == before


def test_fork_just_before_a_summary_writes_it_again_its_new_way(tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        parent, path = _parent(tmp_path, srv)
        state_dir = path.parent
        before = _hashes(path)
        state = DebateFolder(path).load(bounded=False)
        summary = next(s for r in state.rounds[1:] for s in r.summaries.values())
        sent = len(srv.requests)
        out = cli("fork", parent, "--at", f"summary:{summary.id}", "--summary-method", "hybrid", "--no-run",
                  "--state-dir", str(state_dir))
        assert out.returncode == 0, out.stderr
        second = out.stdout.strip()
        assert len(srv.requests) == sent  # --no-run: made, not run
    assert _hashes(path) == before
    made = DebateFolder(state_dir / second).load(bounded=False)
    assert made.forked_from is not None and made.forked_from.at == f"summary:{summary.id}"
    assert all(s.id != summary.id for r in made.rounds for s in r.summaries.values())
    assert made.config["debate"]["summarization"]["method"] == "hybrid"
    agents = ("architect", "performance", "kiss", "judge")
    assert _round_calls(second, state_dir, range(1, summary.round), agents) == \
        _round_calls(parent, state_dir, range(1, summary.round), agents)


def test_changes_that_make_no_sense_mid_debate_are_refused_in_one_line(tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        parent, path = _parent(tmp_path, srv, rounds=2)
    state_dir = path.parent
    before = _hashes(path)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"debate": {"protocol": "conversation"}}))
    fewer = tmp_path / "fewer.json"
    fewer.write_text(json.dumps({"agents": [{"id": "architect", "role": "architect"}]}))
    for argv, code, words in (
        (["-c", str(other)], 4, "debate.protocol"),
        (["-c", str(fewer)], 4, "agents"),
        (["--agent-model", "nobody=gpt-4o-mini"], 2, "nobody"),
        (["--turns", "5"], 2, "--turns"),
        (["-r", "1"], 2, "round 2"),
    ):
        out = cli("fork", parent, "--at", "round:2", "--no-run", "--state-dir", str(state_dir), *argv)
        assert out.returncode == code, (argv, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and words in out.stderr, out.stderr
    out = cli("fork", parent, "--at", "round:7", "--no-run", "--state-dir", str(state_dir))
    assert out.returncode == 2 and "reached round 2" in out.stderr
    assert [f.id for f in StateDir(state_dir).debates()] == [parent]
    assert not [p for p in state_dir.iterdir() if p.name.startswith(".") and p.is_dir()]
    assert _hashes(path) == before
    # A change that does make sense mid-debate is merged over the parent's configuration.
    cooler = tmp_path / "cooler.json"
    cooler.write_text(json.dumps({"agents": [{"id": "architect", "temperature": 0.2}, {"id": "performance"},
                                             {"id": "kiss"}], "debate": {"max_cost_usd": 2.5}}))
    out = cli("fork", parent, "--at", "round:2", "--no-run", "-c", str(cooler), "--state-dir", str(state_dir))
    assert out.returncode == 0, out.stderr
    config = DebateFolder(state_dir / out.stdout.strip()).load().config
    assert config["agents"][0]["temperature"] == 0.2 and config["agents"][0]["role"] == "architect"
    assert config["debate"]["max_cost_usd"] == 2.5 and config["debate"]["protocol"] == "rounds"


@pytest.mark.slow
def test_a_kill_during_fork_leaves_the_parent_intact_and_no_fork_or_a_resumable_one(tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        parent, path = _parent(tmp_path, srv, protocol="conversation", turns=40)
    state_dir = path.parent
    before = _hashes(path)
    for delay in (0.2, 0.35, 0.5, 0.65, 0.8, 1.2):
        proc = subprocess.Popen([sys.executable, "-m", "moot", "fork", parent, "--at", "turn:30", "--no-run",
                                 "--state-dir", str(state_dir)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=cli_env())
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _hashes(path) == before
    StateDir(state_dir).clean_pending()
    for folder in StateDir(state_dir).debates():
        state = folder.load()
        assert state.problem
        if folder.id != parent:  # every fork that exists is whole: its history reaches the fork point
            assert state.forked_from is not None and state.round_count == 29
            assert state.status == "running"


def _indexed(folder: Path) -> set[str]:
    import sqlite3

    db = sqlite3.connect(folder / "search.sqlite")
    try:
        return {row[0] for row in db.execute("SELECT doc_id FROM doc_rows")}
    finally:
        db.close()


def test_the_fork_starts_its_search_index_from_its_parents_trimmed_to_its_history(tmp_path: Path) -> None:
    from moot.core.search.index import open_index

    with LoopbackServer() as srv:
        parent, path = _parent(tmp_path, srv)
    state_dir = path.parent
    assert (path / "search.sqlite").is_file()
    out = cli("fork", parent, "--at", "round:2", "--no-run", "--inject", NOTE, "--state-dir", str(state_dir))
    assert out.returncode == 0, out.stderr
    fork = state_dir / out.stdout.strip()
    seeded = _indexed(fork)  # copied from the parent, cut at the fork point: not built again from the log
    assert seeded and seeded < _indexed(path)
    copied = open_index(fork)
    copied.sync(fork / "events.jsonl")
    copied.close()
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "events.jsonl").write_bytes((fork / "events.jsonl").read_bytes())
    built = open_index(fresh)
    built.sync(fresh / "events.jsonl")
    built.close()
    assert _indexed(fork) == _indexed(fresh)  # once synced with its log: what a fresh index holds
    assert {d for d in _indexed(fork) if not d.startswith("note-")} < _indexed(path)


def test_ctl_fork_makes_the_fork_from_another_shell_and_leaves_the_debate_alone(tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        parent, path = _parent(tmp_path, srv, rounds=2)
        state_dir = path.parent
        before = _hashes(path)
        sent = len(srv.requests)
        out = cli("ctl", parent, "fork", "round", "2", *NOTE.split(), "--state-dir", str(state_dir))
        assert out.returncode == 0, out.stderr
        assert len(srv.requests) == sent  # making the fork sends nothing
        fork = out.stdout.strip()
        assert fork == _fork_id(state_dir, parent) and f"moot resume {fork}" in out.stderr
        wrong = cli("ctl", parent, "fork", "turn", "1", "--state-dir", str(state_dir))
        ahead = cli("ctl", parent, "fork", "round", "7", "--state-dir", str(state_dir))
    assert _hashes(path) == before
    state = DebateFolder(state_dir / fork).load()
    assert state.forked_from is not None and state.forked_from.debate == parent
    assert state.forked_from.at == "round:2" and [n.text for n in state.notes] == [NOTE]
    assert wrong.returncode == 2 and "forks at a round" in wrong.stderr and len(wrong.stderr.splitlines()) == 1
    assert ahead.returncode == 2 and "no round 7 yet" in ahead.stderr
    assert [f.id for f in StateDir(state_dir).debates() if f.id != parent] == [fork]


def test_compare_sets_a_debate_and_its_fork_side_by_side_from_the_fork_point(tmp_path: Path) -> None:
    with LoopbackServer() as srv:
        parent, path = _parent(tmp_path, srv, rounds=2)
        state_dir = path.parent
        out = cli("fork", parent, "--at", "round:2", "--inject", NOTE, "--headless", "--state-dir", str(state_dir))
        assert out.returncode == 0, out.stderr
        fork = _fork_id(state_dir, parent)
    shown = cli("compare", parent, fork, "--state-dir", str(state_dir))
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    head = text.splitlines()[0]
    assert f"{parent} (completed)" in head and f"⑂ {fork} (completed)" in head and "from round 2" in head
    # Round 1 is the same on both sides, so only round 2 and the answer are set against each other.
    assert "== round 1 ·" not in text and "== round 2 · architect · proposal" in text
    assert "== final answer" in text
    fork_state = DebateFolder(state_dir / fork).load()
    later = [c for r in fork_state.rounds if r.number >= 2 for c in r.contributions]
    tokens = sum(c.metadata.prompt_tokens + c.metadata.completion_tokens for c in later)
    assert fork_state.final_solution is not None
    tokens += fork_state.final_solution.metadata.prompt_tokens + fork_state.final_solution.metadata.completion_tokens
    assert tokens > 0 and f"= {tokens:,} tokens" in text.splitlines()[2]
    assert text.count("-- parent: ") == text.count("-- fork:   ") >= 4
    swapped = cli("compare", fork, parent, "--state-dir", str(state_dir))
    assert swapped.stdout == text  # either order: the parent is on the left
    lone = cli("compare", parent, parent, "--state-dir", str(state_dir))
    assert lone.returncode == 2 and "not a fork" in lone.stderr and len(lone.stderr.splitlines()) == 1


def test_a_fork_of_a_fork_works_and_outlives_both_parents(tmp_path: Path) -> None:
    """A fork is an ordinary debate: it can be forked in turn, and removing the debates it came
    from breaks nothing (its log holds its whole history)."""
    with LoopbackServer() as srv:
        parent, path = _parent(tmp_path, srv, protocol="conversation", turns=10)
        state_dir = path.parent
        out = cli("fork", parent, "--at", "turn:7", "--headless", "--state-dir", str(state_dir))
        assert out.returncode == 0, out.stderr
        first = _fork_id(state_dir, parent)
        early = {t: _context(parent, state_dir, "--turn", str(t)) for t in range(1, 5)}
        out = cli("fork", first, "--at", "turn:5", "--inject", NOTE, "--headless", "--state-dir", str(state_dir))
        assert out.returncode == 0, out.stderr
        (second,) = [f.id for f in StateDir(state_dir).debates() if f.id not in (parent, first)]
        for t in range(1, 5):  # the grandparent's turns, byte for byte, through the fork between
            assert _context(second, state_dir, "--turn", str(t)) == early[t]
        removed = cli("rm", parent, first, "--yes", "--state-dir", str(state_dir))
        assert removed.returncode == 0, removed.stderr
    assert [f.id for f in StateDir(state_dir).debates()] == [second]
    shown = cli("show", second, "--state-dir", str(state_dir))
    assert shown.returncode == 0 and "completed" in shown.stdout.splitlines()[0], shown.stderr
    for t in range(1, 5):
        assert _context(second, state_dir, "--turn", str(t)) == early[t]
    report = cli("report", second, "--state-dir", str(state_dir))
    assert report.returncode == 0 and NOTE in report.stdout, report.stderr

"""A long debate runs in bounded memory: its state lets go of old steps, which stay in the log.

The thresholds (`storage.archive.HOLD`, `KEEP`) are lowered here so that a debate of a few
dozen steps lets go of most of them, as one of 100,000 turns does with the defaults. What must
not change: the requests sent (byte for byte), what `moot context`, `moot report` and
`moot show --json` say, and resuming.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from moot.core.config import Overrides, build_config
from moot.core.context.index import DebateIndex
from moot.core.context.inspect import calls_at_turn_in_log
from moot.core.context.recall_tier import WORDS_KEPT, Recaller
from moot.core.context.view import render_messages
from moot.core.models.state import AgentInfo, Contribution, DebateState, Summary
from moot.core.search.archived import ArchivedContributions
from moot.core.search.index import SearchIndex
from moot.core.session import SessionOptions, new_session, resume_session
from moot.core.storage import archive
from moot.core.storage.folder import DebateFolder
from moot.core.storage.log import numbered_events
from moot.core.storage.state import apply, new_state
from tests.conftest import cli
from tests.loopback import LoopbackServer
from tests.prose import FactScript, planted

PROBLEM = "Design a rate limiter for a public API that thousands of tenants share"
AGENTS = ["architect", "performance", "kiss"]


def _conversation(state_dir: Path, url: str, turns: int = 72) -> tuple[DebateState, DebateFolder]:
    cfg = build_config({"debate": {"protocol": "conversation", "turns": turns,
                                   "conversation": {"recent_messages": 6, "summary_every": 6}}},
                       Overrides(provider="openai", base_url=url, roles=AGENTS))
    session = new_session(PROBLEM, cfg, SessionOptions(state_dir=state_dir, deterministic_ids=True,
                                                       debate_id="conv"))
    return asyncio.run(session.run()), session.folder


def _bodies(srv: LoopbackServer) -> list[list[dict[str, Any]]]:
    return [body["messages"] for body in srv.requests if "messages" in body]


def _without_ids(text: str) -> str:
    return re.sub(r"\*\*Created:\*\* [^\n]*", "", text)


def _timeless(value: Any) -> Any:
    """`value` without the clock's readings (the two runs ran at different times)."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in ("ts", "started_at", "latency_ms")}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def test_a_long_conversation_lets_go_of_old_turns_and_sends_the_same_requests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Turn 2 plants a fact that turn 50 names again: the recall tier brings turn 2 back.
    script = FactScript({2: 0}, {50: 0}, chars=600)
    with LoopbackServer(reply=script) as srv:
        whole, whole_folder = _conversation(tmp_path / "whole", srv.base_url)
        sent_whole = _bodies(srv)
    monkeypatch.setattr(archive, "HOLD", 24)
    monkeypatch.setattr(archive, "KEEP", 6)
    read_back: list[str] = []
    read = ArchivedContributions._read

    def counted(self: ArchivedContributions, cid: str) -> Contribution | None:
        found = read(self, cid)
        read_back.append(cid if found is not None else "")
        return found

    monkeypatch.setattr(ArchivedContributions, "_read", counted)
    with LoopbackServer(reply=script) as srv:
        bounded, folder = _conversation(tmp_path / "bounded", srv.base_url)
        sent_bounded = _bodies(srv)

    assert whole.archived_rounds == 0 and whole.status == bounded.status == "completed"
    assert sent_bounded == sent_whole  # every request, byte for byte
    # The recall tier brought back turn 2, which the state had let go of, read from the log.
    (turn_2,) = [c for r in folder.steps() if r.number == 2 for c in r.contributions if c.type == "message"]
    assert planted(0).sentence in turn_2.content and turn_2.id in read_back and all(read_back)
    (turn_51,) = [m for m in sent_bounded if m[-1]["content"].startswith("# Turn 51 of")]
    assert turn_2.content.strip() in "\n".join(m["content"] for m in turn_51)
    # The state held only the last steps, and the snapshot on disk is that bounded state.
    assert bounded.archived_rounds > 40 and len(bounded.rounds) < 30
    snapshot = json.loads((folder.path / "state.json").read_text())
    assert snapshot["archived_rounds"] > 40 and len(snapshot["rounds"]) < 30
    assert folder.state_path.stat().st_size < whole_folder.state_path.stat().st_size / 2
    # Every step is still in the log, read back in order.
    assert [r.number for r in folder.steps()] == list(range(1, 73))
    assert [c.content for r in folder.steps() for c in r.contributions] == [
        c.content for r in whole.rounds for c in r.contributions]

    # Old and recent turns are shown exactly as the whole state shows them.
    for turn in (3, 20, 70):
        assert calls_at_turn_in_log(folder, turn) == calls_at_turn_in_log(whole_folder, turn)
    sd, wd = str(folder.path.parent), str(whole_folder.path.parent)
    for args in (("report", "conv"), ("report", "conv", "--verbose"), ("show", "conv"), ("show", "conv", "--json"),
                 ("watch", "conv", "--headless")):
        got, want = cli(*args, "--state-dir", sd), cli(*args, "--state-dir", wd)
        assert got.returncode == want.returncode == 0, got.stderr
        if args[0] == "report" and "--verbose" not in args:
            assert _without_ids(got.stdout) == _without_ids(want.stdout)
        if args[-1] == "--json":
            shown, full = json.loads(got.stdout), json.loads(want.stdout)
            assert shown["archived_rounds"] == 0 and _timeless(shown["rounds"]) == _timeless(full["rounds"])
        if args == ("show", "conv"):
            assert "turns: 72 messages" in got.stdout and got.stdout == want.stdout
        if args[0] == "watch":  # every event line, from the log
            assert "✎ turn 1 architect" in got.stdout and got.stdout == want.stdout
    # Turn 1, long let go of, through the CLI: its request (`moot context --turn 1`), its message
    # in the report and in `moot show --json`.
    (turn_1,) = [c for r in folder.steps() if r.number == 1 for c in r.contributions if c.type == "message"]
    got, want = (cli("context", "conv", "--turn", "1", "--json", "--state-dir", d) for d in (sd, wd))
    assert got.returncode == want.returncode == 0, got.stderr
    assert json.loads(got.stdout) == json.loads(want.stdout) and json.loads(got.stdout)[0]["round"] == 1
    first_line = turn_1.content.strip().splitlines()[0]
    assert first_line in cli("report", "conv", "--state-dir", sd).stdout
    shown = json.loads(cli("show", "conv", "--json", "--state-dir", sd).stdout)
    assert shown["rounds"][0]["contributions"][0]["content"] == turn_1.content


def test_a_bounded_conversation_resumes_from_its_snapshot_and_tail(tmp_path: Path, small_memory: None) -> None:
    with LoopbackServer(reply_chars=600) as srv:
        _, folder = _conversation(tmp_path / "first", srv.base_url)
        sent = _bodies(srv)
    # As a crash in turn 60 leaves it: the log up to that turn's start, and a snapshot (bounded,
    # as the writer makes them) covering the first half of it.
    lines = folder.events_path.read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"round_started"' in line and b'"round":60,' in line)
    kept = lines[: cut + 1]
    state, size = new_state(folder.id), 0
    for (_, event), line in zip(numbered_events(folder.events_path), kept[: len(kept) // 2]):
        apply(state, event)
        size += len(line)
    state.log_offset = size
    assert state.archived_rounds > 0
    crashed = tmp_path / "crashed" / folder.id
    crashed.mkdir(parents=True)
    (crashed / "events.jsonl").write_bytes(b"".join(kept))
    (crashed / "state.json").write_text(state.model_dump_json(exclude_defaults=True))

    with LoopbackServer(reply_chars=600) as srv:
        session = resume_session(folder.id, SessionOptions(state_dir=crashed.parent, deterministic_ids=True),
                                 Overrides(base_url=srv.base_url))
        assert session.state.archived_rounds > 0 and session.state.current_round == 60
        done = asyncio.run(session.run())
        resumed = _bodies(srv)
    assert done.status == "completed"
    # Turn 60's request after the resume is the one the uninterrupted run sent.
    turn_60 = next(m for m in sent if m[-1]["content"].startswith("# Turn 60 of"))
    assert resumed[0] == turn_60
    messages = [c.round for r in DebateFolder(crashed).steps() for c in r.contributions if c.type == "message"]
    assert messages == list(range(1, 73))


def _rounds(state_dir: Path, strategy: str = "rolling") -> tuple[DebateState, DebateFolder]:
    cfg = build_config({"debate": {"summarization": {"threshold": 1500, "strategy": strategy}}},
                       Overrides(provider="demo", rounds=8, roles=AGENTS))
    session = new_session(PROBLEM, cfg, SessionOptions(state_dir=state_dir, demo_delay=0, deterministic_ids=True,
                                                       debate_id="rounds"))
    return asyncio.run(session.run()), session.folder


def _views(folder: DebateFolder) -> dict[tuple[int, str, str, str], list[dict[str, str]]]:
    """Every call's exact messages, by slot (round, agent, phase, target), from the whole log."""
    state = folder.load(bounded=False)
    index = DebateIndex(state)
    return {(v.round, v.agent_id, v.phase, v.target_agent_id or ""): [dict(m) for m in render_messages(v, index)]
            for r in state.rounds for v in r.calls}


def test_rounds_let_go_of_rounds_every_summary_covers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole, whole_folder = _rounds(tmp_path / "whole")
    monkeypatch.setattr(archive, "HOLD", 24)
    monkeypatch.setattr(archive, "KEEP", 6)
    bounded, folder = _rounds(tmp_path / "bounded")
    assert whole.archived_rounds == 0 and bounded.status == "completed"
    assert bounded.archived_rounds >= 3 and len(bounded.rounds) <= 5
    assert _views(folder) == _views(whole_folder)  # the same views, summaries and all
    # A round the state let go of is still shown by `moot context` (read back from the log).
    got = cli("context", "rounds", "--round", "1", "--agent", "kiss", "--json", "--state-dir", str(folder.path.parent))
    want = cli("context", "rounds", "--round", "1", "--agent", "kiss", "--json",
               "--state-dir", str(whole_folder.path.parent))
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout) == json.loads(want.stdout)


def test_fresh_summaries_keep_every_round(tmp_path: Path, small_memory: None) -> None:
    """`fresh` re-reads an agent's whole perspective each round: nothing can be let go."""
    state, _ = _rounds(tmp_path, strategy="fresh")
    assert state.status == "completed" and state.archived_rounds == 0 and len(state.rounds) == 8


def test_the_index_lets_go_of_the_summaries_of_steps_it_archived() -> None:
    # A shared rolling summary every 4 turns of a 400-turn conversation: after the index lets go of
    # turns 1..380 it holds the summaries made after them and the newest before (which a view at
    # a later turn still reads), not one per 4 turns since the start, and answers as before.
    judge = AgentInfo(id="judge", name="Judge", role="judge", model="gpt-4o-mini", provider="openai",
                      temperature=0.2, budget=8000)
    index = DebateIndex(DebateState(id="d", problem=PROBLEM, protocol="conversation", judge=judge))
    for turn in range(1, 401):
        index.add_contribution(Contribution(id=f"c{turn}", agent_id="judge", role="judge", type="message",
                                            round=turn, content=f"Turn {turn} weighs token buckets per tenant."))
        if turn % 4 == 2:
            index.add_summary(Summary(id=f"s{turn}", agent_id="judge", role="judge", round=turn + 1,
                                      summary=f"So far, through turn {turn}, the tenants share one bucket.",
                                      method="llm", strategy="rolling", trigger="turns",
                                      covered_through=f"c{turn}", scope="conversation", ts=float(turn)))
    asked = [(t, p) for t in range(381, 402) for p in (0, 1)]
    before = [index.summary_at("judge", at) for at in asked]
    index.archive(380)
    assert [index.summary_at("judge", at) for at in asked] == before
    held = index._summaries_of["judge"]  # (what grew by one per summary for the whole debate)
    assert [s.id for s in held] == ["s378", "s382", "s386", "s390", "s394", "s398"]
    assert set(index.summaries) == {s.id for s in held}
    assert [c.id for c in index.uncovered_items("judge", before[-1])] == ["c399", "c400"]


def test_the_recall_tiers_caches_keep_the_most_recently_used(tmp_path: Path) -> None:
    # An item's words take ~10 KB: 20,000 of them were ~200 MB of a long conversation's memory.
    recaller = Recaller(SearchIndex(tmp_path / "search.sqlite"), DebateIndex())
    items = [Contribution(id=f"c{i}", agent_id="architect", role="architect", type="message", round=i,
                          content=f"Turn {i}: tenant {i} gets its own bucket of {i * 7} requests a minute.")
             for i in range(1, 2001)]
    window = items[:20]
    for c in items:
        recaller.words(c)
        for w in window:  # a window's items are asked for at every call: they stay
            recaller.words(w)
    assert len(recaller._words) == WORDS_KEPT  # (the cache itself: what grew)
    assert all(w.id in recaller._words for w in window)
    assert {"tenant", "bucket", "7"} <= recaller.words(items[0])

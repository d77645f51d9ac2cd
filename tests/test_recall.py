"""Recall: what the rolling summary dropped comes back, verbatim, when the debate returns to it.

Through the CLI against the loopback server: replies plant facts early and name them again
much later (`tests.prose.FactScript`); the request after a mention must hold the planted
message verbatim and stay within its budget, and `moot context` must show that request byte
for byte from the record alone.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from moot.core.context.recall_tier import MIN_PASSAGE_CHARS, passage
from moot.core.search.index import INDEX_FILE, SearchIndex
from moot.core.storage.folder import DebateFolder
from tests.conftest import LoopbackServer, cli
from tests.prefix_cache import PrefixCache, prompt_tokens, speaker_of
from tests.prose import FactScript, planted, turn_of

KEY = "sk-test-recall-0000"
PROBLEM = "Design a rate limiter for a public API"
PLANTS = {2: 0, 3: 1, 4: 2}
MENTIONS = {24: 0, 30: 1, 36: 2}
CONFIG = """
[debate]
protocol = "conversation"
turns = {turns}

[debate.summarization]
method = "rule-based"

[debate.conversation]
recent_messages = 6
summary_every = 4
max_context_tokens = 4000
recent_tokens = 2500
summary_tokens = 600
reserve_output_tokens = 400
{extra}
"""


def write_config(tmp_path: Path, turns: int = 40, extra: str = "", name: str = "moot.toml") -> Path:
    path = tmp_path / name
    path.write_text(CONFIG.format(turns=turns, extra=extra))
    return path


def run(srv: LoopbackServer, tmp_path: Path, config: Path, *more: str) -> tuple[Any, DebateFolder]:
    sd = tmp_path / "debates"
    before = {p.name for p in sd.iterdir()} if sd.exists() else set()
    r = cli("run", PROBLEM, "--provider", "openai", "--base-url", srv.base_url, "--headless", "-c", str(config),
            "-a", "architect,performance,kiss", "--state-dir", str(sd), *more)
    assert r.returncode == 0, r.stderr
    (new,) = [p for p in sd.iterdir() if p.name not in before and not p.name.startswith(".")]
    return r, DebateFolder(new)


def requests_at(srv: LoopbackServer, turn: int) -> list[dict[str, Any]]:
    return [b for b in srv.requests if turn_of(b) == turn]


def test_a_fact_named_again_late_is_recalled_verbatim_within_budget(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with LoopbackServer(reply=FactScript(PLANTS, MENTIONS, chars=500)) as srv:
        _, folder = run(srv, tmp_path, write_config(tmp_path, extra="recall_tokens = 400"))
        state = folder.load()
        messages = {c.round: c for c in state.all_contributions() if c.type == "message"}
        for mention, fact in MENTIONS.items():
            plant = next(t for t, f in PLANTS.items() if f == fact)
            old = messages[plant].content.strip()
            assert planted(fact).sentence in old
            (body,) = requests_at(srv, mention + 1)
            sent = "\n".join(m["content"] for m in body["messages"])
            assert old in sent, f"turn {mention + 1} does not hold turn {plant}'s message"
            # After the verbatim window, just before the task: the window stays a cacheable prefix.
            assert body["messages"][-2]["content"].startswith("## Recalled from earlier in the conversation")
            assert f"### Turn {plant} · " in sent  # labelled with its turn and speaker
            # Within budget: the request and its reply fit the window; the tier within its cap.
            record = next(c for r in state.rounds for c in r.calls if c.phase == "turn" and c.round == mention + 1)
            assert record.tokens.total + record.max_tokens <= 4000
            assert record.recall is not None and 0 < record.tokens.recall <= record.recall.cap == 400
            assert messages[plant].id in [it.id for it in record.recall.items]
            assert planted(fact).name.lower() in record.recall.query
        # Never a message the view holds verbatim already; only messages the summary covers.
        for r in state.rounds:
            for call in r.calls:
                if call.recall is None:
                    continue
                window = set(range(*call.history_turns)) | {call.history_turns[1]} if call.history_turns else set()
                recalled = {state_msg.round for state_msg in messages.values()
                            if state_msg.id in {it.id for it in call.recall.items}}
                assert not recalled & window
                summary = next(s for rr in state.rounds for s in [*rr.summaries.values(), *rr.replaced_summaries]
                               if s.id == call.summary_id)
                covered = next(c for c in messages.values() if c.id == summary.covered_through).round
                assert all(t <= covered for t in recalled)

        # `moot context` rebuilds the request byte for byte from the record (no search: the index is gone).
        for suffix in ("", "-wal", "-shm"):
            Path(f"{folder.path / INDEX_FILE}{suffix}").unlink(missing_ok=True)
        ctx = cli("context", folder.id, "--turn", str(MENTIONS[24] + 25), "--json", "--state-dir", str(folder.path.parent))
        assert ctx.returncode == 0, ctx.stderr
        (view,) = [v for v in json.loads(ctx.stdout) if v["phase"] == "turn"]
        (body,) = requests_at(srv, 25)
        assert [m["content"] for m in view["messages"]] == [m["content"] for m in body["messages"]]
        text = cli("context", folder.id, "--turn", "25", "--state-dir", str(folder.path.parent))
        assert "recall: searched " + planted(0).name.lower() in text.stdout
        assert "] recall · " in text.stdout


def test_recall_off_leaves_the_old_message_out(tmp_path: Path, monkeypatch: Any) -> None:
    """The same conversation with `recall = false`: the planted message is in no later request (it
    is the recall tier that brought it back)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with LoopbackServer(reply=FactScript(PLANTS, {24: 0}, chars=500)) as srv:
        _, folder = run(srv, tmp_path, write_config(tmp_path, turns=26, extra="recall = false"))
        old = next(c for c in folder.load().all_contributions() if c.type == "message" and c.round == 2).content
        (body,) = requests_at(srv, 25)
        assert old.strip() not in "\n".join(m["content"] for m in body["messages"])


def test_a_long_message_comes_back_as_the_passage_around_its_match() -> None:
    text = " ".join(f"Sentence {i} talks about the ordinary parts of the gateway design." for i in range(60))
    text += " The Zukalo shard keeps a lease of 41 seconds. " + text
    start, end = passage(text, ["zukalo"], 600)
    assert end - start >= MIN_PASSAGE_CHARS
    assert "The Zukalo shard keeps a lease of 41 seconds." in text[start:end]
    assert text[start - 1] == " " and text[end] == " "  # cut at spaces, never inside a word


def _index_ids(folder: Path) -> list[str]:
    index = SearchIndex(folder / INDEX_FILE)
    try:
        return sorted(r[0] for r in index._db.execute("SELECT doc_id FROM docs"))
    finally:
        index.close()


def _texts(folder: DebateFolder) -> list[str]:
    """The ids of every text the debate holds (what a complete index holds once)."""
    state = folder.load()
    ids = [c.id for c in state.all_contributions() if c.content.strip()]
    ids += [s.id for r in state.rounds for s in [*r.summaries.values(), *r.replaced_summaries] if s.summary.strip()]
    ids += [s.id for s in [state.judge_summary] if s is not None and s.summary.strip()]
    ids += [n.id for n in state.notes if n.text.strip()]
    return sorted(set(ids))


def test_an_index_ahead_of_its_cut_log_is_trimmed_on_resume(tmp_path: Path, monkeypatch: Any) -> None:
    """The log writer runs behind the index: a kill can leave texts in the index whose events never
    reached the log. Resuming trims them, re-indexes what the redone turns write, and recall goes on."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with LoopbackServer(reply=FactScript(PLANTS, MENTIONS, chars=500)) as srv:
        _, done = run(srv, tmp_path, write_config(tmp_path, extra="recall_tokens = 400"))
        cut = tmp_path / "cut" / done.id
        shutil.copytree(done.path, cut)
        lines = (cut / "events.jsonl").read_bytes().splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if b'"round_started"' in line and b'"round":20,' in line)
        (cut / "events.jsonl").write_bytes(b"".join(lines[:at]))
        (cut / "state.json").unlink()
        assert len(_index_ids(cut)) > len(_texts(DebateFolder(cut)))  # the index holds what the log lost
        srv_calls = srv.calls
        r = cli("resume", done.id, "--headless", "--base-url", srv.base_url, "--state-dir", str(cut.parent))
        assert r.returncode == 0, r.stderr
        assert srv.calls > srv_calls
        folder = DebateFolder(cut)
        assert _index_ids(cut) == _texts(folder)
        old = next(c for c in folder.load().all_contributions() if c.type == "message" and c.round == 3).content
        (body,) = [b for b in srv.requests[srv_calls:] if turn_of(b) == 31]
        assert old.strip() in "\n".join(m["content"] for m in body["messages"])


def test_a_speakers_next_request_starts_with_its_earlier_recall_block(tmp_path: Path, monkeypatch: Any) -> None:
    """View layout 3: a recall block stays where it was sent while the summary it came with stands,
    so the speaker's next request repeats its previous one up to the task (the provider's cache
    serves all of it, the recall block included); the items it shows are not sent again; and
    `moot context` rebuilds such a request byte for byte."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with LoopbackServer(reply=FactScript(PLANTS, MENTIONS, chars=500)) as srv:
        _, folder = run(srv, tmp_path, write_config(tmp_path, extra="recall_tokens = 400"))
        bodies = srv.requests
    state = folder.load()
    records = {c.round: c for r in state.rounds for c in r.calls if c.phase == "turn"}
    cache = PrefixCache()
    previous: dict[str, dict[str, Any]] = {}
    checked: list[int] = []
    held_at: dict[int, int] = {}
    for body in bodies:
        cached, _ = cache.lookup(body)
        turn = turn_of(body)
        speaker = speaker_of(body)
        before = previous.get(speaker)
        if turn is not None:
            previous[speaker] = body
        if turn is None or before is None or not (held := records[turn].recall and records[turn].recall.held):
            continue
        # The speaker's last request, up to its task, is where this one starts: its recall block included.
        head = before["messages"][:-1]
        assert before["messages"][-2]["content"].startswith("## Recalled from earlier in the conversation")
        assert body["messages"][: len(head)] == head
        assert cached >= len(prompt_tokens(head, str(body.get("model") or "")))
        assert held[-1].turn == turn_of(before)
        shown = {it.id for block in held for it in block.items}
        assert not shown & {it.id for it in records[turn].recall.items}  # not sent twice
        checked.append(turn)
        held_at[turn] = held[-1].turn
    assert len(checked) >= 2, "no request held an earlier recall block"
    ctx = cli("context", folder.id, "--turn", str(checked[-1]), "--json", "--state-dir", str(folder.path.parent))
    assert ctx.returncode == 0, ctx.stderr
    (view,) = [v for v in json.loads(ctx.stdout) if v["phase"] == "turn"]
    (body,) = requests_at(srv, checked[-1])
    assert view["messages"] == body["messages"]
    assert view["tiers"].count("recall") >= 2 and "history" in view["tiers"][view["tiers"].index("recall"):]
    text = cli("context", folder.id, "--turn", str(checked[-1]), "--state-dir", str(folder.path.parent)).stdout
    assert f"recalled at turn {held_at[checked[-1]]}: " in text and "held where it was sent" in text


def test_a_conversation_of_view_layout_2_sends_a_fresh_block_each_call(tmp_path: Path, monkeypatch: Any) -> None:
    """A debate keeps the layout it began with (a resume reads it from the log): one begun in
    layout 2 holds no earlier block, its recall sits right before the task, and `moot context`
    rebuilds its requests as they were sent."""
    import moot.core.orchestrator as orchestrator

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setattr(orchestrator, "LAYOUT", 2)
    with LoopbackServer(reply=FactScript(PLANTS, MENTIONS, chars=500)) as srv:
        _, folder = run(srv, tmp_path, write_config(tmp_path, turns=30, extra="recall_tokens = 400"))
    state = folder.load()
    assert state.view_layout == 2
    turns = [c for r in state.rounds for c in r.calls if c.phase == "turn" and c.recall is not None]
    assert turns and all(not c.recall.held for c in turns)
    recalled = [c.round for c in turns if c.recall.items]
    for body in (b for b in srv.requests if turn_of(b) in recalled):
        assert body["messages"][-2]["content"].startswith("## Recalled from earlier in the conversation")
        assert sum(m["content"].startswith("## Recalled") for m in body["messages"]) == 1
    ctx = cli("context", folder.id, "--turn", str(recalled[-1]), "--json", "--state-dir", str(folder.path.parent))
    (view,) = [v for v in json.loads(ctx.stdout) if v["phase"] == "turn"]
    assert view["messages"] == requests_at(srv, recalled[-1])[0]["messages"]

"""A conversation's summary appends instead of rewriting (view layout 4), through the real
provider against the loopback server with prose replies: the blocks a speaker read stay byte
for byte in its next request, only the oldest are consolidated, and `moot context` rebuilds
every view as it was sent, in this layout and in the one before it."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from moot.core import orchestrator, tokens
from moot.core.context.summarize import CONSOLIDATE_NOTE
from moot.core.context.view import LAYOUT, SUMMARY_HEADING
from moot.core.models.state import Summary
from tests.conftest import read_jsonl, run_debate
from tests.loopback import LoopbackServer
from tests.prefix_cache import common_prefix, prompt_tokens
from tests.test_prompt_cache import PROBLEM, ROLES, prose

TURN_TASK = re.compile(r"^# Turn (\d+) of (\d+)", re.M)
CONSOLIDATED = re.compile(r"^### Turns? [\d–]+ \(consolidated at turn (\d+)\)", re.M)
# Small enough that a 30-turn conversation rolls every other turn and outgrows its summary's cap.
SMALL = {"protocol": "conversation", "turns": 30,
         "conversation": {"recent_messages": 3, "summary_every": 2, "summary_tokens": 300}}


def _summary(body: dict[str, Any]) -> str | None:
    return next((m["content"] for m in body["messages"] if m["content"].startswith(SUMMARY_HEADING)), None)


def _turns(bodies: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    return [(int(m.group(1)), b) for b in bodies if (m := TURN_TASK.match(b["messages"][-1]["content"]))]


def _summaries(folder: Path) -> list[Summary]:
    return [Summary.model_validate(e["summary"]) for e in read_jsonl(folder / "events.jsonl")
            if e["type"] == "summary_added"]


def _context_is_what_was_sent(state_id: str, state_dir: Path, bodies: list[dict[str, Any]], turns: int,
                              capsys: pytest.CaptureFixture[str]) -> int:
    """Every call `moot context --json` shows, turn by turn, is byte for byte a request the server got."""
    from moot.cli import main

    received = {json.dumps(b["messages"], ensure_ascii=False) for b in bodies}
    shown = 0
    for t in range(1, turns + 1):
        assert main(["context", state_id, "--turn", str(t), "--json", "--state-dir", str(state_dir)]) == 0
        for call in json.loads(capsys.readouterr().out):
            assert json.dumps(call["messages"], ensure_ascii=False) in received, (t, call["phase"])
            shown += 1
    return shown


def test_a_roll_appends_a_block_and_the_blocks_before_it_stay_byte_for_byte(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with LoopbackServer(reply=prose) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, {"debate": SMALL}, rounds=None, provider="openai",
                                               base_url=srv.base_url, roles=ROLES))
        bodies = srv.requests
    assert state.status == "completed" and state.view_layout >= 4 and LAYOUT >= 4
    for body in bodies:  # every view fits: its input and its reserved answer within the window
        assert tokens.count_messages(body["messages"], body["model"]) + body["max_tokens"] <= 8000

    # Between two requests of one speaker, what the earlier one read of the summary (its blocks,
    # without the closing line that says how far they reach) opens the later one's summary, and the
    # provider's cache serves the request through it, unless the oldest blocks were consolidated
    # in between.
    last: dict[str, tuple[int, dict[str, Any]]] = {}
    appended = consolidated = 0
    for t, body in _turns(bodies):
        speaker = body["messages"][0]["content"]
        before = last.get(speaker)
        last[speaker] = (t, body)
        now = _summary(body)
        if before is None or now is None or (earlier := _summary(before[1])) is None or earlier == now:
            continue
        blocks = earlier.rsplit("\n\n", 1)[0]
        merged = CONSOLIDATED.match(now.removeprefix(SUMMARY_HEADING + "\n\n"))
        if merged is not None and before[0] < int(merged.group(1)) <= t:
            consolidated += 1
            continue
        assert now.startswith(blocks + "\n\n### Turn"), (before[0], t)
        shared = common_prefix(prompt_tokens(before[1]["messages"]), prompt_tokens(body["messages"]))
        assert shared >= len(prompt_tokens(body["messages"][:1])) + len(tokens.encoding_for_model("").encode(blocks))
        appended += 1
    assert appended >= 6 and consolidated >= 1

    # Each summary copies the blocks of the one before it, then appends one for the messages that
    # left the window since; past the cap, the oldest become one consolidated block and the newer
    # ones stay as they were.
    summaries = _summaries(folder.path)
    assert len(summaries) >= 8 and all(s.blocks for s in summaries)
    merges = 0
    for previous, summary in zip(summaries, summaries[1:]):
        assert previous.blocks is not None and summary.blocks is not None
        new = summary.blocks[-1]
        assert new.first == previous.blocks[-1].last + 1 and not new.consolidated
        if summary.blocks[:-1] == previous.blocks:
            continue
        merges += 1
        oldest, untouched = summary.blocks[0], summary.blocks[1:-1]
        gone = previous.blocks[:len(previous.blocks) - len(untouched)]
        assert len(gone) >= 1 and previous.blocks[len(gone):] == untouched
        assert oldest.consolidated and (oldest.first, oldest.last) == (1, gone[-1].last)
        assert oldest.count == sum(b.count for b in gone) and oldest.made_at == summary.round
        # The consolidation's request held the blocks it merged, each under its label, and nothing newer.
        (request,) = [b for b in bodies if CONSOLIDATE_NOTE in b["messages"][-2]["content"]
                      and all(f"{blk.label}\n\n{blk.text.strip()}" in b["messages"][-2]["content"] for blk in gone)]
        assert all(b.label not in request["messages"][-2]["content"] for b in [*untouched, new])
    assert merges >= 1
    assert _context_is_what_was_sent(state.id, folder.path.parent, bodies, 30, capsys) == len(bodies)


def test_a_debate_begun_in_the_layout_before_keeps_its_rolling_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A debate keeps the layout it began with: one begun in layout 3 rewrites its summary whole at
    every roll, with the heading that says how far it reaches, and rebuilds as it was sent."""
    monkeypatch.setattr(orchestrator, "LAYOUT", 3)
    with LoopbackServer(reply=prose) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, {"debate": {**SMALL, "turns": 12}}, rounds=None,
                                               provider="openai", base_url=srv.base_url, roles=ROLES))
        bodies = srv.requests
    assert state.status == "completed" and state.view_layout == 3
    summaries = _summaries(folder.path)
    assert summaries and all(s.blocks is None for s in summaries)
    shown = [s for _, b in _turns(bodies) if (s := _summary(b)) is not None]
    assert shown and all(re.match(rf"{SUMMARY_HEADING} \(turns 1–\d+; made at turn \d+\)\n\n", s) for s in shown)
    assert _context_is_what_was_sent(state.id, folder.path.parent, bodies, 12, capsys) == len(bodies)


# ---------------------------------------------------------------- what each summary lost

TURN_HEAD = re.compile(r"^### Turn (\d+) · ", re.M)


def _planted(turn: int) -> str:
    """A turn's reply as an engineer writes it: a position, then a decision, a measurement and an
    open question, each with the turn's own numbers."""
    return (f"My position is that a token bucket per API key is still the simplest limiter that survives "
            f"bursts, and the last {turn + 1} messages have not changed that.\n\n"
            f"We decided to refill each bucket every {100 + 10 * turn} ms from a local counter. "
            f"The p99 latency of the limiter check came out at {turn + 2} ms in the load test at {40 + turn}k "
            f"requests per second. It is still unclear whether quotas should follow tenants across the "
            f"{turn + 2} regions or reset per region.")


def _decision(turn: int) -> str:
    return f"We decided to refill each bucket every {100 + 10 * turn} ms from a local counter."


def _keeps_decisions_only(body: dict[str, Any], n: int) -> str:
    """Turns get their planted reply; a summary keeps each folded turn's decision and nothing else."""
    task = body["messages"][-1]["content"]
    if m := TURN_TASK.match(task):
        return _planted(int(m.group(1)))
    if task.startswith("# Summarize the conversation"):
        folded = [int(t) for t in TURN_HEAD.findall(body["messages"][-2]["content"])]
        return "\n".join(f"- {_decision(t)}" for t in folded)
    if m := re.match(r"# Summarize turns (\d+)–(\d+)", task):  # a debater asked, the window above (layout 6)
        return "\n".join(f"- {_decision(t)}" for t in range(int(m.group(1)), int(m.group(2)) + 1))
    return "The limiter design converged on a token bucket per API key with a local counter."


def test_each_summary_records_the_facts_its_text_lost_with_where_each_came_from(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from moot.cli import main

    debate = {"protocol": "conversation", "turns": 12, "conversation": {"recent_messages": 3, "summary_every": 3}}
    with LoopbackServer(reply=_keeps_decisions_only) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, {"debate": debate}, rounds=None, provider="openai",
                                               base_url=srv.base_url, roles=ROLES))
    assert state.status == "completed"
    messages = {c.round: c for r in state.rounds for c in r.contributions if c.type == "message"}
    summaries = _summaries(folder.path)
    assert len(summaries) >= 2
    for summary in summaries:
        assert summary.blocks is not None
        turns = range(summary.blocks[-1].first, summary.blocks[-1].last + 1)
        assert summary.metadata.facts == 3 * len(turns) and summary.metadata.facts_kept == len(turns)
        lost = summary.dropped_facts or []
        assert [(f.kind, f.turn) for f in lost] == [(k, t) for t in turns for k in ("number", "open")]
        for f in lost:
            c = messages[f.turn]
            assert f.item_id == c.id and f.agent_id == c.agent_id and f.text in c.content
            assert f.source.startswith(f"Turn {f.turn} · ")
        assert not any(_decision(t) in f.text for t in turns for f in lost)

    # `moot context` shows them with the view that carries the summary: as JSON, and as a line each.
    first = summaries[0]
    t = first.round
    assert main(["context", state.id, "--turn", str(t), "--phase", "turn", "--json",
                 "--state-dir", str(folder.path.parent)]) == 0
    (call,) = json.loads(capsys.readouterr().out)
    shown = call["summary"]
    assert shown["id"] == first.id and (shown["facts"], shown["facts_kept"]) == (9, 3)
    assert [f["text"] for f in shown["dropped_facts"]] == [f.text for f in first.dropped_facts or []]
    assert main(["context", state.id, "--turn", str(t), "--phase", "turn", "--state-dir", str(folder.path.parent)]) == 0
    text = capsys.readouterr().out
    assert f"summary {first.id}: kept 3 of 9 facts of what it covered; lost 6:" in text
    source = (first.dropped_facts or [])[0].source
    assert f"  lost: The p99 latency of the limiter check came out at 3 ms in the load test at 41k requests per " \
           f"second. ({source})" in text


def test_a_summary_asked_for_with_a_focus_and_nothing_new_consolidates_every_block_with_it(tmp_path: Path) -> None:
    """`/summarize` with a focus when no message waits beyond the verbatim window: the blocks
    are written again as one, with that focus (nothing else would honour it)."""
    focus = "the cost of each region's quota store"
    debate = {"protocol": "conversation", "turns": 12, "conversation": {"recent_tokens": 1500}}
    asked = False

    def ask(session: Any) -> None:
        def listen(event: Any) -> None:
            nonlocal asked
            if event.type == "round_started" and event.round == 10 and not asked:
                asked = True
                asyncio.get_running_loop().call_soon(session.orchestrator.request_summary, "architect", focus)
        session.bus.listen(listen)

    with LoopbackServer(reply=prose) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, {"debate": debate}, rounds=None, provider="openai",
                                               base_url=srv.base_url, roles=ROLES, before_run=ask))
        bodies = srv.requests
    assert state.status == "completed" and asked
    summaries = _summaries(folder.path)
    manual = next(i for i, s in enumerate(summaries) if s.trigger == "manual")
    previous, summary = summaries[manual - 1], summaries[manual]
    assert previous.blocks and len(previous.blocks) >= 2 and summary.focus == focus
    assert summary.blocks is not None and len(summary.blocks) == 1
    (merged,) = summary.blocks
    assert merged.consolidated and (merged.first, merged.last) == (1, previous.blocks[-1].last)
    assert summary.covered_through == previous.covered_through
    (request,) = [b for b in bodies if CONSOLIDATE_NOTE in b["messages"][-2]["content"]
                  and all(blk.label in b["messages"][-2]["content"] for blk in previous.blocks)]
    assert focus in request["messages"][-1]["content"]

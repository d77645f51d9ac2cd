"""A rounds agent's perspective summary appends instead of rewriting (view layout 5), through
the real provider against the loopback server with prose replies: the blocks an agent read stay
byte for byte in its next request, only the oldest are consolidated, and `moot context` rebuilds
every view as it was sent, in this layout and in the one before it."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from moot.core import orchestrator, tokens
from moot.core.context.summarize import CONSOLIDATE_NOTE_ROUNDS
from moot.core.context.view import LAYOUT, PERSPECTIVE_HEADING
from moot.core.models.state import DebateState, Summary
from tests.conftest import read_jsonl, run_debate
from tests.loopback import LoopbackServer
from tests.prefix_cache import common_prefix, prompt_tokens
from tests.test_prompt_cache import PROBLEM, prose

ROLES = ["architect", "performance"]
# Every round's perspective passes the threshold, and the cap is small enough that five rounds of
# blocks outgrow it.
SMALL = {"summarization": {"threshold": 1500, "max_summary_tokens": 320}}
ROUNDS = 5


def _summary(body: dict[str, Any]) -> str | None:
    return next((m["content"] for m in body["messages"][1:-1]
                 if m["content"].startswith(PERSPECTIVE_HEADING)), None)


def _perspectives(folder: Path) -> list[Summary]:
    return [Summary.model_validate(e["summary"]) for e in read_jsonl(folder / "events.jsonl")
            if e["type"] == "summary_added" and not e.get("judge")]


def _run(tmp_path: Path) -> tuple[DebateState, Path, list[dict[str, Any]]]:
    with LoopbackServer(reply=prose) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, {"debate": SMALL}, rounds=ROUNDS,
                                               provider="openai", base_url=srv.base_url, roles=ROLES))
        return state, folder.path, srv.requests


def _context_is_what_was_sent(state: DebateState, folder: Path, bodies: list[dict[str, Any]],
                              capsys: pytest.CaptureFixture[str]) -> int:
    """Every call `moot context --json` shows, round by round and agent by agent, is byte for byte
    a request the server got."""
    from moot.cli import main

    received = {json.dumps(b["messages"], ensure_ascii=False) for b in bodies}
    shown = 0
    for r in range(1, ROUNDS + 1):
        for agent in [*ROLES, "judge"]:
            assert main(["context", state.id, "--round", str(r), "--agent", agent, "--json",
                         "--state-dir", str(folder.parent)]) == 0
            for call in json.loads(capsys.readouterr().out):
                assert json.dumps(call["messages"], ensure_ascii=False) in received, (r, agent, call["phase"])
                shown += 1
    return shown


def test_a_rounds_summary_appends_a_block_and_the_blocks_before_it_stay_byte_for_byte(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state, folder, bodies = _run(tmp_path)
    assert state.status == "completed" and state.view_layout == LAYOUT >= 5

    # Each agent's summary copies the blocks of its previous one, then appends one for the items
    # since, labelled with the rounds it covers; past the cap, the oldest become one.
    summaries = _perspectives(folder)
    merges = appends = 0
    for agent in ROLES:
        mine = [s for s in summaries if s.agent_id == agent]
        assert len(mine) >= ROUNDS - 2 and all(s.blocks and s.scope == "perspective" for s in mine)
        assert all(b.unit == "round" for s in mine for b in s.blocks or [])
        assert re.fullmatch(r"### Rounds? 1(–\d)? \(summarized in round 2\)", (mine[0].blocks or [])[0].label)
        for previous, summary in zip(mine, mine[1:]):
            assert previous.blocks is not None and summary.blocks is not None
            new = summary.blocks[-1]
            assert new.first == previous.blocks[-1].last + 1 and not new.consolidated
            if summary.blocks[:-1] == previous.blocks:
                appends += 1
                continue
            merges += 1
            oldest, untouched = summary.blocks[0], summary.blocks[1:-1]
            gone = previous.blocks[:len(previous.blocks) - len(untouched)]
            assert len(gone) >= 1 and previous.blocks[len(gone):] == untouched
            assert oldest.consolidated and (oldest.first, oldest.last) == (1, gone[-1].last)
            assert oldest.label.endswith(f" 1–{oldest.last} (consolidated in round {summary.round})"
                                         if oldest.last > 1 else f" 1 (consolidated in round {summary.round})")
            assert oldest.count == sum(b.count for b in gone)
            # The consolidation's request held the blocks it merged, each under its label, and nothing newer.
            (request,) = [b for b in bodies if CONSOLIDATE_NOTE_ROUNDS in b["messages"][-2]["content"]
                          and all(f"{blk.label}\n\n{blk.text.strip()}" in b["messages"][-2]["content"]
                                  for blk in gone)]
            assert all(b.label not in request["messages"][-2]["content"] for b in [*untouched, new])
    assert appends >= 2 and merges >= 1

    # Between two consecutive requests of one agent, what the earlier one read of its summary (the
    # blocks, without the closing line that says how far they reach) opens the later one's, and a
    # provider's cache serves the request through it, unless the oldest were consolidated between.
    grown = 0
    for agent in ROLES:
        mine = [b for b in bodies if b["messages"][0]["content"].startswith(state.prompts[f"{agent}/system"])]
        for before, after in zip(mine, mine[1:]):
            earlier, now = _summary(before), _summary(after)
            if earlier is None or now is None or earlier == now:
                continue
            if now.split("\n\n")[1] != earlier.split("\n\n")[1]:
                continue  # the oldest blocks were consolidated in between: a new first block
            blocks = earlier.rsplit("\n\n", 1)[0]
            assert now.startswith(blocks + "\n\n### Round")
            shared = common_prefix(prompt_tokens(before["messages"]), prompt_tokens(after["messages"]))
            enc = tokens.encoding_for_model("")
            assert shared >= len(prompt_tokens(before["messages"][:1])) + len(enc.encode(blocks))
            grown += 1
    assert grown >= 3
    assert _context_is_what_was_sent(state, folder, bodies, capsys) == len(bodies)


def test_a_rounds_debate_begun_in_the_layout_before_keeps_its_rewritten_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A debate keeps the layout it began with: a rounds debate begun in layout 4 rewrites each
    agent's summary whole, under the heading that says when it was made, and rebuilds as it was sent."""
    monkeypatch.setattr(orchestrator, "LAYOUT", 4)
    state, folder, bodies = _run(tmp_path)
    assert state.status == "completed" and state.view_layout == 4
    summaries = _perspectives(folder)
    assert len(summaries) >= 4 and all(s.blocks is None for s in summaries)
    shown = [s for b in bodies if (s := _summary(b)) is not None]
    assert shown and all(re.match(rf"{PERSPECTIVE_HEADING} \(made in round \d+; covers \d+ items\)\n\n", s)
                         for s in shown)
    assert _context_is_what_was_sent(state, folder, bodies, capsys) == len(bodies)

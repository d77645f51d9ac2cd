"""A conversation's shared summary is asked of a debater as the continuation of its own view
(view layout 6), through the real provider against the loopback server with prose replies: the
summarize request begins byte for byte with its speaker's previous request, the summary it
writes is still the one every agent reads, and `moot context` rebuilds every view as it was sent,
in this layout and in the one before it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from moot.core import orchestrator
from moot.core.context.summarize import CONSOLIDATE_NOTE
from moot.core.context.view import LAYOUT, SUMMARY_HEADING
from tests.conftest import run_debate
from tests.loopback import LoopbackServer
from tests.test_append_summaries import SMALL, _context_is_what_was_sent, _summaries, _turns
from tests.test_prompt_cache import PROBLEM, ROLES, prose

ASKED = re.compile(r"^# Summarize turns (\d+)–(\d+) for everyone", re.M)


def _rolls(bodies: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """The summarize requests of rolls made before a turn (not a consolidation, not the judge's
    last one before its synthesis), with their place among the requests."""
    last_turn = max(i for i, b in enumerate(bodies) if b["messages"][-1]["content"].startswith("# Turn "))
    return [(i, b) for i, b in enumerate(bodies[:last_turn])
            if b["messages"][-1]["content"].startswith("# Summarize")
            and not any(CONSOLIDATE_NOTE in m["content"] for m in b["messages"])]


def _continues(previous: list[dict[str, Any]], request: list[dict[str, Any]]) -> bool:
    """Whether `request` opens with all of `previous` but its task, byte for byte: each message the
    same, the last of them (the verbatim window, or the recall block after it) the start of its own."""
    before = previous[:-1]
    if len(request) <= len(before):
        return False
    head, last = before[:-1], before[-1]
    return (request[:len(head)] == head and request[len(head)]["role"] == last["role"]
            and request[len(head)]["content"].startswith(last["content"]))


def test_the_shared_summary_is_asked_of_a_debater_as_the_continuation_of_its_previous_request(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with LoopbackServer(reply=prose) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, {"debate": {**SMALL, "turns": 16}}, rounds=None,
                                               provider="openai", base_url=srv.base_url, roles=ROLES))
        bodies = srv.requests
    assert state.status == "completed" and state.view_layout == LAYOUT
    debaters = {b["messages"][0]["content"] for _, b in _turns(bodies)}
    rolls = _rolls(bodies)
    assert len(rolls) >= 3
    for i, body in rolls:
        messages = body["messages"]
        speaker = messages[0]["content"]
        assert speaker in debaters  # a debater's system message, not the judge's
        previous = next(b for b in reversed(bodies[:i]) if b["messages"][0]["content"] == speaker)
        assert _continues(previous["messages"], messages), messages[-1]["content"][:80]
        asked = ASKED.match(messages[-1]["content"])
        assert asked is not None
        # The turns it names are in its view, verbatim, and so are the ones after them.
        first, last = int(asked.group(1)), int(asked.group(2))
        window = "\n\n".join(m["content"] for m in messages[1:-1])
        assert all(f"### Turn {t} · " in window for t in range(first, last + 1))
        # Asked of the author of the latest message: its previous request lacks only that message.
        latest = max(int(n) for n in re.findall(r"^### Turn (\d+) · ", window, re.M))
        assert speaker == dict(_turns(bodies))[latest]["messages"][0]["content"]

    # The summary is still the one shared tier: the judge owns it, every speaker reads its blocks.
    summaries = _summaries(folder.path)
    assert state.judge is not None and summaries and {s.agent_id for s in summaries} == {state.judge.id}
    turns = dict(_turns(bodies))
    latest = {s.round: s for s in summaries}  # the last one made before each turn
    read = [(t, latest[t]) for t in turns if t in latest]
    assert len(read) >= 3
    for t, summary in read:  # the turn it was rolled before reads it, whoever wrote it
        assert any(m["content"].startswith(f"{SUMMARY_HEADING}\n\n{summary.summary.strip()}")
                   for m in turns[t]["messages"]), t
    assert _context_is_what_was_sent(state.id, folder.path.parent, bodies, 16, capsys) == len(bodies)


def test_a_debate_begun_in_the_layout_before_asks_the_judge_for_its_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A debate keeps the layout it began with: in layout 5 the judge is asked, in its own words,
    with the messages leaving the window and nothing after them; it rebuilds as it was sent."""
    monkeypatch.setattr(orchestrator, "LAYOUT", 5)
    with LoopbackServer(reply=prose) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, {"debate": {**SMALL, "turns": 12}}, rounds=None,
                                               provider="openai", base_url=srv.base_url, roles=ROLES))
        bodies = srv.requests
    assert state.status == "completed" and state.view_layout == 5
    debaters = {b["messages"][0]["content"] for _, b in _turns(bodies)}
    rolls = _rolls(bodies)
    assert rolls and all(b["messages"][0]["content"] not in debaters for _, b in rolls)
    assert all(b["messages"][-1]["content"].startswith("# Summarize the conversation so far") for _, b in rolls)
    assert _context_is_what_was_sent(state.id, folder.path.parent, bodies, 12, capsys) == len(bodies)


def test_a_model_named_for_summaries_keeps_the_judge_writing_them(tmp_path: Path) -> None:
    """`summarization.model` names the model that writes summaries: no debater's model is asked
    instead, whatever its cache holds (the judge's request, in the judge's words, as before)."""
    debate = {**SMALL, "turns": 10, "summarization": {"model": "summary-model"}}
    with LoopbackServer(reply=prose) as srv:
        state, _ = asyncio.run(run_debate(tmp_path, PROBLEM, {"debate": debate}, rounds=None, provider="openai",
                                          base_url=srv.base_url, roles=ROLES))
        bodies = srv.requests
    assert state.status == "completed" and state.view_layout == LAYOUT
    rolls = _rolls(bodies)
    assert rolls and all(b["model"] == "summary-model" for _, b in rolls)
    assert all(b["messages"][-1]["content"].startswith("# Summarize the conversation so far") for _, b in rolls)

"""`recall(query)` as a tool: what the calling agent could have read before, found by name, verbatim.

The tool loop that offers tools to models is the grounding work's (`moot.core.tools`); this
tests the tool itself through the library API, on a debate run through the CLI against the
loopback server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from moot.core.context.index import DebateIndex
from moot.core.engine.recall_tool import RECALL_NAME, RECALL_PARAMETERS, RecallTool
from moot.core.models.state import ViewRecord
from moot.core.search.index import INDEX_FILE, SearchIndex
from tests.conftest import LoopbackServer
from tests.prose import FactScript, planted
from tests.test_recall import KEY, PLANTS, run, write_config


@pytest.fixture(scope="module")
def debate(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("tool")
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", KEY)
    try:
        with LoopbackServer(reply=FactScript(PLANTS, {}, chars=500)) as srv:
            _, folder = run(srv, tmp, write_config(tmp, turns=30))
    finally:
        mp.undo()
    state = folder.load()
    return state, DebateIndex(state), SearchIndex(Path(folder.path) / INDEX_FILE)


def turn_call(state: Any, turn: int) -> ViewRecord:
    return next(c for r in state.rounds for c in r.calls if c.phase == "turn" and c.round == turn)


def test_recall_finds_an_old_message_by_name_verbatim_and_answers_the_same_twice(debate: Any) -> None:
    state, index, search = debate
    record = turn_call(state, 30)
    tool = RecallTool.for_view(search, index, record)
    answer = asyncio.run(tool(RECALL_NAME, {"query": f"what was the {planted(1).name} lease?"}))
    assert answer.ok and "match" in answer.summary
    plant = next(c for c in state.all_contributions() if c.type == "message" and c.round == 3)
    assert plant.content.strip() in answer.text and "### Turn 3 · " in answer.text
    assert answer.text.index("### Turn 3 · ") == answer.text.index("### ")  # the best match first
    assert asyncio.run(tool(RECALL_NAME, {"query": f"what was the {planted(1).name} lease?"})) == answer
    assert RECALL_PARAMETERS["required"] == ["query"]


def test_recall_never_answers_with_what_the_view_holds(debate: Any) -> None:
    state, index, search = debate
    record = turn_call(state, 30)
    window = index.turn_ids(*record.history_turns)
    last = index.contributions[window[-1]]
    answer = RecallTool.for_view(search, index, record).run({"query": last.content[:300], "limit": 8})
    assert f"### Turn {last.round} · " not in answer.text
    for cid in window:
        assert index.contributions[cid].content.strip() not in answer.text


@pytest.mark.parametrize("arguments", [{"query": 5}, {"query": ""}, {}, {"query": "lease", "limit": 99},
                                       {"query": "lease", "limit": True}, {"query": '"NEAR(* col:umn'},
                                       {"query": "x" * 10_000}, {"query": "\x1b[2J lease"}, {"query": "()*"}])
def test_a_bad_call_is_one_line_the_model_can_read(debate: Any, arguments: dict[str, Any]) -> None:
    state, index, search = debate
    answer = RecallTool.for_view(search, index, turn_call(state, 20)).run(arguments)
    if not answer.ok:
        assert "\n" not in answer.text and answer.text
    else:
        assert answer.text.startswith(("no earlier message", "1 earlier message", "2 earlier", "3 earlier",
                                       "4 earlier"))


def test_a_quoted_limit_is_taken(debate: Any) -> None:
    state, index, search = debate
    answer = RecallTool.for_view(search, index, turn_call(state, 30)).run({"query": "lease quota shard",
                                                                          "limit": "2"})
    assert answer.ok and answer.text.count("### ") <= 2


def test_a_match_the_log_cannot_give_back_is_said_not_dropped_in_silence(debate: Any) -> None:
    """A damaged log: the index finds the old message, reading it back fails. The model (and the
    tool call's record) is told so, rather than getting an answer that looks complete."""
    state, _, search = debate
    record = turn_call(state, 30)
    plant = next(c for c in state.all_contributions() if c.type == "message" and c.round == 3)
    index = DebateIndex(state)
    del index.contributions[plant.id]  # held nowhere and no log to read it from
    answer = RecallTool.for_view(search, index, record).run({"query": f"what was the {planted(1).name} lease?"})
    assert plant.content.strip() not in answer.text
    assert "1 more matched but could not be read back from the debate's log" in answer.text
    assert "could not be read back" in answer.summary

"""A consolidation of append-only summary blocks keeps what the oldest block carried, as a rolling
summary keeps what it held: the oldest facts are the last to give way, not the first at every merge;
the merged blocks' facts are read back as facts and kept before their prose, and what a merge drops
is recorded as dropped.

Through the real provider against the loopback server with prose replies, rule-based summaries, a
summary tier small enough that a 30-turn conversation consolidates its blocks several times.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from moot.core.context.facts import facts_of, holds, plain
from moot.core.models.state import Summary, SummaryBlock
from tests.conftest import run_debate
from tests.loopback import LoopbackServer
from tests.prose import kept, loopback_reply, reply, turn_of
from tests.test_append_summaries import SMALL, _summaries
from tests.test_prompt_cache import PROBLEM, ROLES, prose

FACT_LINE = re.compile(r"^- (?:decision|claim|open): (.+)$", re.M)


def _first_fact(block: SummaryBlock) -> str:
    """The first fact a block lists (a decision, a number, an open question; not a text's head)."""
    return next(line for line in block.text.splitlines() if FACT_LINE.match(line))


def test_a_consolidation_keeps_the_oldest_blocks_facts_first(tmp_path: Path) -> None:
    config = {"debate": {**SMALL, "summarization": {"method": "rule-based"}}}
    with LoopbackServer(reply=prose) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, config, rounds=None, provider="openai",
                                               base_url=srv.base_url, roles=ROLES))
    assert state.status == "completed"
    made = [s for s in _summaries(folder.path) if s.blocks]
    merges = 0
    for before, after in zip(made, made[1:]):
        assert after.blocks is not None and before.blocks is not None
        head = after.blocks[0]
        if not (head.consolidated and head.made_at == after.round):
            continue  # appended, nothing merged
        merges += 1
        oldest = before.blocks[0]
        assert _first_fact(oldest)[:40] in head.text, f"the consolidation at turn {after.round} lost the oldest block's lead"
    assert merges >= 2


# ---------------------------------------------------------------- facts read back, kept first

TIER = {"debate": {**SMALL, "turns": 40, "summarization": {"method": "rule-based"}}}


def _told(turn: int) -> str:
    """Each turn's reply: prose of its own (its facts known by turn), so a redone turn says the same."""
    return reply(turn * 31 + 7, 1500).text


def _facts_script(body: dict[str, Any], n: int) -> str:
    turn = turn_of(body)
    return _told(turn) if turn is not None else loopback_reply(body, n, 1500)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> list[Summary]:
    """The conversation's summaries, oldest first (one debate for the tests that read them)."""
    with LoopbackServer(reply=_facts_script) as srv:
        state, folder = asyncio.run(run_debate(tmp_path_factory.mktemp("facts"), PROBLEM, TIER, rounds=None,
                                               provider="openai", base_url=srv.base_url, roles=ROLES))
    assert state.status == "completed"
    return [s for s in _summaries(folder.path) if s.blocks and s.scope == "conversation"]


def _consolidations(made: list[Summary]) -> list[tuple[Summary, Summary]]:
    """(the summary before, the one that consolidated its oldest blocks) pairs."""
    return [(before, after) for before, after in zip(made, made[1:])
            if after.blocks and after.blocks[0].consolidated and after.blocks[0].made_at == after.round]


def test_a_consolidation_carries_the_oldest_blocks_facts_whole_while_they_fit(made: list[Summary]) -> None:
    """Each fact the oldest block listed is in the block that replaces it, word for word, whenever
    that block had the room for all of them: the facts are read back, not summarized again as
    one long message whose extractor keeps a few of each kind."""
    pairs = _consolidations(made)
    assert len(pairs) >= 3
    whole = 0
    for before, after in pairs:
        assert before.blocks is not None and after.blocks is not None
        facts = FACT_LINE.findall(before.blocks[0].text)
        merged = after.blocks[0].text
        if sum(len(f) + 12 for f in facts) > len(merged):
            continue  # not room for them all: the newest of them gave way (checked below)
        whole += 1
        lost = [f for f in facts if f not in merged]
        assert not lost, f"the consolidation at turn {after.round} lost {lost}"
    assert whole >= 2


def test_the_earliest_turns_facts_outlast_every_consolidation(made: list[Summary]) -> None:
    """What the first block kept of the first turns' decisions, numbers and open questions is still
    in the summary tier, each on one line, after every later consolidation (the newest merged facts
    give way first, as a rolling summary keeps what it held before what it adds)."""
    first = made[0]
    early = [f for t in (1, 2) for f in reply(t * 31 + 7, 1500).facts
             if any(kept(line, f) for line in first.summary.splitlines())]
    assert len(early) >= 3
    pairs = _consolidations(made)
    assert len(pairs) >= 3
    for _, after in pairs:
        lost = [f.sentence for f in early if not any(kept(line, f) for line in after.summary.splitlines())]
        assert not lost, f"after the consolidation at turn {after.round} the tier lost {lost}"


def test_what_a_consolidation_drops_is_recorded_as_dropped(made: list[Summary]) -> None:
    """Every fact of the blocks a consolidation merged is either still in the summary or among its
    dropped facts: the list of what a compaction lost stays honest. The newer blocks it did not
    need to merge stand as they were."""
    pairs = _consolidations(made)
    assert pairs
    for before, after in pairs:
        assert before.blocks is not None and after.blocks is not None
        untouched = {b.label for b in after.blocks[1:]}
        assert [b for b in before.blocks if b.label in untouched] == after.blocks[1:-1]
        text = plain(after.summary)
        dropped = {plain(d.text) for d in after.dropped_facts}
        for block in before.blocks:
            if block.label in untouched:
                continue
            for fact in FACT_LINE.findall(block.text):
                assert holds(text, fact) or plain(fact) in dropped, (after.round, fact)


def test_a_models_consolidation_opens_with_the_merged_blocks_facts(tmp_path: Path) -> None:
    """Consolidated by the model, the block still carries the merged blocks' facts first, as the
    extractor reads them in the blocks' prose, and the model's prose after them."""
    config = {"debate": {**SMALL, "turns": 40, "summarization": {"method": "llm"}}}
    with LoopbackServer(reply=_facts_script) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, config, rounds=None, provider="openai",
                                               base_url=srv.base_url, roles=ROLES))
    assert state.status == "completed"
    pairs = _consolidations([s for s in _summaries(folder.path) if s.blocks and s.scope == "conversation"])
    assert pairs
    for before, after in pairs:
        assert before.blocks is not None and after.blocks is not None
        merged = after.blocks[0].text
        assert FACT_LINE.match(merged), f"the consolidation at turn {after.round} opens with prose"
        _, first = facts_of(before.blocks[0].text)[0]
        assert first in merged, (after.round, first)

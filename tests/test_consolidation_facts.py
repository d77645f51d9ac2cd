"""A consolidation of append-only summary blocks keeps what the oldest block carried, as a rolling
summary keeps what it held: the oldest facts are the last to give way, not the first at every merge.

Through the real provider against the loopback server with prose replies, rule-based summaries, a
summary tier small enough that a 30-turn conversation consolidates its blocks several times.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from moot.core.models.state import SummaryBlock
from tests.conftest import run_debate
from tests.loopback import LoopbackServer
from tests.test_append_summaries import SMALL, _summaries
from tests.test_prompt_cache import PROBLEM, ROLES, prose


def _first_fact(block: SummaryBlock) -> str:
    """The first line of a block that states something (not a heading)."""
    return next(line for line in block.text.splitlines() if line.strip() and not line.startswith("#"))


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

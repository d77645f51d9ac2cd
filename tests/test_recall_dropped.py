"""Recall prefers what a summary dropped: when a later message comes back to a fact a summary
lost, the item that holds it is recalled before items that merely share rarer words.

Through the CLI against the loopback server, with ordinary prose replies: early turns state facts
as an engineer writes them (a number with its unit, what it is about and where), a rolling summary
drops them, and later turns come back to them in other words. The words that tell a fact apart
are ordinary ones that other turns use too: ranked by rare words alone, another message that
shares one rarer word with the latest turn takes the tier's small cap instead.
"""

from __future__ import annotations

import re
from typing import Any

from moot.core.search.index import INDEX_FILE, SearchIndex
from tests.conftest import LoopbackServer
from tests.engineer_facts import EngineerScript, engineer_fact
from tests.test_recall import KEY, requests_at, run, write_config

PLANTS = {2: 0, 3: 1, 4: 2, 5: 3}
MENTIONS = {14: 1, 22: 3}


def test_the_item_whose_fact_a_summary_dropped_is_recalled_first(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with LoopbackServer(reply=EngineerScript(PLANTS, MENTIONS, chars=500)) as srv:
        _, folder = run(srv, tmp_path, write_config(tmp_path, turns=23, extra="recall_tokens = 260"))
        state = folder.load()
        messages = {c.round: c for c in state.all_contributions() if c.type == "message"}
        summaries = [s for r in state.rounds for s in [*r.summaries.values(), *r.replaced_summaries]]
        for mention, fact in MENTIONS.items():
            plant = next(t for t, f in PLANTS.items() if f == fact)
            sentence = engineer_fact(fact).sentence
            # A summary dropped the fact (from its item, or from an older block when blocks were consolidated).
            assert any(d.item_id in (messages[plant].id, None) and sentence[:60] in d.text
                       for s in summaries for d in s.dropped_facts or []), f"no summary dropped turn {plant}'s fact"
            record = next(c for c in state.round(mention + 1).calls if c.phase == "turn")
            assert record.recall is not None and record.recall.items
            assert record.recall.items[0].id == messages[plant].id, "the dropped fact's item is not recalled first"
            (body,) = requests_at(srv, mention + 1)
            sent = "\n".join(m["content"] for m in body["messages"])
            content = messages[plant].content
            at = content.index(sentence)
            assert content[at:at + len(sentence) + 150] in sent
    # The index keeps each dropped fact under its item, for the next run's recall too.
    index = SearchIndex(folder.path / INDEX_FILE)
    try:
        value = re.search(r"\d+", engineer_fact(3).sentence)
        assert value is not None
        found = index.dropped_postings(value.group(), max_step=23, limit=50)
    finally:
        index.close()
    assert messages[5].id in {doc for doc, _, _ in found}

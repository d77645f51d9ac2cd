"""Chunk-and-reduce keeps what the partial summaries say (issue 11, point 10).

In a long demo debate, summaries collapsed once the perspective no longer fitted one
summarization call (`6.2k → 535` then `7.5k → 28` tokens): the reduce step kept one line
per partial summary ("Partial summary 1: Round 1 · your proposal."). The reduce request now
says what its blocks are, and the demo provider merges their lines, each part getting a
share of the room.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from moot.core.context.summarize import REDUCE_NOTE, reduce_parts
from moot.core.providers.demo import DemoProvider
from moot.core.store import DebateFolder
from tests.test_bad_input import cli
from tests.test_resume import only_debate


def test_the_reduce_request_summarizes_the_parts_content() -> None:
    parts = [f"- Round {i} · your proposal\n- **Position**: position {i} holds.\n- **Design**: design {i}."
             for i in range(1, 9)]
    blocks = reduce_parts(parts)
    assert list(blocks) == [f"part{i:04d}" for i in range(8)]
    assert blocks["part0000"].startswith(REDUCE_NOTE.format(n=8))
    assert all(f"### Summary of part {i + 1} of 8 of the history\n\n{p}" in blocks[f"part{i:04d}"]
               for i, p in enumerate(parts))
    history = "<history>\n" + "\n\n".join(blocks.values()) + "\n</history>"
    merged = DemoProvider()._summarize(history, 2500)
    assert all(f"position {i} holds." in merged for i in range(1, 9))  # every part, not its first line
    small = DemoProvider()._summarize(history, 600)
    assert len(small) <= 600 and all(f"Round {i} " in small for i in range(1, 9))  # a share each, the newest too


@pytest.mark.timeout(120)
def test_a_60_round_demo_debate_keeps_summaries_of_comparable_size(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """LLM summaries, strategy fresh, a small budget: from round 3 on every summary of the
    architect's perspective needs chunk-and-reduce (up to ~40 chunks by round 60). Each
    round's summary stays within a factor of the others and still covers late rounds."""
    monkeypatch.setenv("MOOT_DEMO_DELAY", "0")
    cfg = tmp_path / "moot.json"
    cfg.write_text(json.dumps({"debate": {
        "context": {"max_context_tokens": 3000, "reserve_output_tokens": 500},
        "summarization": {"method": "llm", "strategy": "fresh", "threshold": 1000},
    }}))
    sd = tmp_path / "D"
    r = cli("run", "Design a URL shortener", "--provider", "demo", "--headless", "-r", "60", "-a", "architect,kiss",
            "-c", str(cfg), "--state-dir", str(sd))
    assert r.returncode == 0, r.stderr
    state = DebateFolder(only_debate(sd)).load()
    summaries = [rnd.summaries["architect"] for rnd in state.rounds if "architect" in rnd.summaries]
    assert len(summaries) >= 55
    chunked = [s for s in summaries if s.metadata.chunks > 1]
    assert len(chunked) >= 50 and max(s.metadata.chunks for s in chunked) >= 30
    assert all(s.metadata.fallback_reason is None for s in summaries)
    sizes = [s.metadata.after_tokens for s in chunked]
    assert min(sizes) >= 0.6 * max(sizes), sizes
    assert all(b >= 0.75 * a for a, b in zip(sizes, sizes[1:])), sizes  # no round-to-round collapse
    last = summaries[-1].summary
    rounds = {int(n) for n in re.findall(r"Round (\d+)", last)}
    assert min(rounds) == 1 and max(rounds) >= 50, sorted(rounds)

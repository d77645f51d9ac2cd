"""Chunk-and-reduce keeps what the partial summaries say.

In a long demo debate, summaries collapsed once the perspective no longer fitted one
summarization call (`6.2k → 535` then `7.5k → 28` tokens): the reduce step kept one line
per partial summary ("Partial summary 1: Round 1 · your proposal."). The reduce request now
says what its blocks are, and the demo provider merges their lines: every part represented,
the newest form of a repeated point kept, never so repetitive that the summary would be
rejected as degenerate (a loop).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from moot.core.context.summarize import REDUCE_NOTE, degenerate, reduce_parts
from moot.core.providers.demo import DemoProvider
from moot.core.storage.folder import DebateFolder
from tests.test_bad_input import cli
from tests.test_resume import only_debate


def test_the_reduce_request_summarizes_the_parts_content() -> None:
    points = ["a read-through cache keyed by slug", "Postgres with one table per bounded context",
              "an outbox feeding a queue for analytics", "rate limits of 300 requests a minute per client",
              "short links as base62 of a 64-bit sequence", "a canary at 5% of traffic for a day",
              "audit logs kept 90 days on write-once storage", "p99 under 80 ms on the redirect path"]
    parts = [f"- Round {i} · your proposal\n- **Position**: I hold to {point} now.\n- **Design**: {point[::-1]}."
             for i, point in enumerate(points, 1)]
    blocks = reduce_parts(parts)
    assert list(blocks) == [f"part{i:04d}" for i in range(8)]
    assert blocks["part0000"].startswith(REDUCE_NOTE.format(n=8))
    assert all(f"### Summary of part {i + 1} of 8 of the history\n\n{p}" in blocks[f"part{i:04d}"]
               for i, p in enumerate(parts))
    history = "<history>\n" + "\n\n".join(blocks.values()) + "\n</history>"
    merged = DemoProvider()._summarize(history, 2500)
    assert all(f"I hold to {point} now." in merged for point in points)  # every part, not its first line
    small = DemoProvider()._summarize(history, 300)
    assert len(small) <= 300 and "Round 8 " in small  # less room: the newest part is kept
    assert degenerate(merged) is None and degenerate(small) is None


@pytest.mark.timeout(600)  # a hang guard only: under a loaded machine with 4 workers it took over 120 s
def test_a_30_round_demo_debate_keeps_summaries_of_comparable_size(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """LLM summaries, strategy fresh, a small budget: from round 3 on every summary of the
    architect's perspective needs chunk-and-reduce (~20 chunks by round 30). Each
    round's summary stays within a factor of the others and still covers late rounds."""
    monkeypatch.setenv("MOOT_DEMO_DELAY", "0")
    cfg = tmp_path / "moot.json"
    cfg.write_text(json.dumps({"debate": {
        "context": {"max_context_tokens": 3000, "reserve_output_tokens": 500},
        "summarization": {"method": "llm", "strategy": "fresh", "threshold": 1000},
    }}))
    sd = tmp_path / "D"
    r = cli("run", "Design a URL shortener", "--provider", "demo", "--headless", "-r", "30", "-a", "architect,kiss",
            "-c", str(cfg), "--state-dir", str(sd))
    assert r.returncode == 0, r.stderr
    state = DebateFolder(only_debate(sd)).load()
    summaries = [rnd.summaries["architect"] for rnd in state.rounds if "architect" in rnd.summaries]
    assert len(summaries) >= 27
    chunked = [s for s in summaries if s.metadata.chunks > 1]
    assert len(chunked) >= 25 and max(s.metadata.chunks for s in chunked) >= 25
    assert all(s.metadata.fallback_reason is None for s in summaries)
    sizes = [s.metadata.after_tokens for s in chunked]
    assert min(sizes) >= 0.5 * max(sizes), sizes
    assert all(b >= 0.8 * a for a, b in zip(sizes, sizes[1:])), sizes  # no round-to-round collapse
    last = summaries[-1].summary
    rounds = {int(n) for n in re.findall(r"[Rr]ound (\d+)", last)}
    assert max(rounds) >= 25 and len(rounds) >= 8, sorted(rounds)  # the latest rounds, and many of them

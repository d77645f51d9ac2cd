"""`--weight confidence`: each answer of a vote, a simultaneous debate or an adaptive one states a
confidence, and the final answer is the confidence-weighted majority, with the plain majority
reported beside it; the rows agree with their saved debates."""

from __future__ import annotations

import json
import re
from pathlib import Path

from moot.core.bench.results import answers_by_round
from moot.core.protocols.answers import extract_confidence, weighted_majority
from moot.core.storage.state_dir import StateDir
from tests.conftest import cli
from tests.loopback import LoopbackServer, arithmetic_reply

_ANSWER = re.compile(r"Answer: (-?\d+)")
_SURE = re.compile(r"Confidence: (\d+)")


def test_confidence_parsing_and_the_weighted_majority() -> None:
    assert extract_confidence("The sum is 19.\n\nAnswer: 19\nConfidence: 85") == 85
    assert extract_confidence("Answer: 19\n**Confidence:** 70%") == 70
    assert extract_confidence("Answer: 19\nconfidence = 64/100") == 64
    assert extract_confidence("Answer: 19, and I am fairly sure of it.") is None
    assert extract_confidence("Answer: 19\nConfidence: 250") is None  # out of range: unweighted
    # two unsure answers lose to one sure one; an answer with no confidence weighs a plain vote
    assert weighted_majority(["7", "7", "9"], [20, 30, 90]).winner == "9"
    assert weighted_majority(["7", "9"], [None, 90]).winner == "7"
    assert weighted_majority(["7", "9"], [50, 50]).tied == ["7", "9"]


def test_weighted_votes_in_vote_simultaneous_and_adaptive(tmp_path: Path) -> None:
    sd = tmp_path / "debates"
    with LoopbackServer(arithmetic_reply(0.45)) as srv:
        r = cli("bench", "arithmetic:10:terms=3", "--protocols", "vote,simultaneous,adaptive", "--weight",
                "confidence", "--provider", "openai", "--base-url", srv.base_url, "--model", "loop", "--headless",
                "--state-dir", str(sd), "-o", str(tmp_path / "r.json"))
        assert r.returncode == 0, r.stderr
        asks = [q["messages"][-1]["content"] for q in srv.requests]
        assert asks and all("`Confidence: 80`" in a for a in asks)  # every answer was asked for a confidence
    doc = json.loads((tmp_path / "r.json").read_text())
    differ = 0
    for row in doc["results"]:
        state = StateDir(sd).open(row["debate_id"]).load()
        latest = [cs[-1].content for cs in answers_by_round(state).values() if cs]
        answers = [m.group(1) if (m := _ANSWER.search(t)) else None for t in latest]
        sure = [int(m.group(1)) if (m := _SURE.search(t)) else None for t in latest]
        assert all(s is not None for s in sure)
        totals: dict[str, float] = {}
        for a, s in zip(answers, sure, strict=True):
            if a is not None and s is not None:
                totals[a] = totals.get(a, 0.0) + s / 100
        best = max(totals.values())
        assert row["answer"] == next(a for a, w in totals.items() if abs(w - best) < 1e-9)
        assert row["decided_by"] == "weighted majority"
        tally = state.final_solution.tally if state.final_solution else None
        assert tally is not None and tally.weighting == "confidence"
        assert tally.winner == row["answer"] and tally.plain_winner == row["majority"]
        assert "plain majority" in tally.rule
        differ += row["answer"] != row["majority"]
    assert differ, "on some question the confidences should outvote the plain majority"
    md = cli("report", doc["results"][0]["debate_id"], "--state-dir", str(sd))
    assert "Confidence-weighted majority answer" in md.stdout

"""What a debate's rounds buy and what they cost, in `moot bench`'s results: the share of
questions the rounds turned right→wrong and wrong→right, per debate protocol, against the
loopback server that answers arithmetic right with a set probability."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from moot.core.models.config import AnswerFormat
from moot.core.protocols.answers import extract, majority
from moot.core.storage.state_dir import StateDir
from tests.conftest import cli
from tests.loopback import LoopbackServer, arithmetic_reply

NUMBER = AnswerFormat(kind="number")


def _bench(srv: LoopbackServer, tmp: Path, out: str, *extra: str) -> dict[str, Any]:
    r = cli("bench", "arithmetic:5:terms=3", "--provider", "openai", "--base-url", srv.base_url, "--model", "loop",
            "--headless", "--state-dir", str(tmp / "debates"), "-o", str(tmp / out), *extra)
    assert r.returncode == 0, r.stderr
    return json.loads((tmp / out).read_text()) if out.endswith(".json") else {"md": (tmp / out).read_text()}


def test_shares_of_questions_the_rounds_turned_right_or_wrong(tmp_path: Path) -> None:
    with LoopbackServer(arithmetic_reply(0.5)) as srv:
        doc = _bench(srv, tmp_path, "r.json", "--protocols", "vote,simultaneous")
        md = _bench(srv, tmp_path, "r.md", "--protocols", "vote,simultaneous")["md"]
    sd = StateDir(tmp_path / "debates")
    turned = {"r→w": 0, "w→r": 0}
    for row in (r for r in doc["results"] if r["protocol"] == "simultaneous"):
        state = sd.open(row["debate_id"]).load()
        answers = {c.agent_id: c.content for c in state.round(1).contributions if c.type == "answer"}
        first = majority([extract(answers[a.id], NUMBER) for a in state.agents])  # a tie goes by agent order
        assert row["first_majority"] == first.winner
        was = first.winner == row["expected"]
        turned["r→w"] += was and not row["correct"]
        turned["w→r"] += row["correct"] and not was
    sim = doc["protocols"]["simultaneous"]
    assert sim["turned_right_to_wrong"] == turned["r→w"] / 5 and sim["turned_wrong_to_right"] == turned["w→r"] / 5
    assert turned["r→w"] + turned["w→r"] > 0  # answers right half the time: the rounds move some questions
    assert doc["protocols"]["vote"]["turned_right_to_wrong"] == doc["protocols"]["vote"]["turned_wrong_to_right"] == 0
    head = next(line for line in md.splitlines() if line.startswith("| protocol"))
    assert "turned r→w, w→r %" in head
    row = next(line for line in md.splitlines() if line.startswith("| simultaneous"))
    assert f"| {100 * turned['r→w'] / 5:.1f}, {100 * turned['w→r'] / 5:.1f} |" in row
    assert "| – |" in next(line for line in md.splitlines() if line.startswith("| vote"))

"""What a debate's rounds buy and what they cost, in `moot bench`'s results: the share of
questions the rounds turned right→wrong and wrong→right, per debate protocol, against the
loopback server that answers arithmetic right with a set probability."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from moot.core.models.config import AnswerFormat
from moot.core.protocols.answers import extract, majority
from moot.core.storage.state_dir import StateDir
from tests.conftest import cli
from tests.loopback import LoopbackServer, arithmetic_reply

NUMBER = AnswerFormat(kind="number")


def _bench(srv: LoopbackServer, tmp: Path, out: str, *extra: str) -> dict[str, Any]:
    r = cli("bench", "arithmetic:4:terms=3", "--provider", "openai", "--base-url", srv.base_url, "--model", "loop",
            "--headless", "--state-dir", str(tmp / "debates"), "-o", str(tmp / out), *extra)
    assert r.returncode == 0, r.stderr
    return json.loads((tmp / out).read_text()) if out.endswith(".json") else {"md": (tmp / out).read_text()}


def test_shares_of_questions_the_rounds_turned_right_or_wrong(tmp_path: Path) -> None:
    with LoopbackServer(arithmetic_reply(0.5)) as srv:
        doc = _bench(srv, tmp_path, "r.json", "--protocols", "single,simultaneous")
        md = _bench(srv, tmp_path, "r.md", "--protocols", "single,simultaneous")["md"]
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
    assert sim["turned_right_to_wrong"] == turned["r→w"] / 4 and sim["turned_wrong_to_right"] == turned["w→r"] / 4
    assert turned["r→w"] + turned["w→r"] > 0  # answers right half the time: the rounds move some questions
    assert doc["protocols"]["single"]["turned_right_to_wrong"] == doc["protocols"]["single"]["turned_wrong_to_right"] == 0
    head = next(line for line in md.splitlines() if line.startswith("| protocol"))
    assert "turned r→w, w→r %" in head
    row = next(line for line in md.splitlines() if line.startswith("| simultaneous"))
    assert f"| {100 * turned['r→w'] / 4:.1f}, {100 * turned['w→r'] / 4:.1f} |" in row
    assert "| – |" in next(line for line in md.splitlines() if line.startswith("| single"))


def test_tokens_per_correct_answer_and_the_pareto_front_beside_results_md(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The plot beside `results.md` marks the protocols no other beats on accuracy and tokens per
    question; its labels are escaped (a data set's name is whatever the file is called)."""
    monkeypatch.chdir(tmp_path)  # the name as given, short: a long temporary path would be cut in the title
    data = Path("sums <&> \"quoted\".jsonl")
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"What is {i}+{2 * i}*3?", "answer": 7 * i}) + "\n"
                            for i in range(1, 5)))
    args = ["bench", str(data), "--provider", "demo", "--headless", "--state-dir", str(tmp_path / "d")]
    r = cli(*args, "-o", str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    stats = doc["protocols"]
    for p, s in stats.items():
        mine = [x for x in doc["results"] if x["protocol"] == p]
        tokens = sum(x["prompt_tokens"] + x["completion_tokens"] for x in mine)
        assert s["tokens_per_correct"] == (tokens / s["correct"] if s["correct"] else None)
    beaten = {p for p, s in stats.items() for q, t in stats.items() if q != p and t["accuracy"] >= s["accuracy"]
              and t["tokens_per_question"] <= s["tokens_per_question"]
              and (t["accuracy"], t["tokens_per_question"]) != (s["accuracy"], s["tokens_per_question"])}
    assert set(doc["pareto"]) == set(stats) - beaten and doc["pareto"]
    assert cli(*args, "-o", str(tmp_path / "r.md")).returncode == 0
    svg = ET.fromstring((tmp_path / "r.svg").read_text())  # well-formed: the name's <, & and " escaped
    title = next(e for e in svg.iter() if e.tag.endswith("text") and e.get("font-weight") == "bold")
    assert 'sums <&> "quot' in (title.text or "")
    marked = [e for e in svg.iter() if e.tag.endswith("circle") and e.get("class") == "pareto"]
    assert len(marked) == len(doc["pareto"])
    assert any(e.tag.endswith("polyline") for e in svg.iter()) == (len(doc["pareto"]) > 1)
    md = (tmp_path / "r.md").read_text()
    assert "tokens/correct" in md and all("◆ Pareto front" in line for line in md.splitlines()
                                          if any(line.startswith(p + " ") for p in doc["pareto"]))

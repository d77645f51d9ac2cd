"""`moot bench --panel A,B,C`: a mixed panel, agent i on model i, with each model's accuracy beside
the panel's — against the loopback server answering as two models, one right far more often."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from moot.core.models.config import AnswerFormat
from moot.core.protocols.answers import extract
from moot.core.storage.state_dir import StateDir
from tests.conftest import cli
from tests.loopback import LoopbackServer, arithmetic_reply

NUMBER = AnswerFormat(kind="number")


def _two_models() -> Any:
    strong, weak = arithmetic_reply(0.9), arithmetic_reply(0.15)
    return lambda body, n: (strong if body.get("model") == "strong-model" else weak)(body, n)


def test_a_mixed_panel_reports_each_model_beside_the_panel(tmp_path: Path) -> None:
    with LoopbackServer(_two_models()) as srv:
        args = ["bench", "arithmetic:3:terms=3", "--protocols", "vote,simultaneous", "--samples", "3", "-r", "1", "--panel",
                "strong-model,weak-model,strong-model", "--provider", "openai", "--base-url", srv.base_url,
                "--model", "judge-model", "--headless", "--state-dir", str(tmp_path / "d")]
        r = cli(*args, "-o", str(tmp_path / "r.json"))
        assert r.returncode == 0, r.stderr
        assert {b["model"] for b in srv.requests} == {"strong-model", "weak-model"}
        md = cli(*args, "-o", str(tmp_path / "r.md"))
        assert md.returncode == 0, md.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    sd = StateDir(tmp_path / "d")
    for p, s in doc["protocols"].items():
        marks: dict[str, list[bool]] = {}
        for row in (x for x in doc["results"] if x["protocol"] == p):
            state = sd.open(row["debate_id"]).load()
            assert [a.model for a in state.agents][:3] == ["strong-model", "weak-model", "strong-model"]
            last: dict[str, str] = {}
            for rnd in state.rounds:
                for c in rnd.contributions:
                    last[c.agent_id] = c.content
            for a in state.agents:
                marks.setdefault(a.model, []).append(extract(last[a.id], NUMBER) == row["expected"])
        assert {m: (v["answers"], v["correct"]) for m, v in s["per_model"].items()} == {
            m: (len(v), sum(v)) for m, v in marks.items()}
        per = s["per_model"]
        assert per["strong-model"]["accuracy"] > per["weak-model"]["accuracy"]  # told apart, beside the panel's
    text = (tmp_path / "r.md").read_text()
    assert "## Per model" in text
    vote = doc["protocols"]["vote"]
    assert (f"| vote | weak-model | {vote['per_model']['weak-model']['answers']} | "
            f"{100 * vote['per_model']['weak-model']['accuracy']:.1f} ± ") in text


def test_a_panel_that_does_not_fit_the_agents_is_one_line() -> None:
    r = cli("bench", "arithmetic:2", "--provider", "demo", "--panel", "a,b", "-a", "generalist,generalist,generalist",
            "--headless")
    assert r.returncode == 2 and r.stderr.strip() == "moot: --panel names 2 models for 3 agents; give one model per agent"
    r = cli("bench", "arithmetic:2", "--provider", "demo", "--panel", "a,,b", "--headless")
    assert r.returncode == 2 and "empty model" in r.stderr and "Traceback" not in r.stderr

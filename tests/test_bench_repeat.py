"""`moot bench --repeat K`: each question run K times with different seeds, the spread between
runs beside the standard error, what the paired comparisons can conclude (within noise, and how
many questions would show the difference), answers that differed between runs at temperature 0,
and a rerun that redoes nothing finished — against the loopback server, whose answers follow
the request and its seed."""

from __future__ import annotations

import json
import math
import shutil
import statistics
from pathlib import Path
from typing import Any

from moot.core.bench.runner import REPEAT_SEED_STEP
from moot.core.storage.state_dir import StateDir
from tests.conftest import cli
from tests.loopback import LoopbackServer, arithmetic_reply

AGENTS = {"agents": [{"id": f"solver-{i}", "role": "generalist", "temperature": 0} for i in (1, 2, 3)]}


def _bench(srv: LoopbackServer, tmp: Path, *extra: str) -> tuple[dict[str, Any], str]:
    r = cli("bench", "arithmetic:3:terms=3", "--protocols", "single,vote", "--samples", "2", "--repeat", "2", "-c",
            str(tmp / "panel.json"), "--provider", "openai", "--base-url", srv.base_url, "--model", "loop",
            "--headless", "--state-dir", str(tmp / "debates"), "-o", str(tmp / "r.json"), *extra)
    assert r.returncode == 0, r.stderr
    return json.loads((tmp / "r.json").read_text()), r.stdout


def test_repeats_report_the_spread_between_runs_and_what_can_be_concluded(tmp_path: Path) -> None:
    (tmp_path / "panel.json").write_text(json.dumps(AGENTS))
    with LoopbackServer(arithmetic_reply(0.5)) as srv:
        doc, out = _bench(srv, tmp_path)
        rows = doc["results"]
        assert doc["repeat"] == 2 and len(rows) == 3 * 2 * 2
        sd = StateDir(tmp_path / "debates")
        by_run = {(r["protocol"], r["id"], r["repeat"]): r for r in rows}
        for (p, qid, k), row in by_run.items():  # run k: the first run's debate, every seed + 10000 × (k − 1)
            first = by_run[(p, qid, 1)]["debate_id"]
            assert row["debate_id"] == (first if k == 1 else f"{first}-r{k}")
            seeds = [a["seed"] for a in sd.open(row["debate_id"]).load().config["agents"]]
            base = [a["seed"] for a in sd.open(first).load().config["agents"]]
            assert seeds == [s + REPEAT_SEED_STEP * (k - 1) for s in base]
        for p, s in doc["protocols"].items():
            runs = [[r["correct"] for r in rows if r["protocol"] == p and r["repeat"] == k] for k in (1, 2)]
            assert s["run_accuracies"] == [sum(c) / len(c) for c in runs]
            assert s["run_sd"] == statistics.stdev(s["run_accuracies"])
            answers = [{r["answer"] for r in rows if r["protocol"] == p and r["id"] == q} for q in {r["id"] for r in rows}]
            assert s["differed"] == sum(len(a) > 1 for a in answers)
        # The loopback's answers follow the seed, so at temperature 0 some question's runs disagree: reported.
        assert sum(s["differed"] for s in doc["protocols"].values()) > 0
        assert "the server is not deterministic" in out and "sd between runs" in out
        (c,) = doc["comparisons"]
        right = {(r["protocol"], r["id"], r["repeat"]): r["correct"] for r in rows}
        only_a = sum(right[("single", q, k)] and not right[("vote", q, k)] for _, q, k in by_run)
        only_b = sum(right[("vote", q, k)] and not right[("single", q, k)] for _, q, k in by_run)
        assert (c["only_a"], c["only_b"], c["n"]) == (only_a // 2, only_b // 2, 6)  # each pair seen twice above
        psi, delta = (c["only_a"] + c["only_b"]) / 6, (c["only_a"] - c["only_b"]) / 6
        expected = (None if delta == 0 else
                    math.ceil((1.959964 * psi**0.5 + 0.841621 * (psi - delta**2) ** 0.5) ** 2 / delta**2))
        assert c["questions_needed"] == expected
        assert c["within_noise"] == (c["mcnemar_p"] >= 0.05 or c["ci_low"] <= 0 <= c["ci_high"]
                                     or abs(c["difference"]) <= max(s["run_sd"] for s in doc["protocols"].values()))

        sent = srv.calls
        again, _ = _bench(srv, tmp_path)  # every run of every question read back: no request
        assert srv.calls == sent and again["results"] == rows
        timeless = [{k: v for k, v in r.items() if k != "seconds"} for r in rows]
        lost = by_run[("vote", "a3", 2)]["debate_id"]
        shutil.rmtree(tmp_path / "debates" / lost)  # one run's debate gone: only it runs again
        again, _ = _bench(srv, tmp_path)
        assert srv.calls - sent == by_run[("vote", "a3", 2)]["calls"]
        assert [{k: v for k, v in r.items() if k != "seconds"} for r in again["results"]] == timeless

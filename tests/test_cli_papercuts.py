"""Command-line papercuts, each through the CLI (against the loopback server where a
model answers): a killed debate's status, a carried proposal's context, the evaluation's title,
where `moot list` looked, and which 0–100 number is the convergence score and which the confidence."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from moot.core.storage.folder import DebateFolder
from tests.conftest import LoopbackServer, cli, make_server, read_jsonl, run_debate
from tests.test_resume import cli_env, only_debate


def _wait_for(predicate: Any, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_a_debate_killed_with_kill_9_is_unfinished_in_list_show_and_json(tmp_path: Path) -> None:
    sd = tmp_path / "D"
    with LoopbackServer(delay=0.2) as srv:  # slow enough that the kill lands mid-debate
        proc = subprocess.Popen([sys.executable, "-m", "moot", "run", "Design a rate limiter for a public API",
                                 "--base-url", srv.base_url, "--headless", "-r", "2", "-a", "kiss,security",
                                 "--state-dir", str(sd)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=cli_env())
        try:
            _wait_for(lambda: any(e["type"] == "contribution_added"
                                  for p in sd.glob("*/events.jsonl") for e in read_jsonl(p)))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    folder = only_debate(sd)
    assert DebateFolder(folder).load().status == "running"  # what its log says
    listed = cli("list", "--state-dir", str(sd))
    assert listed.stdout.splitlines()[1].split()[1] == "unfinished"
    shown = cli("show", folder.name, "--state-dir", str(sd))
    assert shown.returncode == 0
    first, second = shown.stdout.splitlines()[:2]
    assert first.startswith(f"debate {folder.name} · rounds · unfinished · ")
    assert second == (f"  (its process ended before the debate did; continue with "
                      f"`moot resume {folder.name} --state-dir {sd}`)")
    as_json = cli("show", folder.name, "--json", "--state-dir", str(sd))
    assert json.loads(as_json.stdout)["status"] == "unfinished" and not as_json.stderr


def test_context_of_a_carried_proposal_shows_the_refinement_that_wrote_it(tmp_path: Path) -> None:
    srv = make_server()
    try:
        state, folder = asyncio.run(run_debate(tmp_path, "Design an offline-first notes app", rounds=2,
                                               provider="openai", base_url=srv.base_url,
                                               roles=["architect", "kiss"]))
    finally:
        srv.stop()
    sd = str(folder.path.parent)
    [proposal] = [c for c in state.rounds[1].contributions if c.agent_id == "architect" and c.type == "proposal"]
    assert proposal.carried_from  # carry_refinements is on by default: no call in round 2's proposals
    r = cli("context", state.id, "--round", "2", "--agent", "architect", "--phase", "proposal", "--state-dir", sd)
    assert r.returncode == 0 and not r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == ("architect's round 2 proposal was carried from its round 1 refinement: no call was made "
                        "for it; the call that wrote it:")
    assert lines[1].startswith("═══ architect refinement · ")
    # The same call as `--round 1 --phase refinement` shows.
    source = cli("context", state.id, "--round", "1", "--agent", "architect", "--phase", "refinement",
                 "--state-dir", sd)
    assert r.stdout == lines[0] + "\n" + source.stdout
    as_json = json.loads(cli("context", state.id, "--round", "2", "--agent", "architect", "--phase", "proposal",
                             "--json", "--state-dir", sd).stdout)
    assert [(c["round"], c["phase"], c["carried_as"]) for c in as_json] == [(1, "refinement", "round 2 proposal")]
    # Without --phase: the note, then the calls it did make in round 2.
    every = cli("context", state.id, "--round", "2", "--agent", "architect", "--state-dir", sd).stdout.splitlines()
    assert every[0] == ("architect's round 2 proposal was carried from its round 1 refinement: no call was made "
                        "for it (`--round 1 --phase refinement` shows the call that wrote it)")
    assert [line.split(" · ")[0] for line in every if line.startswith("═══")] == [
        "═══ architect critique → kiss", "═══ architect refinement"]


def test_eval_of_a_problem_that_is_a_heading_has_one_title(tmp_path: Path) -> None:
    state, folder = asyncio.run(run_debate(tmp_path, "# Offline-first notes app\n\nSync when back online.",
                                           rounds=1))
    r = cli("eval", state.id, "--state-dir", str(folder.path.parent))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "# Evaluation: Offline-first notes app"


def test_list_with_no_debates_names_the_whole_folder(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    r = subprocess.run([sys.executable, "-m", "moot", "list"], cwd=tmp_path / "elsewhere", capture_output=True,
                       text=True, env=cli_env(), timeout=120)
    assert r.returncode == 0 and r.stdout == ""
    assert r.stderr == (f"no debates in {tmp_path / 'elsewhere' / 'debates'} "
                        "(--state-dir or MOOT_STATE_DIR name another folder)\n")


def _judge_scores_95_and_answers_87(body: dict[str, Any], n: int) -> str:
    ask = str(body["messages"][-1]["content"])
    if "# Convergence score" in ask:
        return json.dumps({"confidence": 95, "reason": "Both agents now back one token bucket per API key."})
    if "json" in ask.lower() and "confidence" in ask.lower():
        return json.dumps({"solution": "Use a token bucket per API key, kept in Redis with a short expiry.",
                           "confidence": 87, "tradeoffs": ["one more service to run"]})
    return (f"Reply {n}. A token bucket per API key absorbs short bursts while holding the long-run rate; "
            "Redis keeps the counters shared between the gateway's instances.")


def test_convergence_score_and_final_confidence_are_named_apart(tmp_path: Path) -> None:
    srv = make_server(reply=_judge_scores_95_and_answers_87)
    try:
        r = cli("run", "Design a rate limiter for a public API", "--base-url", srv.base_url, "--headless",
                "--termination", "convergence", "-r", "3", "-a", "kiss,security", "--state-dir", "D")
    finally:
        srv.stop()
    assert r.returncode == 0, r.stderr
    assert "≈ convergence after round 1: convergence score 95 (how far the agents agree)" in r.stderr
    assert "✓ converged after round 1 (convergence score 95 ≥ 90): the judge synthesizes" in r.stderr
    assert "★ synthesis: confidence 87" in r.stderr
    explained = ("Confidence: 87 (the judge's confidence in this final answer; the convergence score, how far the "
                 "agents agreed, was 95 after round 1)")
    assert explained in r.stdout.splitlines()
    state_id = only_debate(tmp_path / "D").name
    assert explained in cli("show", state_id, "--state-dir", "D").stdout.splitlines()
    report = cli("report", state_id, "--state-dir", "D").stdout
    assert "**Convergence score after round 1:** 95 — Both agents" in report
    assert "**Confidence:** 87/100" in report and "the convergence scores above rate how far" in report

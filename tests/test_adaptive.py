"""The `adaptive` protocol through `moot bench` and `moot run`, on the loopback model that works out
arithmetic right with a set probability: it stops as soon as its first answers agree, debates
(anonymized) only when they disagree, says why at every step, and its rows are its saved debates."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from moot.core.bench.results import read_row
from moot.core.models.config import AnswerFormat
from moot.core.protocols.adaptive import leader_posterior
from moot.core.storage.state_dir import StateDir
from tests.conftest import ROOT, cli
from tests.loopback import LoopbackServer, arithmetic_reply

NUMBER = AnswerFormat(kind="number")


def _bench(srv: LoopbackServer, sd: Path, out: Path, *extra: str, questions: int = 12) -> dict[str, Any]:
    _bench_cli(srv, sd, out, *extra, questions=questions)
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def _bench_cli(srv: LoopbackServer, sd: Path, out: Path, *extra: str, questions: int = 12) -> Any:
    r = cli("bench", f"arithmetic:{questions}:terms=3", "--protocols", "single,vote,adaptive", "--provider", "openai",
            "--base-url", srv.base_url, "--model", "loop", "--headless", "--state-dir", str(sd), "-o", str(out), *extra)
    assert r.returncode == 0, r.stderr
    return r


def test_the_stopping_rule_settles_on_agreement_and_not_on_a_split() -> None:
    assert leader_posterior({"17": 2}, "17") >= 0.9  # two agreeing answers settle it
    assert leader_posterior({"17": 3, "19": 1}, "17") < 0.9  # three against one does not
    assert leader_posterior({"17": 5, "19": 1}, "17") >= 0.9
    assert leader_posterior({"17": 1, "19": 1}, "17") < 0.6
    assert leader_posterior({}, None) == 0.0
    assert leader_posterior({"17": 3, "19": 1}, "17") == leader_posterior({"19": 1, "17": 3}, "17")  # reproducible


def test_adaptive_spends_calls_only_where_the_first_answers_disagree(tmp_path: Path) -> None:
    sd = tmp_path / "debates"
    with LoopbackServer(arithmetic_reply(0.6)) as srv:
        res = _bench_cli(srv, sd, tmp_path / "r.json")
        doc = json.loads((tmp_path / "r.json").read_text())
        assert srv.calls == sum(r["calls"] for r in doc["results"])
        assert "adaptive draws at most 4" in doc["vote_samples_note"] and doc["vote_samples"] == 4
        rows = [r for r in doc["results"] if r["protocol"] == "adaptive"]
        assert len(rows) == 12
        agreed, split = [], []
        folders = StateDir(sd)
        for row in rows:
            folder = folders.open(row["debate_id"])
            state = folder.load()
            assert state.status == "completed" and state.protocol == "adaptive"
            assert read_row(row["id"], row["expected"], NUMBER, folder, state).model_dump(mode="json") == row
            decisions = state.adaptive
            assert decisions and decisions[-1].decision == "stop"
            assert all(d.decision != "stop" for d in decisions[:-1])
            assert [d.round for d in decisions] == list(range(1, len(decisions) + 1))
            # every call is some step's, and the steps' costs add up to the debate's
            assert sum(d.calls for d in decisions) == row["calls"] == state.totals.calls
            assert sum(d.tokens for d in decisions) == state.totals.prompt_tokens + state.totals.completion_tokens
            # its accuracy is what its saved debate says: the majority of the latest answers
            assert state.final_solution is not None and state.final_solution.tally is not None
            assert state.final_solution.tally.winner == row["answer"] == decisions[-1].leader
            assert row["correct"] == (row["answer"] == row["expected"])
            (agreed if decisions[0].decision == "stop" else split).append(row["calls"])
            if decisions[0].decision == "stop":
                assert decisions[0].posterior >= 0.9 and len(decisions[0].counts) == 1
        assert agreed and split, "the loopback's answers should sometimes agree and sometimes not"
        assert set(agreed) == {2}  # one draw of two agreeing answers, and nothing more
        assert min(split) > max(agreed)
        stats = doc["protocols"]["adaptive"]
        assert stats["correct"] == sum(r["correct"] for r in rows) and stats["calls"] == sum(r["calls"] for r in rows)
        # the table says how far the calls per question vary: the fewest (agreement) and the most
        assert (stats["calls_min"], stats["calls_max"]) == (2, max(split))
        line = next(ln for ln in res.stdout.splitlines() if ln.startswith("adaptive "))
        assert f"(2–{max(split)})" in line

        # the same seeds give the same results, in a fresh state folder
        again = _bench(srv, tmp_path / "again", tmp_path / "r2.json")
        keep = ("id", "protocol", "answer", "correct", "calls", "agent_answers", "prompt_tokens")
        assert ([{k: r[k] for k in keep} for r in again["results"]]
                == [{k: r[k] for k in keep} for r in doc["results"]])


def test_a_debate_reads_the_distinct_answers_anonymized_and_shows_its_decisions(tmp_path: Path) -> None:
    sd = tmp_path / "debates"
    with LoopbackServer(arithmetic_reply(0.4)) as srv:
        doc = _bench(srv, sd, tmp_path / "r.json", questions=6)
        debated = [r for r in doc["results"] if r["protocol"] == "adaptive"
                   and any(d.step == "debate" for d in StateDir(sd).open(r["debate_id"]).load().adaptive)]
        assert debated, "a model right 40% of the time should disagree with itself on some question"
        for row in debated:  # only the agents whose answer differs from a clear leader's answer again
            for d in StateDir(sd).open(row["debate_id"]).load().adaptive:
                if d.decision != "debate":
                    continue
                answered = sum(d.counts.values()) + d.unparsed
                top = d.counts[d.leader] if d.leader is not None else 0
                clear = top > 1 and all(n < top for a, n in d.counts.items() if a != d.leader)
                assert len(d.debaters) == (answered - top if clear else answered)
        state = StateDir(sd).open(debated[0]["debate_id"]).load()
        names = [a.name for a in state.agents]
        first_debate = next(d.round for d in state.adaptive if d.step == "debate")
        views = [v for v in state.round(first_debate).calls if v.phase == "answer"]
        assert views and all(v.task_params.get("anonymous") for v in views)
        for request in srv.requests:  # what the model read in a debate round names no author
            text = request["messages"][-1]["content"]
            if "The other agents' answers in the previous round" in text and "### Answer A" in text:
                assert not any(f"### {n}" in text for n in names)
                break
        else:
            raise AssertionError("no debate request quoted anonymized answers")

        shown = cli("show", state.id, "--state-dir", str(sd))
        assert shown.returncode == 0, shown.stderr
        assert "⚖ draw in round 1" in shown.stdout and f"debate in round {first_debate}" in shown.stdout
        assert "P(leader is the most likely answer)" in shown.stdout
        report = cli("report", state.id, "--state-dir", str(sd))
        assert report.returncode == 0, report.stderr
        assert f"**Adaptive decision after round {first_debate}:** debate" in report.stdout
        assert "_Read anonymized: Answer A = " in report.stdout  # the reader learns who wrote what


def test_the_demo_provider_runs_it_labelled_demo(tmp_path: Path) -> None:
    r = cli("run", "What is 3+4*5? Give the number.", "--protocol", "adaptive", "--provider", "demo", "--headless",
            "--demo-delay", "0", "--state-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "DEMO" in r.stderr and "started: adaptive" in r.stderr and "; no judge" in r.stderr
    assert "⚖ draw in round 1 (2 calls" in r.stderr
    debate_id = StateDir(tmp_path).debates()[0].id
    trace = cli("trace", debate_id, "--state-dir", str(tmp_path))
    assert trace.returncode == 0, trace.stderr
    assert '"adaptive decided"' in trace.stdout and "moot.posterior" in trace.stdout


@pytest.mark.slow
def test_killed_with_sigkill_and_rerun_redoes_nothing_finished(tmp_path: Path) -> None:
    sd = tmp_path / "debates"
    with LoopbackServer(arithmetic_reply(0.5), chunk_delay=0.02, chunk_chars=8) as srv:
        cmd = [sys.executable, "-m", "moot", "bench", "arithmetic:6:terms=3", "--protocols", "adaptive",
               "--provider", "openai", "--base-url", srv.base_url, "--model", "loop", "--headless",
               "--state-dir", str(sd), "--concurrency", "2"]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if sum(f.load().status == "completed" for f in StateDir(sd).debates()) >= 2:
                    break
                time.sleep(0.1)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
        at_kill = {f.id: f.load() for f in StateDir(sd).debates()}
        finished = {i: s.totals.calls for i, s in at_kill.items() if s.status == "completed"}
        assert 2 <= len(finished) < 6, "the run ended before the kill; the server is too fast for this test"
        before = srv.calls
        r = cli(*cmd[3:])
        assert r.returncode == 0, r.stderr
        states = {f.id: f.load() for f in StateDir(sd).debates()}
        assert len(states) == 6 and all(s.status == "completed" for s in states.values())
        for debate_id, calls in finished.items():
            assert states[debate_id].totals.calls == calls
        redone = srv.calls - before
        left = sum(s.totals.calls - (at_kill[i].totals.calls if i in at_kill else 0)
                   for i, s in states.items() if i not in finished)
        assert left <= redone <= left + 4  # at most the calls in flight at the kill (2 debates × a batch of 2)
        for s in states.values():  # one decision per round, none repeated by the rerun
            assert [d.round for d in s.adaptive] == list(range(1, len(s.adaptive) + 1))

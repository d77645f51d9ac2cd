"""`single`, `vote` and `council`: the baselines and the council pattern, through `moot run`, on
the demo provider and on the openai provider against the loopback server; resumed after a
kill; shown by `moot show`, `moot report` and `moot context`."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest

from moot.core.protocols.council import parse_ranking
from moot.core.storage.folder import DebateFolder
from moot.core.storage.state_dir import StateDir
from tests.conftest import cli
from tests.loopback import LoopbackServer, arithmetic_reply
from tests.test_resume import cli_env, spawn, start_loopback, wait_for_events

PROBLEM = "Design a rate limiter for a public API"
QUESTION = ("What is the result of 3+4*5+6-7*2? Give the final answer as a single number on the last line, "
            "in the form `Answer: <number>`.")


def _only(sd: Path) -> DebateFolder:
    (folder,) = StateDir(sd).debates()
    return folder


@pytest.mark.parametrize("protocol", ["single", "vote", "council"])
def test_runs_on_demo_and_shows_everywhere(tmp_path: Path, protocol: str) -> None:
    sd = tmp_path / "d"
    r = cli("run", PROBLEM, "--headless", "--protocol", protocol, "--provider", "demo", "--state-dir", str(sd),
            "-a", "architect,kiss,security")
    assert r.returncode == 0, r.stderr
    folder = _only(sd)
    state = folder.load()
    agents = {"single": ["architect"], "vote": ["architect", "kiss", "security"],
              "council": ["architect", "kiss", "security"]}[protocol]
    assert [a.id for a in state.agents] == agents and state.protocol == protocol
    answers = [c for c in state.all_contributions() if c.type == "answer"]
    assert [c.agent_id for c in answers] == agents
    sol = state.final_solution
    assert sol is not None and sol.tally is not None
    show = cli("show", folder.id, "--state-dir", str(sd)).stdout
    report = cli("report", folder.id, "--state-dir", str(sd)).stdout
    assert f"{protocol} · completed" in show and "### Answer: architect" in report
    if protocol == "council":
        assert sum(c.type == "ranking" for c in state.all_contributions()) == 3
        assert sol.synthesized_by == "judge" and sol.tally.kind == "council"
        assert "round 1: 3 answers, 3 rankings" in show and "mean ranks (1 = best)" in report
        assert "_Anonymized as: Response A = " in report
        ctx = cli("context", folder.id, "--round", "1", "--agent", "kiss", "--phase", "rank", "--state-dir", str(sd))
        assert ctx.returncode == 0 and "### Response A" in ctx.stdout and "### Response B" in ctx.stdout
        synth = cli("context", folder.id, "--round", "1", "--agent", "judge", "--phase", "synthesis",
                    "--state-dir", str(sd)).stdout
        assert "Aggregate ranking (mean position" in synth
    else:
        assert sol.synthesized_by == ("architect" if protocol == "single" else "vote")
        assert state.totals.calls == len(agents)  # no judge call
        assert "no judge" in r.stderr and "★ final answer" in r.stderr
        ctx = cli("context", folder.id, "--round", "1", "--agent", agents[-1], "--state-dir", str(sd))
        assert ctx.returncode == 0 and "Answer the problem as the" in ctx.stdout
    if protocol == "vote":
        assert "Vote over 3 free-form answers" in sol.description


def test_vote_samples_cycle_the_agents_with_their_own_seeds(tmp_path: Path) -> None:
    with LoopbackServer(arithmetic_reply(0.5)) as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text('[[agents]]\nid = "a"\nseed = 7\n[[agents]]\nid = "b"\nseed = 8\n'
                       '[debate]\nanswer = { kind = "number" }\n')
        r = cli("run", QUESTION, "--headless", "--protocol", "vote", "--samples", "5", "-c", str(cfg),
                "--provider", "openai", "--base-url", srv.base_url, "--state-dir", str(tmp_path / "d"))
        assert r.returncode == 0, r.stderr
        state = _only(tmp_path / "d").load()
        assert [a.id for a in state.agents] == ["a", "b", "a-s2", "b-s2", "a-s3"]
        assert sorted(b["seed"] for b in srv.requests) == [7, 8, 1007, 1008, 2007]
        # question prompts, not the design debate's: the system prompt is the solver's
        assert all("Role: Solver" in b["messages"][0]["content"] for b in srv.requests)
        sol = state.final_solution
        assert sol is not None and sol.tally is not None and len(sol.tally.answers) == 5
        assert sol.description.startswith(f"**Majority answer: {sol.tally.winner}**")


def test_council_rankings_are_anonymized_rotated_and_aggregated(tmp_path: Path) -> None:
    with LoopbackServer(arithmetic_reply(0.5)) as srv:
        cfg = tmp_path / "c.toml"
        cfg.write_text('[debate]\nanswer = { kind = "number" }\n')
        r = cli("run", QUESTION, "--headless", "--protocol", "council", "-a", "generalist,kiss,testing", "-c", str(cfg),
                "--provider", "openai", "--base-url", srv.base_url, "--state-dir", str(tmp_path / "d"))
        assert r.returncode == 0, r.stderr
        state = _only(tmp_path / "d").load()
        ranks = [b for b in srv.requests if "rank the responses from best" in b["messages"][-1]["content"]]
        assert len(ranks) == 3
        for body in ranks:
            task = body["messages"][-1]["content"]
            assert "### Response A" in task and "### Response B" in task and "### Response C" not in task
            assert "Kiss" not in task and "Testing" not in task  # anonymized: no author names
        views = [v for v in state.round(1).calls if v.phase == "rank"]
        firsts = [v.task_contribution_ids[0] for v in views]
        assert len(set(firsts)) == 3  # each ranker sees the others in its own rotation
        sol = state.final_solution
        assert sol is not None and sol.tally is not None and sol.tally.rankings_parsed == 3
        assert sorted(sol.tally.ranks) == ["generalist", "kiss", "testing"]
        assert all(1.0 <= x <= 2.0 for x in sol.tally.ranks.values())
        judge = [b for b in srv.requests if "Aggregate ranking" in b["messages"][-1]["content"]]
        assert len(judge) == 1 and "Role: Chairman" in judge[0]["messages"][0]["content"]


def test_parse_ranking() -> None:
    assert parse_ranking("A is wrong.\n\nFINAL RANKING:\n1. Response C\n2. Response A\n3. Response B", 3) == [2, 0, 1]
    assert parse_ranking("1. **Response B** is best\n2. Response A", 2) == [1, 0]
    assert parse_ranking("Response B mentions Response A.\nFINAL RANKING: Response A, Response B", 2) == [0, 1]
    assert parse_ranking("They all look fine to me.", 3) is None
    assert parse_ranking("FINAL RANKING:\n1. Response Z", 2) is None


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["vote", "council"])
def test_killed_and_resumed_on_the_openai_provider(tmp_path: Path, protocol: str) -> None:
    proc, url = start_loopback("--delay", "0.3", "--chunk-delay", "0.01", "--arithmetic", "0.6")
    try:
        cfg = tmp_path / "c.toml"
        cfg.write_text('[debate]\nanswer = { kind = "number" }\nmax_concurrency = 1\n')
        sd = tmp_path / "D"
        p = spawn("run", QUESTION, "--headless", "--protocol", protocol, "-a", "generalist,kiss,testing",
                  "--samples", "4", "-c", str(cfg), "--provider", "openai", "--base-url", url, "--state-dir", str(sd),
                  log=tmp_path / "run", env=cli_env())
        folder = wait_for_events(sd, 4, timeout=60)
        end = time.monotonic() + 60  # one call at a time: kill after the first answer, mid-debate
        while b"contribution_added" not in (folder / "events.jsonl").read_bytes() and time.monotonic() < end:
            time.sleep(0.02)
        time.sleep(random.uniform(0.0, 0.2))
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        before = [c.id for c in DebateFolder(folder).load().all_contributions()]
        r = cli("resume", folder.name, "--headless", "--base-url", url, "--state-dir", str(sd))
        assert r.returncode == 0, r.stderr
        state = DebateFolder(folder).load()
        assert state.status == "completed" and state.final_solution is not None
        got = state.all_contributions()
        assert set(before) <= {c.id for c in got}  # nothing recorded was lost or redone
        slots = [(c.agent_id, c.type) for c in got]
        assert len(slots) == len(set(slots))
        n = 4 if protocol == "vote" else 3
        assert sum(c.type == "answer" for c in got) == n
        if protocol == "council":
            assert sum(c.type == "ranking" for c in got) == 3
    finally:
        proc.terminate()
        proc.wait(timeout=10)

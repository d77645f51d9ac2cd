"""`--topology ring | star` (`debate.topology`): whose previous answers each agent reads in a
simultaneous debate and in an adaptive one. The views, `moot context` and the cost follow it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from moot.core.protocols.topology import reads
from moot.core.storage.state_dir import StateDir
from tests.conftest import cli
from tests.loopback import LoopbackServer, arithmetic_reply

FIVE = "generalist,generalist,generalist,generalist,generalist"


def _bench(srv: LoopbackServer, tmp: Path, name: str, *extra: str) -> tuple[Path, dict[str, Any]]:
    sd = tmp / name
    r = cli("bench", "arithmetic:3:terms=3", "-a", FIVE, "--provider", "openai", "--base-url", srv.base_url,
            "--model", "loop", "--headless", "--state-dir", str(sd), "-o", str(tmp / f"{name}.json"), *extra)
    assert r.returncode == 0, r.stderr
    return sd, json.loads((tmp / f"{name}.json").read_text())


def test_who_reads_whom() -> None:
    order = ["a", "b", "c", "d", "e"]
    assert reads(order, "a", "ring") == {"e", "b"} and reads(order, "c", "ring") == {"b", "d"}
    assert reads(order, "a", "star") == {"b", "c", "d", "e"} and reads(order, "d", "star") == {"a"}
    assert reads(order, "c", "full") == {"a", "b", "d", "e"}


def test_simultaneous_views_context_and_cost_follow_the_topology(tmp_path: Path) -> None:
    with LoopbackServer(arithmetic_reply(0.5)) as srv:
        runs = {t: _bench(srv, tmp_path, t, "--protocols", "simultaneous", "--topology", t)
                for t in ("full", "ring", "star")}
    for topology, (sd, doc) in runs.items():
        for row in doc["results"]:
            state = StateDir(sd).open(row["debate_id"]).load()
            order = [a.id for a in state.agents]
            authors = {c.id: c.agent_id for c in state.round(1).contributions}
            views = [v for v in state.round(2).calls if v.phase == "answer"]
            assert len(views) == 5
            for v in views:  # round 2 quotes its own answer and those of the agents it reads, no one else's
                assert {authors[i] for i in v.task_contribution_ids} == {v.agent_id} | reads(order, v.agent_id,
                                                                                             topology)
            if topology == "ring":
                third = state.agents[2]
                shown = cli("context", state.id, "--round", "2", "--agent", third.id, "--phase", "answer",
                            "--state-dir", str(sd))
                assert shown.returncode == 0, shown.stderr
                names = {a.id: a.name for a in state.agents}
                for other in order:
                    if other == third.id:
                        continue
                    read = other in reads(order, third.id, "ring")
                    assert (f"### {names[other]} (" in shown.stdout) == read, other
    tokens = {t: sum(r["prompt_tokens"] for r in doc["results"]) for t, (_, doc) in runs.items()}
    assert tokens["ring"] < tokens["full"] and tokens["star"] < tokens["full"]  # fewer answers read, smaller views


def test_adaptive_debaters_read_only_their_links(tmp_path: Path) -> None:
    with LoopbackServer(arithmetic_reply(0.35)) as srv:
        sd, doc = _bench(srv, tmp_path, "star", "--protocols", "adaptive", "--topology", "star")
    checked = 0
    for row in doc["results"]:
        state = StateDir(sd).open(row["debate_id"]).load()
        authors = {c.id: c.agent_id for rnd in state.rounds for c in rnd.contributions}
        for d in state.adaptive:
            if d.decision != "debate":
                continue
            order = [a for a in (x.id for x in state.agents) if any(c.agent_id == a for rnd in state.rounds
                                                                 if rnd.number <= d.round for c in rnd.contributions)]
            for v in state.round(d.round + 1).calls:
                assert {authors[i] for i in v.task_contribution_ids} <= reads(order, v.agent_id, "star")
                checked += 1
    assert checked, "a model right a third of the time should make some question debated"


def test_rounds_critiques_follow_the_topology(tmp_path: Path) -> None:
    """In `rounds` an agent reads the others through the proposals it critiques: on a ring it
    critiques only its two neighbours', its requests quote no one else's proposal, `moot context`
    shows those requests byte for byte, and the debate reads (and costs) less than on a full panel."""
    with LoopbackServer(arithmetic_reply(0.5)) as srv:
        sd, ring = _bench(srv, tmp_path, "ring", "--protocols", "rounds", "-r", "1", "--limit", "1",
                          "--topology", "ring")
        received = {json.dumps(b["messages"], ensure_ascii=False) for b in srv.requests}
        _, full = _bench(srv, tmp_path, "full", "--protocols", "rounds", "-r", "1", "--limit", "1")
    state = StateDir(sd).open(ring["results"][0]["debate_id"]).load()
    order = [a.id for a in state.agents]
    names = {a.id: a.name for a in state.agents}
    critiques = [c for c in state.round(1).contributions if c.type == "critique"]
    assert sorted((c.agent_id, c.target_agent_id) for c in critiques) == sorted(
        (a, b) for a in order for b in reads(order, a, "ring"))
    third = order[2]
    shown = cli("context", state.id, "--round", "1", "--agent", third, "--phase", "critique", "--json",
                "--state-dir", str(sd))
    assert shown.returncode == 0, shown.stderr
    calls = json.loads(shown.stdout)
    quoted: set[str] = set()
    for call in calls:
        sent = json.dumps(call["messages"], ensure_ascii=False)
        assert sent in received  # byte for byte what was sent
        quoted |= {a for a in order if a != third and f"({names[a]})" in sent}
    assert len(calls) == 2 and quoted == reads(order, third, "ring")  # its neighbours' proposals, no one else's
    assert ring["results"][0]["calls"] < full["results"][0]["calls"]
    assert ring["results"][0]["prompt_tokens"] < full["results"][0]["prompt_tokens"]

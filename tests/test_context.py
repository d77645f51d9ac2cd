"""Managed context: budgets, perspective, summaries, provenance, and `moot context`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moot.core import tokens
from moot.core.context.index import DebateIndex
from moot.core.context.inspect import calls_for
from moot.core.context.view import ViewBuilder, render_messages
from moot.core.models.state import Contribution, DebateState, ViewRecord
from tests.conftest import Faults, make_server, moot, read_jsonl, run_debate

LONG = 2500


def _long_reply(body: dict, n: int) -> str:
    last = body["messages"][-1]["content"]
    if "confidence" in last and "JSON" in last:
        return json.dumps({"solution": "S " * 200, "confidence": 70})
    if last.startswith("# Summarize"):  # a summarization request: answer short, as a real model would
        return f"- summary {n}: positions kept, numbers kept, open questions kept."
    base = f"## Position\nAnswer {n}. We will use 3 replicas and p99 < 80 ms. Is 24 h TTL right?\n\n"
    return (base + "Detail sentence for the debate. " * 200)[:LONG]


def _request_tokens(body: dict) -> int:
    return tokens.count_messages(body["messages"], body["model"])


def test_six_rounds_stay_in_budget_and_context_matches_requests(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from moot.cli import main

    config = {"agents": [{"id": "architect", "role": "architect"}, {"id": "performance", "role": "performance"},
                         {"id": "kiss", "role": "kiss", "context": {"max_context_tokens": 2500}}]}
    srv = make_server(reply=_long_reply)
    try:
        state, folder = asyncio.run(run_debate(tmp_path, config=config, rounds=6, provider="openai",
                                               base_url=srv.base_url))
        bodies = srv.requests
    finally:
        srv.stop()
    assert state.status == "completed"
    for body in bodies:
        assert _request_tokens(body) <= 7000
        assert _request_tokens(body) + body["max_tokens"] <= 8000
    small = [b for b in bodies if b["messages"][0]["content"].startswith(state.prompts["kiss/system"])]
    assert small and all(_request_tokens(b) + b["max_tokens"] <= 2500 for b in small)
    for agent in ("architect", "performance", "kiss"):
        assert any(agent in r.summaries for r in state.rounds), agent
    # Every call that `moot context --json` shows is, byte for byte, a request the server got.
    received = {json.dumps(b["messages"], ensure_ascii=False) for b in bodies}
    shown = 0
    for r in range(1, 7):
        for agent in ("architect", "performance", "kiss", "judge"):
            code = main(["context", state.id, "--round", str(r), "--agent", agent, "--json",
                         "--state-dir", str(folder.path.parent)])
            out = capsys.readouterr()
            assert code == 0, out.err
            for call in json.loads(out.out):
                assert set(call) >= {"phase", "target_agent_id", "messages", "tokens"}
                assert json.dumps(call["messages"], ensure_ascii=False) in received
                assert call["tokens"]["total"] == tokens.count_messages(call["messages"], call["model"])
                shown += 1
    assert shown == len(bodies)


def test_failing_summary_model_falls_back_to_rule_based(tmp_path: Path) -> None:
    config = {"debate": {"summarization": {"threshold": 1000}},
              "agents": [{"id": "architect", "role": "architect", "summarization": {"model": "broken-model"}},
                         {"id": "kiss", "role": "kiss"}]}
    srv = make_server(reply=_long_reply, faults=Faults(fail_models=frozenset({"broken-model"})))
    try:
        state, folder = asyncio.run(run_debate(tmp_path, config=config, rounds=3, provider="openai",
                                               base_url=srv.base_url))
    finally:
        srv.stop()
    assert state.status == "completed"
    arch = [r.summaries["architect"] for r in state.rounds if "architect" in r.summaries]
    assert arch and all(s.metadata.fallback_reason and "500" in s.metadata.fallback_reason for s in arch)
    assert all(s.summary and "500" not in s.summary and "error" not in s.summary.lower() for s in arch)
    kiss = [r.summaries["kiss"] for r in state.rounds if "kiss" in r.summaries]
    assert kiss and all(s.metadata.fallback_reason is None for s in kiss)
    warnings = [e for e in read_jsonl(folder.events_path) if e["type"] == "warning"]
    assert any("architect" in w["message"] and "rule-based" in w["message"] for w in warnings)


def test_summarization_input_is_only_the_agents_perspective(tmp_path: Path) -> None:
    config = {"debate": {"summarization": {"threshold": 500}}}
    state, _ = asyncio.run(run_debate(tmp_path, config=config, rounds=3))
    index = DebateIndex(state)
    checked = 0
    for rnd in state.rounds:
        for call in rnd.calls:
            if call.phase != "summarize" or call.agent_id == "judge":
                continue
            allowed = {c.id for c in index.perspective_items(call.agent_id)}
            assert set(call.task_contribution_ids) <= allowed
            for cid in call.task_contribution_ids:
                c = index.contributions[cid]
                assert c.agent_id == call.agent_id or c.target_agent_id == call.agent_id
            checked += 1
    assert checked >= 4


def test_perspective_includes_critiques_received(tmp_path: Path) -> None:
    state, _ = asyncio.run(run_debate(tmp_path, rounds=1))
    index = DebateIndex(state)
    items = index.perspective_items("architect")
    kinds = sorted({(c.type, c.agent_id == "architect") for c in items})
    assert kinds == [("critique", False), ("proposal", True), ("refinement", True)]
    assert all(c.target_agent_id == "architect" for c in items if c.type == "critique")


def test_judge_summary_reaches_synthesis_request(tmp_path: Path) -> None:
    config = {"judge": {"id": "judge", "role": "generalist", "summarization": {"threshold": 1000}}}
    srv = make_server(reply=_long_reply)
    try:
        state, _ = asyncio.run(run_debate(tmp_path, config=config, rounds=1, provider="openai",
                                          base_url=srv.base_url))
        bodies = srv.requests
    finally:
        srv.stop()
    assert state.judge_summary is not None and state.judge_summary.trigger == "judge"
    synthesis = [b for b in bodies if "Final synthesis" in b["messages"][-1]["content"]]
    assert len(synthesis) == 1
    assert state.judge_summary.summary in synthesis[0]["messages"][-1]["content"]


def _summary_input_per_round(tmp_path: Path, strategy: str) -> list[tuple[int, bool]]:
    """The architect's summarization input tokens per round from round 2, and whether that round's
    summary also consolidated its oldest blocks (one more request, for the blocks alone)."""
    config = {"debate": {"summarization": {"threshold": 500, "strategy": strategy, "method": "llm"}}}
    state, _ = asyncio.run(run_debate(tmp_path / strategy, config=config, rounds=8, roles=["architect", "kiss"]))
    out = []
    for rnd in state.rounds[1:]:
        s = rnd.summaries.get("architect")
        merged = s is not None and any(b.consolidated and b.made_at == s.round for b in s.blocks or [])
        out.append((s.metadata.input_tokens if s else 0, merged))
    return out


def test_rolling_keeps_summarization_input_flat_fresh_grows(tmp_path: Path) -> None:
    fresh = [n for n, _ in _summary_input_per_round(tmp_path, "fresh")]
    rolls = _summary_input_per_round(tmp_path, "rolling")
    rolling = [n for n, _ in rolls]
    assert all(fresh) and all(rolling)
    assert fresh[-1] > 2.5 * fresh[0]  # the whole perspective, again and again
    # Bounded: only what aged out, beside the summary's blocks so far, which their tier bounds (twice
    # a summary's cap, 1,000 tokens by default); a round that consolidates the oldest blocks makes
    # one more request, of at most those blocks.
    tier = 2 * 1000
    plain = [n for n, merged in rolls if not merged]
    assert plain and max(plain) <= min(plain) + tier
    assert all(n <= 2 * (min(plain) + tier) for n, merged in rolls if merged)
    assert sum(rolling) < sum(fresh) and max(rolling) < fresh[-1]


def test_chunk_and_reduce_with_a_tiny_budget(tmp_path: Path) -> None:
    config = {"debate": {"summarization": {"threshold": 500, "max_length": 600, "max_summary_tokens": 150,
                                           "strategy": "fresh"},  # re-reading all: chunked once it grows
                         "context": {"max_context_tokens": 1700, "reserve_output_tokens": 200}},
              "agents": [{"id": "architect", "role": "architect", "system_prompt_path": str(tmp_path / "sys.md")}]}
    (tmp_path / "sys.md").write_text("You are a terse architect.")
    srv = make_server(reply=lambda b, n: _long_reply(b, n)[:1500])
    try:
        state, _ = asyncio.run(run_debate(tmp_path, config=config, rounds=4, provider="openai",
                                          base_url=srv.base_url, roles=None))
        bodies = srv.requests
    finally:
        srv.stop()
    assert state.status == "completed"
    assert all(_request_tokens(b) <= 1500 for b in bodies)
    chunked = [r.summaries["architect"] for r in state.rounds if "architect" in r.summaries]
    assert any(s.metadata.chunks > 1 for s in chunked)
    for s in chunked:
        assert len(s.summary) <= 600 and tokens.count_text(s.summary) <= 150


def test_manual_summary_request_below_threshold(tmp_path: Path) -> None:
    config = {"debate": {"summarization": {"threshold": 10**9, "trigger_ratio": 1.0}}}

    def arm(session) -> None:  # noqa: ANN001
        orch = session.orchestrator

        def on_event(event) -> None:  # noqa: ANN001
            if event.type == "round_started" and event.round == 2:
                orch.request_summary("Architect")  # by display name

        session.bus.listen(on_event)

    state, folder = asyncio.run(run_debate(tmp_path, config=config, rounds=2, before_run=arm))
    manual = [s for r in state.rounds for s in r.summaries.values() if s.trigger == "manual"]
    assert len(manual) == 1 and manual[0].agent_id == "architect"
    on_disk = [e for e in read_jsonl(folder.events_path) if e["type"] == "summary_added"]
    assert on_disk[0]["summary"]["trigger"] == "manual"
    assert not any(s.trigger in ("chars", "tokens") for r in state.rounds for s in r.summaries.values())


def test_thirty_rounds_five_agents_stay_within_budget(tmp_path: Path) -> None:
    config = {"debate": {"summarization": {"method": "rule-based"}}}
    state, folder = asyncio.run(run_debate(tmp_path, config=config, rounds=30,
                                           roles=["architect", "performance", "security", "testing", "kiss"]))
    assert state.status == "completed"
    assert state.archived_rounds > 0  # 900 contributions: the state let go of the oldest rounds
    calls = [c for r in folder.load(bounded=False).rounds for c in r.calls]
    assert len(calls) >= 5 * 6 + 29 * 5 * 5  # from round 2 the refinements are carried as proposals
    assert max(c.tokens.total for c in calls) <= 7000
    assert all(c.tokens.total <= c.budget for c in calls)


def test_context_cli_readable_and_errors(tmp_path: Path) -> None:
    state, folder = asyncio.run(run_debate(tmp_path, rounds=1))
    sd = str(folder.path.parent)
    r = moot("context", state.id, "--round", "1", "--agent", "architect", "--phase", "proposal", "--state-dir", sd)
    assert r.returncode == 0 and "[system] system ·" in r.stdout and "tokens" in r.stdout
    r = moot("context", state.id, "--round", "9", "--agent", "architect", "--state-dir", sd)
    assert r.returncode == 2 and "rounds 1–1" in r.stderr
    r = moot("context", state.id, "--round", "1", "--agent", "wizard", "--state-dir", sd)
    assert r.returncode == 2 and "no agent" in r.stderr


# ----------------------------------------------------------------- property test

def _index_with(contents: list[str]) -> DebateIndex:
    state = DebateState(id="p", problem="P", prompts={"a/system": "You are A.", "a/propose": "Propose for {{problem}}."})
    index = DebateIndex(state)
    index.names["a"] = ("A", "architect")
    for i, text in enumerate(contents):
        index.add_contribution(Contribution(id=f"c{i}", agent_id="a", role="architect", type="proposal",
                                            round=i + 1, content=text))
    return index


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    contents=st.lists(st.text(min_size=0, max_size=4000), min_size=0, max_size=12),
    budget=st.integers(min_value=120, max_value=6000),
)
def test_view_builder_never_exceeds_budget(contents: list[str], budget: int) -> None:
    index = _index_with(contents)
    record = ViewRecord(call_id="x", agent_id="a", round=99, phase="proposal", model="gpt-4",
                        system_key="a/system", task_key="a/propose", task_params={"problem": "P"})
    messages = ViewBuilder(index).build(record, index.perspective_items("a"), budget)
    assert tokens.count_messages(messages, "gpt-4") <= budget
    assert messages == render_messages(record, index)  # the record rebuilds the exact view
    assert set(record.contribution_ids) | set(record.dropped_ids) == {f"c{i}" for i in range(len(contents))}
    kept = [int(i[1:]) for i in record.contribution_ids]
    assert kept == sorted(kept)
    assert not kept or not record.dropped_ids or min(kept) > max(int(i[1:]) for i in record.dropped_ids)


def test_calls_for_resolves_names(tmp_path: Path) -> None:
    state, _ = asyncio.run(run_debate(tmp_path, rounds=1))
    assert calls_for(state, 1, "Kiss") and calls_for(state, 1, "judge")


def test_context_for_a_judge_with_its_own_id(tmp_path: Path) -> None:
    """One resolver: the judge by its own id, its name or the word `judge`; a typo gets a suggestion."""
    config = {"judge": {"id": "j-main", "name": "Chief", "role": "generalist"}}
    state, folder = asyncio.run(run_debate(tmp_path, config=config, rounds=1))
    assert state.judge is not None and state.judge.id == "j-main"
    sd = str(folder.path.parent)
    for name in ("j-main", "Chief", "judge", "J-MAIN"):
        r = moot("context", state.id, "--round", "1", "--agent", name, "--phase", "synthesis", "--json",
                 "--state-dir", sd)
        assert r.returncode == 0, (name, r.stderr)
        calls = json.loads(r.stdout)
        assert [c["phase"] for c in calls] == ["synthesis"]
    r = moot("context", state.id, "--round", "1", "--agent", "architekt", "--state-dir", sd)
    assert r.returncode == 2 and "did you mean 'architect'" in r.stderr and "j-main" in r.stderr

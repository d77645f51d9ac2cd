"""Regressions found in review: each test names the bug it pins."""

from __future__ import annotations

import asyncio
from pathlib import Path

from moot.core.config import Overrides, build_config, resolve_agent
from moot.core.context.inspect import calls_for
from moot.core.pricing import price_for
from moot.core.storage.folder import DebateFolder
from tests.conftest import read_jsonl, run_debate


def test_auto_and_manual_summary_in_one_round_both_kept(tmp_path: Path) -> None:
    def arm(session) -> None:  # noqa: ANN001
        def on_event(event) -> None:  # noqa: ANN001
            if event.type == "phase_started" and event.round == 2 and event.phase == "critique":
                session.orchestrator.request_summary("architect")

        session.bus.listen(on_event)

    state, folder = asyncio.run(run_debate(tmp_path, config={"debate": {"summarization": {"threshold": 500}}},
                                           rounds=2, before_run=arm))
    saved = folder.load()
    rnd = saved.rounds[1]
    assert rnd.summaries["architect"].trigger == "manual"
    assert [s.trigger for s in rnd.replaced_summaries if s.agent_id == "architect"] == ["chars"]
    calls = calls_for(saved, 2, "architect")  # every call rebuilds, old summary included
    assert calls and all(c["messages"] for c in calls)


def test_event_emitted_from_a_listener_keeps_log_order(tmp_path: Path) -> None:
    def arm(session) -> None:  # noqa: ANN001
        def on_event(event) -> None:  # noqa: ANN001
            if event.type == "phase_completed" and event.phase == "proposal" and event.round == 1:
                session.orchestrator.inject("Keep it under 3 services.")

        session.bus.listen(on_event)

    state, folder = asyncio.run(run_debate(tmp_path, rounds=1, before_run=arm))
    seqs = [e["seq"] for e in read_jsonl(folder.events_path)]
    assert seqs == sorted(seqs) == list(range(1, len(seqs) + 1))
    assert DebateFolder(folder.path).load().notes[0].text == "Keep it under 3 services."


def test_judge_with_its_own_id(tmp_path: Path) -> None:
    state, _ = asyncio.run(run_debate(tmp_path, config={"judge": {"id": "referee", "model": "demo"}}, rounds=1))
    assert state.status == "completed" and state.final_solution is not None
    cfg = build_config({"judge": {"model": "gpt-4o"}}, Overrides())
    assert cfg.judge.id == "judge" and cfg.judge.role == "generalist"


def test_resume_after_last_refinement_makes_no_new_summary(tmp_path: Path) -> None:
    from moot.core.session import SessionOptions, resume_session

    state, folder = asyncio.run(run_debate(tmp_path, config={"debate": {"summarization": {"threshold": 1500}}},
                                           rounds=1))
    lines = folder.events_path.read_text().splitlines(keepends=True)
    last_ref = max(i for i, line in enumerate(lines) if '"refinement"' in line and "contribution_added" in line)
    folder.events_path.write_text("".join(lines[: last_ref + 1]))
    folder.state_path.unlink()
    session = resume_session(folder.id, SessionOptions(state_dir=folder.path.parent, demo_delay=0))
    resumed = asyncio.run(session.run())
    assert resumed.status == "completed"
    assert not any(r.summaries for r in resumed.rounds)


def test_every_call_counts_in_the_totals(tmp_path: Path) -> None:
    cfg = {"debate": {"clarify": True, "termination": "convergence", "convergence_threshold": 100,
                      "summarization": {"threshold": 500}}}
    state, _ = asyncio.run(run_debate(tmp_path, config=cfg, rounds=2))
    prompt = sum(c.metadata.prompt_tokens for c in state.all_contributions())
    prompt += sum(s.metadata.prompt_tokens for r in state.rounds for s in [*r.summaries.values(), *r.replaced_summaries])
    prompt += state.judge_summary.metadata.prompt_tokens if state.judge_summary else 0
    prompt += state.final_solution.metadata.prompt_tokens
    calls = [c for r in state.rounds for c in r.calls if c.phase in ("clarify", "score")]
    assert calls and state.totals.prompt_tokens > prompt  # clarify and score calls are counted too


def test_agent_context_override_checked_after_merge() -> None:
    cfg = build_config({"debate": {"context": {"max_context_tokens": 32000, "reserve_output_tokens": 200}},
                        "agents": [{"id": "a", "role": "kiss", "context": {"reserve_output_tokens": 9000}}]},
                       Overrides())
    assert resolve_agent(cfg.agents[0], cfg, "demo").context.input_budget == 23000


def test_price_override_applies_to_dated_model_names() -> None:
    assert price_for("gpt-4o-mini-2024-07-18", {"gpt-4o-mini": (9.0, 9.0)}) == (9.0, 9.0)


def test_key_in_problem_or_reply_is_never_written(tmp_path: Path) -> None:
    from tests.conftest import make_server, moot

    key = "sk-audit-SECRET-0123456789abcdef"
    srv = make_server(reply=lambda body, n: f"Use the key {key} here." if n == 1 else f"ok {n}")
    try:
        r = moot("run", f"Our key is {key}; design a cache", "--headless", "-r", "1", "-a", "kiss",
                 "--provider", "openai", "--base-url", srv.base_url, "--state-dir", str(tmp_path / "d"),
                 env={"OPENAI_API_KEY": key})
        bodies = srv.requests
    finally:
        srv.stop()
    assert r.returncode == 0, r.stderr
    assert key not in r.stdout + r.stderr
    assert not any(key in str(b["messages"]) for b in bodies)  # not even sent on
    for f in (tmp_path / "d").rglob("*"):
        if f.is_file():
            assert key not in f.read_text(errors="ignore"), f


def test_manual_request_after_last_call_still_summarizes(tmp_path: Path) -> None:
    def arm(session) -> None:  # noqa: ANN001
        def on_event(event) -> None:  # noqa: ANN001
            if event.type == "phase_completed" and event.phase == "refinement" and event.round == 1:
                session.orchestrator.request_summary("kiss")

        session.bus.listen(on_event)

    state, _ = asyncio.run(run_debate(tmp_path, config={"debate": {"summarization": {"threshold": 10**9}}},
                                      rounds=1, before_run=arm))
    manual = [s for r in state.rounds for s in r.summaries.values() if s.trigger == "manual"]
    assert [s.agent_id for s in manual] == ["kiss"]


def test_agent_totals_add_up_to_the_totals(tmp_path: Path) -> None:
    state, _ = asyncio.run(run_debate(tmp_path, config={"debate": {"clarify": True, "termination": "convergence",
                                                                  "convergence_threshold": 100}}, rounds=2))
    assert set(state.agent_totals) == {"architect", "performance", "kiss", "judge"}
    assert sum(t.prompt_tokens for t in state.agent_totals.values()) == state.totals.prompt_tokens
    assert sum(t.completion_tokens for t in state.agent_totals.values()) == state.totals.completion_tokens


def test_context_cli_accepts_clarify_and_score_phases(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from moot.cli import main

    state, folder = asyncio.run(run_debate(tmp_path, config={"debate": {"clarify": True, "termination": "convergence",
                                                                         "convergence_threshold": 100}}, rounds=2))
    sd = str(folder.path.parent)
    assert main(["context", state.id, "--round", "1", "--agent", "kiss", "--phase", "clarify", "--state-dir", sd]) == 0
    assert "═══ kiss clarify" in capsys.readouterr().out
    assert main(["context", state.id, "--round", "1", "--agent", "judge", "--phase", "score", "--state-dir", sd]) == 0
    assert "═══ judge score" in capsys.readouterr().out

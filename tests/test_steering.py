"""Past the anchor: clarifications, early stop on convergence, cost and budget caps, injected notes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from moot.core.models.state import DebateState
from moot.core.pricing import call_cost, price_for
from tests.conftest import cli, make_server, moot, read_jsonl, run_debate


def _reply(confidences: dict[int, int] | None = None):  # noqa: ANN202
    """A server that answers each kind of request the way a model would."""

    def reply(body: dict, n: int) -> str:
        last = body["messages"][-1]["content"]
        if '"questions"' in last:
            return json.dumps({"questions": [{"question": f"What scale is expected? (asked in call {n})"}]})
        if "Convergence" in last or ("confidence" in last and "reason" in last and "solution" not in last):
            rnd = sum(1 for b in seen if "reason" in b)
            seen.append("reason")
            return json.dumps({"confidence": (confidences or {}).get(rnd + 1, 50), "reason": "agents agree"})
        if "confidence" in last and "JSON" in last:
            return json.dumps({"solution": "Final design.", "confidence": 81})
        return f"## Position\nAnswer {n}: use 2 replicas."

    seen: list[str] = []
    return reply


def test_clarifications_scripted_answers_reach_every_prompt(tmp_path: Path) -> None:
    srv = make_server(reply=_reply())
    try:
        proc = moot("run", "Design a queue", "--headless", "--clarify", "-r", "1", "-a", "architect,kiss",
                    "--provider", "openai", "--base-url", srv.base_url, "--state-dir", str(tmp_path / "d"),
                    input_text="ten thousand per second\n\n")
        bodies = srv.requests
    finally:
        srv.stop()
    assert proc.returncode == 0, proc.stderr
    assert "clarifying question" in proc.stderr
    state_path = next((tmp_path / "d").iterdir()) / "state.json"
    state = DebateState.model_validate_json(state_path.read_bytes())
    answers = [c.answer for c in state.clarifications]
    assert sorted(answers) == ["", "ten thousand per second"] and state.clarified is True
    later = [b for b in bodies if '"questions"' not in b["messages"][-1]["content"]]
    assert later and all("ten thousand per second" in b["messages"][-1]["content"] for b in later)
    assert all("(no answer)" in b["messages"][-1]["content"] for b in later)


def test_converging_debate_stops_early(tmp_path: Path) -> None:
    srv = make_server(reply=_reply({1: 60, 2: 93}))
    try:
        state, folder = asyncio.run(run_debate(tmp_path, config={"debate": {"termination": "convergence"}}, rounds=5,
                                               provider="openai", base_url=srv.base_url, roles=["architect", "kiss"]))
    finally:
        srv.stop()
    assert state.status == "completed" and len(state.rounds) == 2
    assert [c.confidence for c in state.convergence] == [60, 93]
    events = read_jsonl(folder.events_path)
    conv = [e for e in events if e["type"] == "converged"]
    assert len(conv) == 1 and conv[0]["round"] == 2 and conv[0]["confidence"] == 93
    assert state.final_solution is not None and state.final_solution.confidence == 81


def test_budget_cap_stops_and_still_synthesizes(tmp_path: Path) -> None:
    srv = make_server(reply=_reply())
    try:
        proc = cli("run", "Design a cache", "--headless", "-r", "5", "--model", "gpt-4o", "--max-cost", "0.01",
                   "--provider", "openai", "--base-url", srv.base_url, "--state-dir", str(tmp_path / "d"))
    finally:
        srv.stop()
    assert proc.returncode == 0, proc.stderr
    state = json.loads((next((tmp_path / "d").iterdir()) / "state.json").read_text())
    assert state["status"] == "stopped_budget"
    assert len(state["rounds"]) < 5
    assert state["final_solution"]["description"] == "Final design."
    assert state["totals"]["cost_usd"] >= 0.01
    assert "budget reached" in proc.stderr


async def test_token_cap_through_library(tmp_path: Path) -> None:
    state, folder = await run_debate(tmp_path, config={"debate": {"max_total_tokens": 6000}}, rounds=3)
    assert state.status == "stopped_budget" and state.final_solution is not None
    assert any(e["type"] == "budget_reached" for e in read_jsonl(folder.events_path))


def test_injected_note_is_verbatim_in_every_later_request(tmp_path: Path) -> None:
    srv = make_server(reply=_reply())
    note = "Assume the budget is 2 engineers for 3 months."
    marker: dict[str, int] = {}

    def arm(session) -> None:  # noqa: ANN001
        def on_event(event) -> None:  # noqa: ANN001
            if event.type == "phase_completed" and event.round == 1 and event.phase == "proposal":
                session.orchestrator.inject(note)
                marker["at"] = len(srv.requests)

        session.bus.listen(on_event)

    try:
        state, _ = asyncio.run(run_debate(tmp_path, config={"debate": {"summarization": {"threshold": 300}}}, rounds=3,
                                          provider="openai", base_url=srv.base_url, roles=["architect", "kiss"],
                                          before_run=arm))
        bodies = srv.requests
    finally:
        srv.stop()
    assert state.status == "completed" and state.notes[0].text == note
    before, after = bodies[: marker["at"]], bodies[marker["at"]:]
    assert not any(note in json.dumps(b) for b in before)
    non_summary = [b for b in after if not b["messages"][-1]["content"].startswith("# Summarize")]
    assert non_summary and all(note in b["messages"][-1]["content"] for b in non_summary)


def test_prices_and_costs() -> None:
    assert price_for("gpt-4o-2024-08-06") == price_for("gpt-4o") == (2.50, 10.00)
    assert price_for("openai/gpt-4o-mini") == (0.15, 0.60)
    assert price_for("unknown-model") is None and call_cost("unknown-model", 10**6, 10**6) == 0
    assert call_cost("gpt-4o", 1_000_000, 1_000_000) == 12.5
    assert call_cost("mine", 1_000_000, 0, {"mine": (1.0, 2.0)}) == 1.0

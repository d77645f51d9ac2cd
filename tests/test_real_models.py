"""What a real model's server does that a default loopback does not: a small window, its own
tokenizer, context-length refusals, response_format it may refuse, replies cut at max_tokens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from moot.core.config import Overrides, build_config
from moot.core.context.summarize import degenerate
from moot.core.models.state import DebateState
from moot.core.session import SessionOptions, new_session
from tests.conftest import read_jsonl
from tests.loopback import LoopbackServer, ModelServer, default_reply

ROLES = ["architect", "performance", "kiss"]


async def _debate(tmp_path: Path, srv: LoopbackServer, config: dict[str, Any] | None = None,
                  rounds: int = 1) -> tuple[DebateState, list[dict[str, Any]]]:
    cfg = build_config(config or {}, Overrides(rounds=rounds, roles=ROLES, provider="openai",
                                               base_url=srv.base_url))
    session = new_session("Design a rate limiter for a public API", cfg,
                          SessionOptions(state_dir=tmp_path / "d", backoff_base_s=0.01))
    state = await session.run()
    return state, read_jsonl(session.folder.events_path)


def _over(served: ModelServer, body: dict[str, Any]) -> int:
    """How far a request passes the server's window by its own count (≤ 0: it fits)."""
    assert served.window is not None
    need = served.prompt_tokens(body) + (0 if served.style == "llama.cpp" else int(body["max_tokens"]))
    return need - served.window


@pytest.mark.parametrize("style", ["llama.cpp", "vllm"])
async def test_a_stated_small_window_is_never_passed(tmp_path: Path, style: str) -> None:
    """llama.cpp states 2,048 tokens a slot in /props, vLLM its max_model_len in /v1/models:
    moot learns it before the first call, and no request passes it."""
    served = ModelServer(window=2048, style=style)
    with LoopbackServer(model=served, reply_chars=1500) as srv:
        state, events = await _debate(tmp_path, srv, rounds=2)
        bodies = srv.requests
    assert state.status == "completed", state.error
    assert [e for e in events if e["type"] == "window_learned"][0]["source"] == "discovered"
    assert all(_over(served, b) <= 0 for b in bodies), [_over(served, b) for b in bodies]
    assert all(b["max_tokens"] + served.prompt_tokens(b) <= 2048 for b in bodies)
    views = [c for r in state.rounds for c in r.calls]
    assert {(v.window, v.window_source) for v in views} == {(2048, "discovered")}
    assert not [e for e in events if e["type"] == "call_failed"]


async def test_a_server_that_counts_more_tokens_is_calibrated_after_one_call(tmp_path: Path) -> None:
    """The server's tokenizer counts 1.3× moot's: after the first call moot budgets with the ratio,
    and every later request stays under the window by the server's own count."""
    served = ModelServer(window=3000, style="vllm", count_scale=1.3)
    with LoopbackServer(model=served, reply_chars=1500) as srv:
        state, events = await _debate(tmp_path, srv, rounds=2, config={"debate": {"max_concurrency": 1}})
        bodies = srv.requests
    assert state.status == "completed", state.error
    assert all(_over(served, b) <= 0 for b in bodies[1:]), [_over(served, b) for b in bodies]
    calibrated = [e for e in events if e["type"] == "window_learned" and e["source"] == "calibrated"]
    assert calibrated and calibrated[-1]["ratio"] >= 1.3
    later = [c for r in state.rounds for c in r.calls][1:]
    assert all(c.count_ratio >= 1.3 for c in later)


@pytest.mark.parametrize("style", ["llama.cpp", "openai", "vllm"])
async def test_a_context_length_refusal_shrinks_the_view_and_retries(tmp_path: Path, style: str) -> None:
    """A server that states nothing and refuses over-long requests in its own words: each refusal
    teaches moot the window, the view is rebuilt smaller, the call retried; the debate completes."""
    served = ModelServer(window=2600, style=style, advertise=False)
    with LoopbackServer(model=served, reply_chars=2000) as srv:
        state, events = await _debate(tmp_path, srv, rounds=2)
        bodies = srv.requests
    assert state.status == "completed", state.error
    refused = [b for b in bodies if _over(served, b) > 0]
    assert refused, "the test needs at least one over-long first request"
    learned = [e for e in events if e["type"] == "window_learned" and e["source"] == "learned"]
    assert learned and learned[0]["window"] <= 2600
    failed = [e for e in events if e["type"] == "call_failed"]
    assert failed and all("refused as longer than the model's window" in e["error"] for e in failed)
    assert len(refused) <= 3  # a refusal teaches the window; later requests fit from the start
    assert all(_over(served, b) <= 0 for b in bodies[bodies.index(refused[-1]) + 1:])


async def test_an_endpoint_that_refuses_response_format_is_asked_plainly_from_then_on(tmp_path: Path) -> None:
    served = ModelServer(json_modes=frozenset())
    with LoopbackServer(model=served) as srv:
        state, events = await _debate(tmp_path, srv, rounds=3, config={"debate": {"termination": "convergence"}})
        bodies = srv.requests
    assert state.status == "completed", state.error
    asked = [b.get("response_format", {}).get("type") for b in bodies if "response_format" in b]
    assert asked == ["json_schema", "json_object"]  # asked less of it once, then not at all
    judge_calls = [b for b in bodies if "confidence" in b["messages"][-1]["content"]]
    assert len(judge_calls) >= 3 and "response_format" not in judge_calls[-1]
    assert state.final_solution is not None and state.final_solution.confidence == 80  # the tolerant parser
    notices = [e["error"] for e in events if e["type"] == "call_failed" and e.get("will_retry")]
    assert any("refused response_format" in n for n in notices)


async def test_json_answers_are_constrained_when_the_endpoint_takes_it(tmp_path: Path) -> None:
    with LoopbackServer(model=ModelServer()) as srv:
        state, _ = await _debate(tmp_path, srv, rounds=1)
        bodies = srv.requests
    synthesis = [b for b in bodies if b["messages"][-1]["content"].startswith("# Final synthesis")]
    assert len(synthesis) == 1
    fmt = synthesis[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "solution"
    assert set(fmt["json_schema"]["schema"]["required"]) >= {"solution", "confidence"}
    # Every text field bounded so that an answer filling all of them still closes within the reply's room.
    props = fmt["json_schema"]["schema"]["properties"]
    worst = sum(p["maxLength"] if p["type"] == "string" else p["maxItems"] * (p["items"]["maxLength"] + 4)
                for p in props.values() if p["type"] in ("string", "array"))
    assert 0 < worst <= 3 * synthesis[0]["max_tokens"]
    assert all("response_format" not in b for b in bodies if b not in synthesis)  # prose stays prose
    assert state.final_solution is not None and state.final_solution.parsed
    assert state.final_solution.metadata.finish_reason == "stop"


async def test_a_json_answer_cut_at_its_limit_is_asked_again_with_room(tmp_path: Path) -> None:
    def reply(body: dict[str, Any], n: int) -> str:
        text = default_reply(body, n)
        if text.startswith("{"):  # the judge: a long JSON answer
            data = json.loads(text)
            data["solution"] += "\n" + "- A detail of the design that takes some room. " * 40
            return json.dumps(data)
        return text

    config = {"judge": {"context": {"reserve_output_tokens": 200}}}
    with LoopbackServer(reply=reply, model=ModelServer()) as srv:
        state, events = await _debate(tmp_path, srv, config=config)
        bodies = srv.requests
    synthesis = [b for b in bodies if b["messages"][-1]["content"].startswith("# Final synthesis")]
    assert [b["max_tokens"] for b in synthesis][0] == 200 and synthesis[1]["max_tokens"] > 600
    assert state.final_solution is not None and state.final_solution.parsed
    assert state.final_solution.confidence == 80
    cut = [e for e in events if e["type"] == "call_failed" and "was cut at 200 tokens" in e["error"]]
    assert len(cut) == 1
    meta = state.final_solution.metadata
    assert meta.finish_reason == "stop" and meta.attempts == 2  # both requests are counted


async def test_a_prose_answer_cut_at_its_limit_is_kept_and_marked(tmp_path: Path) -> None:
    config = {"debate": {"context": {"reserve_output_tokens": 60}}}
    with LoopbackServer(model=ModelServer(), reply_chars=1500) as srv:
        state, events = await _debate(tmp_path, srv, config=config)
    proposals = [c for c in state.rounds[0].contributions if c.type == "proposal"]
    assert proposals and all(c.metadata.finish_reason == "length" for c in proposals)
    warnings = [e["message"] for e in events if e["type"] == "warning"]
    assert any("proposal answer was cut at its limit of 60 tokens" in w for w in warnings)


def test_degenerate_summaries_are_recognised() -> None:
    assert degenerate("It requires a high degree of quality. " * 30)
    assert degenerate("The design uses a token bucket. " * 5 + "Other words follow here in the end. ") is not None
    prose = ("- **Position**: a token bucket per API key in Redis, with a local cache in each gateway.\n"
             "- **Numbers**: 50k requests per second, p99 under 5 ms for the check, 2 replicas.\n"
             "- **Critiques**: kiss asked for one Redis; performance wanted a local fast path. Kept both.\n"
             "- **Open**: how to share limits across regions; whether bursts above 2× are allowed.")
    assert degenerate(prose) is None


async def test_a_degenerate_llm_summary_falls_back_to_rule_based(tmp_path: Path) -> None:
    def reply(body: dict[str, Any], n: int) -> str:
        if body["messages"][-1]["content"].startswith("# Summarize"):
            return "It requires a high degree of quality. " * 25
        return default_reply(body, n, reply_chars=2500)

    config = {"debate": {"summarization": {"threshold": 1000}}}
    with LoopbackServer(reply=reply) as srv:
        state, events = await _debate(tmp_path, srv, config=config, rounds=2)
    assert state.status == "completed"
    summaries = [s for r in state.rounds for s in r.summaries.values()]
    assert summaries and all(s.metadata.fallback_reason and "degenerate" in s.metadata.fallback_reason
                             for s in summaries)
    assert all("high degree of quality" not in s.summary for s in summaries)
    assert any("used a rule-based summary" in e["message"] for e in events if e["type"] == "warning")


async def test_an_endpoint_limit_bounds_calls_in_flight(tmp_path: Path) -> None:
    """`[providers."URL"] max_concurrency = 1`: one call at a time at that endpoint."""
    with LoopbackServer(delay=0.05) as srv:
        config = {"providers": {srv.base_url: {"max_concurrency": 1}}}
        state, events = await _debate(tmp_path, srv, config=config)
    assert state.status == "completed"
    in_flight = peak = 0
    for e in events:
        if e["type"] == "call_started":
            in_flight += 1
            peak = max(peak, in_flight)
        elif e["type"] in ("contribution_added", "summary_added", "synthesis_completed"):
            in_flight -= 1
    assert peak == 1


def test_defaults_stay_flat_and_run_a_phase_in_one_wave() -> None:
    cfg = build_config({}, Overrides())
    assert cfg.debate.summarization.strategy == "rolling"
    assert cfg.debate.carry_refinements is True
    assert cfg.debate.max_concurrency >= 6  # the 6 critiques of the 3 default agents at once



@pytest.mark.parametrize("max_tokens", [128, 256, 265, 1000, 4000])
def test_a_json_answers_bounds_fit_the_room_its_reply_has(max_tokens: int) -> None:
    """At the synthesis's 256-token floor a small model repeating one sentence inside `solution`
    ran to its limit and left the object unclosed (real-model run, council at 1,024 a slot)."""
    from moot.core.protocols.judging import SCORE_SCHEMA, SOLUTION_SCHEMA

    for answer in (SOLUTION_SCHEMA, SCORE_SCHEMA):
        props = answer.within(max_tokens).schema["properties"]
        worst = sum(p["maxLength"] if p["type"] == "string" else p["maxItems"] * (p["items"]["maxLength"] + 4)
                    for p in props.values() if p["type"] in ("string", "array"))
        assert worst <= 3 * max_tokens
        assert all(p["maxLength"] >= 20 for p in props.values() if p["type"] == "string")
    assert SOLUTION_SCHEMA.within(4000).schema["properties"]["tradeoffs"]["maxItems"] == 8  # room: the usual bounds

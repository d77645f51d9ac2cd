"""The `openai-responses` provider: a debate on OpenAI's Responses API, against the loopback
server's `/v1/responses` (typed events, usage at the end), with the retries, JSON answers and
cut replies the chat provider has."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from moot.core.providers.base import CallHint, ChatRequest, Finished, JsonAnswer, Restart, RetryNotice, TextDelta
from moot.core.providers.responses import ResponsesProvider
from tests.conftest import cli, make_server, read_jsonl
from tests.loopback import Faults, ModelServer

PROBLEM = "How should a team of four share one on-call rotation without burning out?"


def test_a_debate_on_the_responses_api(tmp_path: Path) -> None:
    srv = make_server()
    try:
        r = cli("run", PROBLEM, "--provider", "openai-responses", "--base-url", srv.base_url, "--headless",
                "-r", "1", "-a", "architect,kiss", "--state-dir", str(tmp_path / "debates"))
        asked = srv.requests
    finally:
        srv.stop()
    assert r.returncode == 0, r.stderr
    assert asked and all("input" in b and "messages" not in b and b["stream"] is True for b in asked)
    assert all(b["model"] == "gpt-4o-mini" and b["max_output_tokens"] > 0 for b in asked)
    assert any(PROBLEM in str(b["input"]) for b in asked)
    judged = [b for b in asked if (b.get("text") or {}).get("format", {}).get("type") == "json_schema"]
    assert judged and judged[-1]["text"]["format"]["name"]  # the judge's verdict asked for as a schema
    (folder,) = [p for p in (tmp_path / "debates").iterdir() if p.is_dir()]
    events = read_jsonl(folder / "events.jsonl")
    assert {a["provider"] for a in events[0]["agents"]} == {"openai-responses"}
    made = [e["contribution"]["metadata"] for e in events if e["type"] == "contribution_added"]
    assert made and all(m["prompt_tokens"] > 0 and m["completion_tokens"] > 0 for m in made)
    assert all(not m.get("usage_estimated") for m in made)  # the usage came from response.completed
    assert sum(m["cost_usd"] for m in made) > 0  # billed as the model's price says
    assert "Synthesis (call" in r.stdout  # the judge's JSON verdict, parsed, on stdout


def _request(**kwargs: Any) -> ChatRequest:
    return ChatRequest(messages=[{"role": "system", "content": "You weigh designs."},
                                 {"role": "user", "content": PROBLEM}],
                       model="gpt-4o-mini", temperature=0.2, max_tokens=kwargs.pop("max_tokens", 300),
                       hint=CallHint(phase="proposal", role="architect", agent_id="architect"), **kwargs)


async def _stream(srv_url: str, request: ChatRequest) -> list[Any]:
    provider = ResponsesProvider("not-needed", srv_url, backoff_base_s=0.0, max_retries=2)
    try:
        return [item async for item in provider.stream(request)]
    finally:
        await provider.aclose()


def test_a_failed_attempt_is_retried_and_a_cut_stream_starts_over() -> None:
    srv = make_server(faults=Faults(status_script=[503], cut_every=2))
    try:
        items = asyncio.run(_stream(srv.base_url, _request()))
    finally:
        srv.stop()
    notices = [i.reason for i in items if isinstance(i, RetryNotice)]
    assert notices[0].startswith("503 from server") and "stream broke off mid-reply" in notices[1]
    assert any(isinstance(i, Restart) for i in items)  # the cut attempt's text is taken back
    (done,) = [i for i in items if isinstance(i, Finished)]
    after = items[max(k for k, i in enumerate(items) if isinstance(i, Restart)) + 1:]
    assert done.completion.content == "".join(i.text for i in after if isinstance(i, TextDelta))
    assert done.completion.attempts == 3 and done.completion.finish_reason == "stop"


def test_a_reply_cut_at_its_limit_and_a_refused_schema() -> None:
    srv = make_server(model=ModelServer(json_modes=frozenset({"json_object"})))
    answer = JsonAnswer("verdict", {"type": "object", "properties": {"solution": {"type": "string"}}})
    try:
        short = asyncio.run(_stream(srv.base_url, _request(max_tokens=16)))
        judged = asyncio.run(_stream(srv.base_url, _request(json_answer=answer)))
        asked = srv.requests
    finally:
        srv.stop()
    (cut,) = [i for i in short if isinstance(i, Finished)]
    assert cut.completion.finish_reason == "length" and cut.completion.completion_tokens <= 16
    assert [b.get("text", {}).get("format", {}).get("type") for b in asked[1:]] == ["json_schema", "json_object"]
    assert any(isinstance(i, RetryNotice) and "refused response_format" in i.reason for i in judged)
    (done,) = [i for i in judged if isinstance(i, Finished)]
    assert done.completion.json_constrained

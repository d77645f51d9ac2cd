"""OpenAIProvider through the real `openai` SDK against the loopback server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from moot.core.errors import ConfigError, ProviderError
from moot.core.providers.base import CallHint
from moot.core.providers.keys import is_local_url, require_api_key, resolve_api_key
from moot.core.providers.openai import OpenAIProvider
from moot.core.safety.secrets import redact
from moot.core.tokens import count_messages, count_text
from tests.loopback import Faults, LoopbackServer, default_reply
from tests.streams import RESTART, complete

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-test-SECRETkey0123456789abcdef"
HINT = CallHint(phase="proposal", role="architect", agent_id="a1")
MESSAGES = [
    {"role": "system", "content": "You are a careful software architect."},
    {"role": "user", "content": "Design a rate limiter for a public HTTP API, please."},
]


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


def make(srv: LoopbackServer, **kw: float) -> OpenAIProvider:
    opts: dict[str, float] = {"backoff_base_s": 0.01, "timeout_s": 5, **kw}
    return OpenAIProvider(KEY, srv.base_url, **opts)  # type: ignore[arg-type]


class Recorder:
    """Collects deltas and retry lines the way a view would."""

    def __init__(self) -> None:
        self.deltas: list[str] = []
        self.retries: list[str] = []

    async def on_delta(self, text: str) -> None:  # async on purpose: must be awaited
        self.deltas.append(text)

    def on_retry(self, line: str) -> None:
        self.retries.append(line)

    def shown(self) -> str:
        """What a listener shows: text after the last RESTART."""
        if RESTART in self.deltas:
            return "".join(self.deltas[len(self.deltas) - self.deltas[::-1].index(RESTART) :])
        return "".join(self.deltas)


async def run(provider: OpenAIProvider, rec: Recorder, model: str = "gpt-4o", **kw: object):
    try:
        return await complete(provider,
            MESSAGES, model=model, temperature=0.3, max_tokens=500, hint=HINT,
            on_delta=rec.on_delta, on_retry=rec.on_retry, **kw,  # type: ignore[arg-type]
        )
    finally:
        await provider.aclose()


async def test_stream_content_deltas_and_usage(server: LoopbackServer) -> None:
    rec = Recorder()
    result = await run(make(server), rec)
    expected = default_reply(server.requests[0], 1)
    assert result.content == expected == "".join(rec.deltas)
    assert len(rec.deltas) > 5 and rec.retries == []
    assert result.prompt_tokens == count_messages(MESSAGES, "gpt-4o")
    assert result.completion_tokens == count_text(expected, "gpt-4o")
    assert (result.model, result.attempts) == ("gpt-4o", 1)
    body = server.requests[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert (body["max_tokens"], body["temperature"], body["messages"]) == (500, 0.3, MESSAGES)
    assert server.request_headers[0]["authorization"] == f"Bearer {KEY}"


async def test_usage_counted_locally_when_server_sends_none() -> None:
    with LoopbackServer(send_usage=False, reply_chars=300) as srv:
        result = await run(make(srv), Recorder(), model="gpt-4.1-mini")
    assert result.prompt_tokens == count_messages(MESSAGES, "gpt-4.1-mini")
    assert result.completion_tokens == count_text(result.content, "gpt-4.1-mini") > 0


async def test_sync_on_delta_and_keepalive_reuse(server: LoopbackServer) -> None:
    provider = make(server)
    seen: list[str] = []
    for _ in range(3):
        r = await complete(provider, MESSAGES, model="m", temperature=0, max_tokens=50, hint=HINT, on_delta=seen.append)
        assert r.content
    await provider.aclose()
    assert server.calls == 3 and "".join(seen).count("## Reply") == 3
    assert server.connections == 1  # httpx kept the connection alive across streamed calls


async def test_429_honours_retry_after() -> None:
    rec = Recorder()
    with LoopbackServer(faults=Faults(status_script=[429], retry_after=1)) as srv:
        started = time.monotonic()
        result = await run(make(srv), rec)
        elapsed = time.monotonic() - started
    assert elapsed >= 1.0
    assert result.attempts == 2 and srv.calls == 2
    assert rec.retries == ["429 from server, retrying in 1.0s (attempt 2/4)"]
    assert result.content == "".join(rec.deltas)


async def test_every_second_call_500_is_retried() -> None:
    rec = Recorder()
    with LoopbackServer(faults=Faults(fail_every=2)) as srv:
        provider = make(srv)
        first = await complete(provider, MESSAGES, model="m", temperature=0, max_tokens=50, hint=HINT)
        second = await run(provider, rec)
    assert (first.attempts, second.attempts, srv.calls) == (1, 2, 3)
    assert rec.retries and rec.retries[0].startswith("500 from server, retrying in")
    assert second.content == default_reply(srv.requests[2], 3)


async def test_cut_stream_is_retried_with_restart() -> None:
    rec = Recorder()
    with LoopbackServer(faults=Faults(cut_every=2), chunk_chars=8) as srv:
        provider = make(srv)
        await complete(provider, MESSAGES, model="m", temperature=0, max_tokens=50, hint=HINT)
        result = await run(provider, rec)
    assert result.attempts == 2 and srv.calls == 3
    assert rec.deltas.count(RESTART) == 1 and rec.deltas[0] != RESTART
    assert result.content == rec.shown() == default_reply(srv.requests[2], 3)
    assert len(rec.retries) == 1 and rec.retries[0].startswith("stream broke off mid-reply, retrying in")


async def test_hang_times_out_then_fails() -> None:
    rec = Recorder()
    with LoopbackServer(faults=Faults(hang_every=1, hang_s=10)) as srv:
        started = time.monotonic()
        with pytest.raises(ProviderError) as info:
            await run(make(srv, timeout_s=0.5, max_retries=2), rec)
        elapsed = time.monotonic() - started
        assert srv.calls == 3
    assert elapsed >= 1.5  # three attempts, each cut at 0.5 s (not the 10 s hang: the messages say so)
    assert len(rec.retries) == 2 and "no complete answer within 0.5s" in rec.retries[0]
    message = str(info.value)
    assert "\n" not in message and "after 3 attempts" in message and info.value.retryable


async def test_fallback_model_after_primary_exhausted() -> None:
    rec = Recorder()
    with LoopbackServer(faults=Faults(status_script=[500, 503])) as srv:
        result = await run(make(srv, max_retries=1), rec, model="primary", fallback_models=["primary", "backup"])
        models = [body["model"] for body in srv.requests]
    assert models == ["primary", "primary", "backup"]
    assert result.model == "backup" and result.attempts == 3
    assert any("falling back to backup" in line for line in rec.retries)


async def test_401_fails_at_once_without_leaking_key() -> None:
    rec = Recorder()
    with LoopbackServer(faults=Faults(status_script=[401])) as srv:
        with pytest.raises(ProviderError) as info:
            await run(make(srv), rec, fallback_models=["other"])
        assert srv.calls == 1
    message = str(info.value)
    assert "401" in message and "Incorrect API key" in message and "sk-***" in message
    assert KEY not in message and "SECRETkey" not in message and "\n" not in message
    assert "Traceback" not in message and len(message) <= 400
    assert info.value.status == 401 and not info.value.retryable and rec.retries == []


async def test_400_is_not_retried() -> None:
    with LoopbackServer(faults=Faults(status_script=[400])) as srv:
        with pytest.raises(ProviderError, match="400 from server"):
            await run(make(srv), Recorder())
        assert srv.calls == 1


def test_missing_key_only_fine_for_local_urls() -> None:
    """One place decides a key is missing: a placeholder for local servers, a ConfigError elsewhere."""
    assert require_api_key("http://127.0.0.1:9/v1") == ("not-needed", False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        require_api_key("https://openrouter.ai/api/v1")
    assert OpenAIProvider("not-needed", "http://127.0.0.1:9/v1").label == "openai · 127.0.0.1:9"
    assert OpenAIProvider(KEY, None).label == "openai · api.openai.com"


async def test_sdk_non_stream_and_models_list(server: LoopbackServer) -> None:
    client = openai.AsyncOpenAI(api_key="x", base_url=server.base_url, max_retries=0)
    try:
        reply = await client.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
        models = await client.models.list()
    finally:
        await client.close()
    assert reply.choices[0].message.content == default_reply(server.requests[0], 1)
    assert reply.usage is not None and reply.usage.prompt_tokens == count_messages(MESSAGES, "m")
    assert [m.id for m in models.data] == ["loopback-model"]


def test_default_reply_shapes() -> None:
    judge = {"messages": [{"role": "user", "content": 'Answer as JSON with "solution" and "confidence".'}]}
    data = json.loads(default_reply(judge, 1))
    assert set(data) == {"solution", "confidence", "tradeoffs", "recommendations", "unresolved"}
    ask = {"messages": [{"role": "user", "content": "Reply in JSON: {\"questions\": [...]}"}]}
    assert json.loads(default_reply(ask, 2)) == {"questions": []}
    plain = default_reply({"messages": MESSAGES}, 7, reply_chars=300)
    assert "7" in plain and "Design a rate limiter" in plain and 250 <= len(plain) <= 300


def test_redact() -> None:
    assert redact("bad key sk-proj-abcDEF123456_xyz here") == "bad key sk-*** here"
    assert redact("or sk-or-v1-0123456789abcdef.") == "or sk-***"
    assert redact("echoed sk-abc1****wxyz") == "echoed sk-***"
    assert redact("Authorization: Bearer abc.def-123") == "Authorization: Bearer sk-***"
    assert redact("key=mysecretvalue!", ["mysecretvalue"]) == "key=sk-***!"
    assert redact("risk-averse desk-top task-queue", ["ab"]) == "risk-averse desk-top task-queue"
    assert redact("") == ""


def test_resolve_api_key_env_and_dotenv(tmp_path: Path) -> None:
    none = tmp_path / "missing.env"
    env = {"OPENAI_API_KEY": "sk-openai", "OPENROUTER_API_KEY": "sk-router"}
    assert resolve_api_key(None, env=env, dotenv_path=none) == "sk-openai"
    assert resolve_api_key("https://openrouter.ai/api/v1", env=env, dotenv_path=none) == "sk-router"
    assert resolve_api_key("https://openrouter.ai/api/v1", env={"OPENAI_API_KEY": "sk-o"}, dotenv_path=none) == "sk-o"
    assert resolve_api_key(None, env={}, dotenv_path=none) is None
    dotenv = tmp_path / ".env"
    dotenv.write_text('OPENROUTER_API_KEY="sk-from-file"\n# comment\nOPENAI_API_KEY=\n')
    assert resolve_api_key("https://openrouter.ai/api/v1", env={}, dotenv_path=dotenv) == "sk-from-file"
    assert resolve_api_key(None, env={}, dotenv_path=dotenv) == "sk-from-file"  # the other name
    assert resolve_api_key(None, env={"OPENAI_API_KEY": " sk-env "}, dotenv_path=dotenv) == "sk-env"
    assert "sk-from-file" not in os.environ.values()


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:11434/v1", True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://192.168.1.20:1234/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://box.local/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://openrouter.ai/api/v1", False),
        (None, False),
    ],
)
def test_is_local_url(url: str | None, local: bool) -> None:
    assert is_local_url(url) is local


def test_loopback_subprocess_serves() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.loopback", "--port", "0", "--reply-chars", "200"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().split()
        assert first[0] == "PORT" and int(first[1]) > 0
        body = json.dumps({"model": "m", "messages": MESSAGES}).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{first[1]}/v1/chat/completions", body, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            data = json.load(resp)
        assert data["choices"][0]["message"]["content"] == default_reply({"messages": MESSAGES}, 1, 200)
    finally:
        proc.kill()
        proc.wait(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()

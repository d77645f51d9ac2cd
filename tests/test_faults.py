"""Provider faults: what is retried, what falls back, what stops a debate (resumably).

Calls go through the real `openai` SDK to the loopback server, which misbehaves on
purpose: 429 with Retry-After, 5xx, streams cut mid-reply, answers that never come,
broken models, a server that is not there at all.
"""

from __future__ import annotations

import json
import socket
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from moot.core.errors import ProviderError
from moot.core.models.state import DebateState
from moot.core.providers.base import CallHint
from moot.core.providers.openai import OpenAIProvider, _Failure
from moot.core.storage.folder import DebateFolder
from tests.conftest import Faults, LoopbackServer, cli, make_server, read_jsonl, run_debate
from tests.loopback import _last_user_text, default_reply
from tests.streams import RESTART, complete
from tests.test_resume import AGENTS, TRACEBACK, check_complete, only_debate, resume_hint, start_loopback

MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hi."}]
HINT = CallHint(phase="proposal", role="kiss", agent_id="kiss")


async def _complete(provider: OpenAIProvider, model: str = "m",
                    fallbacks: tuple[str, ...] = ()) -> tuple[Any, list[str], list[str]]:
    retries: list[str] = []
    deltas: list[str] = []
    result = await complete(provider, MESSAGES, model=model, temperature=0, max_tokens=50, hint=HINT,
                                     on_delta=deltas.append, on_retry=retries.append, fallback_models=fallbacks)
    return result, retries, deltas


@pytest.fixture
def loopback() -> Iterator[Any]:
    servers: list[LoopbackServer] = []

    def start(**kwargs: Any) -> LoopbackServer:
        servers.append(make_server(**kwargs))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


# ---------------------------------------------------------------- one call


async def test_429_waits_for_retry_after(loopback: Any) -> None:
    srv = loopback(faults=Faults(status_script=[429], retry_after=0.7))
    provider = OpenAIProvider("sk-test-1", srv.base_url, max_retries=2, backoff_base_s=0.01)
    t = time.monotonic()
    result, retries, _ = await _complete(provider)
    assert time.monotonic() - t >= 0.7  # Retry-After, not the 0.01 s backoff
    assert retries == ["429 from server, retrying in 0.7s (attempt 2/3)"]
    assert result.attempts == 2 and srv.calls == 2
    await provider.aclose()


async def test_5xx_is_retried_up_to_max_retries(loopback: Any) -> None:
    srv = loopback(faults=Faults(status_script=[500, 502, 503]))
    provider = OpenAIProvider("sk-test-1", srv.base_url, max_retries=3, backoff_base_s=0.01)
    result, retries, _ = await _complete(provider)
    assert result.attempts == 4 and srv.calls == 4
    assert [r.split(",")[0] for r in retries] == ["500 from server", "502 from server", "503 from server"]

    srv2 = loopback(faults=Faults(status_script=[500] * 10))
    provider2 = OpenAIProvider("sk-test-1", srv2.base_url, max_retries=2, backoff_base_s=0.01)
    with pytest.raises(ProviderError) as err:
        await _complete(provider2)
    assert srv2.calls == 3  # 1 + max_retries, then it gives up
    assert str(err.value).startswith("500 from server (m at 127.0.0.1:")
    assert "after 3 attempts: Loopback fault: status 500." in str(err.value)
    await provider.aclose()
    await provider2.aclose()


async def test_4xx_is_not_retried(loopback: Any) -> None:
    srv = loopback(faults=Faults(status_script=[400]))
    provider = OpenAIProvider("sk-test-1", srv.base_url, max_retries=3, backoff_base_s=0.01)
    with pytest.raises(ProviderError, match="^400 from server"):
        await _complete(provider)
    assert srv.calls == 1
    await provider.aclose()


async def test_cut_stream_is_retried_and_restarts_the_text(loopback: Any) -> None:
    srv = loopback(faults=Faults(cut_every=2), reply_chars=300)
    provider = OpenAIProvider("sk-test-1", srv.base_url, max_retries=2, backoff_base_s=0.01)
    await _complete(provider)  # call 1 streams whole; call 2 is cut half-way
    result, retries, deltas = await _complete(provider)
    assert retries and retries[0].startswith("stream broke off mid-reply, retrying")
    assert RESTART in deltas
    shown = "".join(deltas[len(deltas) - 1 - deltas[::-1].index(RESTART) + 1:])
    assert shown == result.content  # what the viewer keeps is exactly the final reply
    assert result.attempts == 2 and srv.calls == 3
    await provider.aclose()


async def test_timeout_is_retried(loopback: Any) -> None:
    # A timeout a loaded machine's loopback answers well within (at 0.5 s it flaked at load 15).
    srv = loopback(faults=Faults(hang_every=2, hang_s=10))
    provider = OpenAIProvider("sk-test-1", srv.base_url, timeout_s=1.5, max_retries=1, backoff_base_s=0.01)
    await _complete(provider)  # call 1 answers; call 2 hangs past the timeout
    t = time.monotonic()
    result, retries, _ = await _complete(provider)
    assert time.monotonic() - t >= 1.5
    assert retries[0].startswith("no complete answer within 1.5s, retrying")
    assert result.attempts == 2
    await provider.aclose()


async def test_fallback_model_is_tried_after_the_retries(loopback: Any) -> None:
    srv = loopback(faults=Faults(fail_models=frozenset({"primary"})))
    provider = OpenAIProvider("sk-test-1", srv.base_url, max_retries=1, backoff_base_s=0.01)
    result, retries, _ = await _complete(provider, "primary", ("backup",))
    assert [b["model"] for b in srv.requests] == ["primary", "primary", "backup"]
    assert result.model == "backup" and result.attempts == 3
    assert retries[-1] == "primary failed (500 from server), falling back to backup"


async def test_debate_timeout_and_retries_come_from_the_config(tmp_path: Path, loopback: Any) -> None:
    srv = loopback(faults=Faults(hang_every=5, hang_s=5))
    state, folder = await run_debate(tmp_path, rounds=1, provider="openai", base_url=srv.base_url,
                                     roles=["kiss", "security"], config={"debate": {"timeout_s": 0.4, "max_retries": 2}})
    assert state.status == "completed"
    failed = [e for e in read_jsonl(folder.events_path) if e["type"] == "call_failed"]
    assert failed and all(e["will_retry"] and e["error"].startswith("no complete answer within 0.4s, retrying") for e in failed)
    assert all(e["error"].endswith("/3)") for e in failed)  # 1 + debate.max_retries attempts


def test_backoff_is_exponential_with_full_jitter() -> None:
    provider = OpenAIProvider("sk-test-1", "http://127.0.0.1:9/v1", backoff_base_s=0.5, backoff_max_s=3)
    failure = _Failure("500 from server", True, 500)
    for attempt, cap in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 3.0), (8, 3.0)]:
        delays = [provider._backoff(attempt, failure) for _ in range(200)]
        assert all(0 <= d <= cap for d in delays)
        assert statistics.pstdev(delays) > cap / 10  # spread out, not one fixed delay
        assert max(delays) > cap * 0.8
    assert provider._backoff(5, _Failure("429", True, 429, retry_after=7.0)) == 7.0


# ---------------------------------------------------------------- whole debates


def _kind(body: dict[str, Any]) -> tuple[str, str]:
    """(role from the system prompt, task kind from the last user message) of a request."""
    system = body["messages"][0]["content"].splitlines()[0]
    task = _last_user_text(body).lstrip().splitlines()[0]
    return system.removeprefix("# Role: "), task.removeprefix("# ").split(":")[0]


class BrokenCalls:
    """A reply function that answers 500 for the calls matching `broken` (role, task)."""

    def __init__(self) -> None:
        self.broken: set[tuple[str, str]] = set()
        self.failed = Counter[tuple[str, str]]()

    def __call__(self, body: dict[str, Any], n: int) -> str:
        role, task = _kind(body)
        for b_role, b_task in self.broken:
            if role.startswith(b_role) and task.startswith(b_task) and (
                    b_task != "Critique" or "(role: architect)" in _last_user_text(body)):
                self.failed[(b_role, b_task)] += 1
                raise RuntimeError("injected failure")
        return default_reply(body, n)


def test_every_4th_call_answered_500_still_completes(tmp_path: Path) -> None:
    proc, url = start_loopback("--fail-every", "4")
    try:
        r = cli("run", "Design a URL shortener", "--base-url", url, "--headless", "-r", "2",
                "--state-dir", str(tmp_path))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert r.returncode == 0, r.stderr
    folder = only_debate(tmp_path)
    check_complete(folder, 2, AGENTS)
    retried = [e for e in read_jsonl(folder / "events.jsonl") if e["type"] == "call_failed"]
    assert len(retried) >= 5 and all(e["will_retry"] for e in retried)
    assert all(e["error"].startswith("500 from server, retrying in") for e in retried)
    assert "retry" in r.stderr and TRACEBACK not in r.stderr


async def test_failed_critique_is_a_warning_and_the_debate_goes_on(tmp_path: Path, loopback: Any) -> None:
    reply = BrokenCalls()
    reply.broken.add(("Simplicity", "Critique"))  # kiss → architect fails every time
    srv = loopback(reply=reply)
    state, folder = await run_debate(tmp_path, rounds=2, provider="openai", base_url=srv.base_url,
                                     config={"debate": {"max_retries": 1}})
    assert state.status == "completed" and state.final_solution is not None
    for rnd in state.rounds:
        crit = {(c.agent_id, c.target_agent_id) for c in rnd.contributions if c.type == "critique"}
        assert ("kiss", "architect") not in crit and len(crit) == 5
        assert Counter(c.type for c in rnd.contributions)["refinement"] == 3
    warnings = [e["message"] for e in read_jsonl(folder.events_path) if e["type"] == "warning"]
    assert sum("kiss critique in round" in w and "failed and was skipped" in w for w in warnings) == 2
    assert reply.failed[("Simplicity", "Critique")] == 4  # 2 rounds × (1 + 1 retry)


async def test_on_error_skip_drops_the_failed_proposal(tmp_path: Path, loopback: Any) -> None:
    reply = BrokenCalls()
    reply.broken.add(("Simplicity", "Proposal"))
    srv = loopback(reply=reply)
    state, folder = await run_debate(tmp_path, rounds=1, provider="openai", base_url=srv.base_url,
                                     config={"debate": {"max_retries": 0, "on_error": "skip"}})
    assert state.status == "completed"
    kinds = Counter((c.type, c.agent_id) for c in state.rounds[0].contributions)
    assert ("proposal", "kiss") not in kinds and ("refinement", "kiss") not in kinds
    assert sum(n for (t, _), n in kinds.items() if t == "critique") == 4  # nobody critiques a missing proposal
    warnings = [e["message"] for e in read_jsonl(folder.events_path) if e["type"] == "warning"]
    assert any(w.startswith("kiss proposal in round 1 failed and was skipped: 500 from server") for w in warnings)


def test_failed_required_calls_stop_with_exit_3_and_resume(tmp_path: Path, loopback: Any) -> None:
    """A proposal, then a refinement, then the synthesis fail for good: each stops the
    debate with exit 3 and a resume hint; each resume picks up where it stopped."""
    reply = BrokenCalls()
    srv = loopback(reply=reply)
    cfg = tmp_path / "moot.json"
    cfg.write_text(json.dumps({"debate": {"max_retries": 1, "on_error": "stop"}}))
    sd = tmp_path / "D"
    steps = [("Simplicity", "Proposal", "kiss proposal in round 1 failed"),
             ("Performance", "Refinement", "performance refinement in round 1 failed"),
             ("Judge", "Final synthesis", "judge synthesis failed")]
    command = ["run", "Design a URL shortener", "--base-url", srv.base_url, "--headless", "-r", "1",
               "-c", str(cfg), "--state-dir", str(sd)]
    done = 0
    for role, task, message in steps:
        reply.broken = {(role, task)}
        r = cli(*command)
        assert r.returncode == 3, r.stderr
        assert TRACEBACK not in r.stderr
        folder = only_debate(sd)
        last = r.stderr.strip().splitlines()[-1]
        assert last.startswith(f"moot: {message}: 500 from server (gpt-4o-mini at 127.0.0.1:")
        assert "after 2 attempts" in last
        assert last.endswith(f"; saved in {folder}; continue with `moot resume {folder.name} --state-dir {sd}`")
        state = DebateFolder(folder).load()
        assert state.status == "failed" and message in (state.error or "")
        assert len(state.all_contributions()) > done  # progress is kept between the failures
        done = len(state.all_contributions())
        command = [*resume_hint(r.stderr), "--headless", "--base-url", srv.base_url]
    reply.broken = set()
    r = cli(*command)
    assert r.returncode == 0, r.stderr
    check_complete(only_debate(sd), 1, AGENTS)
    assert sum(reply.failed.values()) == 6  # each failed call: 1 try + 1 retry, never repeated after


def test_server_down_exits_3_then_resumes_when_it_is_back(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    cfg = tmp_path / "moot.json"
    cfg.write_text(json.dumps({"debate": {"max_retries": 1}}))
    r = cli("run", "Design a URL shortener", "--base-url", url, "--headless", "-r", "1", "-c", str(cfg),
            "--state-dir", str(tmp_path / "D"))
    assert r.returncode == 3
    assert TRACEBACK not in r.stderr
    folder = only_debate(tmp_path / "D")
    errors = [line for line in r.stderr.splitlines() if line.startswith("moot:")]
    assert len(errors) == 1
    assert "proposal in round 1 failed: connection error (gpt-4o-mini at 127.0.0.1:" in errors[0]
    assert errors[0].endswith(f"continue with `moot resume {folder.name} --state-dir {tmp_path / 'D'}`")
    assert DebateState.model_validate_json((folder / "state.json").read_bytes()).status == "failed"

    with LoopbackServer(port=port):
        r = cli(*resume_hint(r.stderr), "--headless", "--base-url", url)
    assert r.returncode == 0, r.stderr
    check_complete(folder, 1, AGENTS)


async def test_unsavable_text_from_a_server_is_cleaned(tmp_path: Path, loopback: Any) -> None:
    """Lone surrogates in a reply (a broken `\\ud83d` escape, an emoji split across
    chunks) cannot be written as UTF-8; they are replaced so the debate and its log
    stay whole."""
    def reply(body: dict[str, Any], n: int) -> str:
        return default_reply(body, n) + " broken emoji: \ud83d"

    srv = loopback(reply=reply, chunk_chars=7)
    state, folder = await run_debate(tmp_path, rounds=1, provider="openai", base_url=srv.base_url,
                                     roles=["kiss", "security"])
    assert state.status == "completed"
    assert all(c.content.endswith("broken emoji: ?") for c in state.all_contributions())
    assert DebateFolder(folder.path).load().model_dump(exclude={"log_offset"}) == state.model_dump(exclude={"log_offset"})


def test_a_non_finite_price_never_makes_the_log_unreadable(tmp_path: Path, loopback: Any) -> None:
    """NaN serializes as null, which would not read back: either the config is refused
    (exit 4) or writing stops before the bad event (exit 2); never an unreadable log."""
    srv = loopback()
    cfg = tmp_path / "moot.json"
    cfg.write_text('{"debate": {"prices": {"gpt-4o-mini": [NaN, 1.0]}}}')
    r = cli("run", "x", "--base-url", srv.base_url, "--headless", "-r", "1", "-c", str(cfg),
            "--state-dir", str(tmp_path / "D"))
    assert r.returncode in (2, 4), r.stderr
    assert TRACEBACK not in r.stderr
    assert len([line for line in r.stderr.splitlines() if line.startswith("moot:")]) == 1
    for folder in (tmp_path / "D").glob("*"):
        assert DebateFolder(folder).load().status == "running"  # readable; resumable once the price is fixed

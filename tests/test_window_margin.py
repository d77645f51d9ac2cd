"""The server's count of the next request is known only once it has counted it.

A small model's tokenizer disagrees with tiktoken by different amounts on different texts:
SmolLM2's splits every number into single digits, so a text full of measurements costs it
more than prose does. Here the critiques quote figures (latencies, rates, key counts) and the
refinements that read them are the first requests the server counts higher than any before;
they are also the views that take the whole window, their answers shrinking into the room left.
moot budgets them with a margin over the ratios it has seen, so none reaches past the slot.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from moot.core.config import Overrides, build_config
from moot.core.session import SessionOptions, new_session
from tests.conftest import cli
from tests.loopback import LoopbackServer, ModelServer, _last_user_text
from tests.prose import loopback_reply

PROBLEM = "Design a rate limiter for a public HTTP API serving 50k requests per second"
MEASURED = ("Measured on the staging cluster last week: p50 12.4 ms at 1,250 rps, p95 31.7 ms at 2,480 rps, "
            "p99 88.2 ms at 4,960 rps, and 143.9 ms at 9,920 rps where the token bucket refilled 20,000 tokens "
            "every 250 ms. The Redis shard held 3,276,800 keys in 1.9 GiB; eviction started at 2,147,483 keys. ")


def _measured_critiques(body: dict[str, Any], n: int) -> str:
    text = loopback_reply(body, n)
    return MEASURED + text if "critique" in _last_user_text(body).lower()[:400] else text


async def _run(tmp_path: Path, served: ModelServer) -> tuple[Any, LoopbackServer, list[dict[str, Any]]]:
    srv = LoopbackServer(reply=_measured_critiques, model=served, chunk_chars=4096)
    with srv:
        cfg = build_config({}, Overrides(rounds=1, provider="openai", base_url=srv.base_url,
                                         roles=["architect", "performance", "kiss"]))
        session = new_session(PROBLEM, cfg, SessionOptions(state_dir=tmp_path / "d", backoff_base_s=0.01))
        state = await session.run()
        events = [json.loads(line) for line in session.folder.events_path.read_text().splitlines()]
    return state, srv, events


async def test_no_request_reaches_past_the_slot_when_the_count_ratio_rises(tmp_path: Path) -> None:
    served = ModelServer(window=1024, count_scale=1.1, digit_tokens=0.3, stop_when_full=True)
    state, srv, events = await _run(tmp_path, served)
    assert state.status == "completed", state.error
    learned = [e["ratio"] for e in events if e["type"] == "window_learned" and e["source"] == "calibrated"]
    assert learned and max(learned) > 1.2  # the ratio rose as the figures came in
    later = [b for b, answered in zip(srv.requests, srv.answered_before) if answered >= 1]
    overruns = [served.prompt_tokens(b) + int(b["max_tokens"]) - 1024 for b in later
                if served.prompt_tokens(b) + int(b["max_tokens"]) > 1024]
    assert overruns == []
    assert not [e for e in events if e["type"] == "warning" and "window" in e["message"]]


async def test_a_reply_the_server_ended_in_a_full_window_is_recorded_as_such(tmp_path: Path) -> None:
    """A rise no margin covers (each digit costs this server a token more): the refinements'
    requests fill the slot, and llama.cpp stops them short of max_tokens, saying `truncated`.
    moot records what happened, in the server's counts, rather than a reply cut at its limit."""
    served = ModelServer(window=1024, count_scale=1.1, digit_tokens=1.0, stop_when_full=True)
    state, srv, events = await _run(tmp_path, served)
    assert state.status == "completed", state.error
    ended = [c for c in state.all_contributions() if c.metadata is not None and c.metadata.server_truncated]
    assert ended and all(c.type == "refinement" for c in ended)
    warnings = [e["message"] for e in events if e["type"] == "warning"]
    for c in ended:
        assert c.metadata is not None and c.metadata.finish_reason == "length"
        said = [w for w in warnings if w.startswith(f"{c.agent_id}: the server ended the refinement answer at "
                                                    f"{c.metadata.completion_tokens} tokens, short of its limit of ")]
        assert len(said) == 1 and "the request filled its 1,024-token window" in said[0]
        assert f"{c.metadata.prompt_tokens:,} prompt + {c.metadata.completion_tokens:,} reply tokens" in said[0]
    assert not [w for w in warnings if "refinement answer was cut at its limit" in w]
    report = cli("report", state.id, "--state-dir", str(tmp_path / "d"))
    assert report.returncode == 0
    assert report.stdout.count("The server ended the model's answer early: the request filled its context "
                               "window.") == len(ended)

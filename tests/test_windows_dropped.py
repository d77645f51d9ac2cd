"""No request over budget while summaries drop facts and recall brings them back.

The property: for a server window from 1,024 to 32,768 tokens, a conversation whose rolling
summary appends blocks often, whose replies state facts as an engineer writes them early and come
back to them later (so the recall tier prefers the items whose facts a summary dropped), sends no
request whose prompt and reserved answer exceed the window — by the server's count, every
request — and each view's record stays within its own budget.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moot.core.config import Overrides, build_config
from moot.core.session import SessionOptions, new_session
from tests.engineer_facts import EngineerScript
from tests.loopback import LoopbackServer, ModelServer

PROBLEM = "Design a rate limiter for a public HTTP API serving 50k requests per second"


@settings(max_examples=5, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(window=st.integers(1024, 32768), chars=st.sampled_from([400, 900, 1600]))
def test_no_request_is_over_budget_while_recall_brings_back_dropped_facts(window: int, chars: int) -> None:
    served = ModelServer(window=window)
    script = EngineerScript({1: 0, 2: 1}, {8: 1, 9: 0}, chars=chars)
    with LoopbackServer(reply=script, model=served, chunk_chars=4096) as srv, tempfile.TemporaryDirectory() as tmp:
        debate = {"protocol": "conversation", "turns": 10, "summarization": {"method": "rule-based"},
                  "conversation": {"recent_messages": 4, "summary_every": 2}}
        cfg = build_config({"debate": debate}, Overrides(provider="openai", base_url=srv.base_url,
                                                         roles=["architect", "kiss"]))
        session = new_session(PROBLEM, cfg, SessionOptions(state_dir=Path(tmp), backoff_base_s=0.01))
        state = asyncio.run(session.run())
        assert state.status == "completed", state.error
        assert srv.requests
        for body in srv.requests:
            assert served.prompt_tokens(body) + int(body.get("max_tokens") or 0) <= window
        views = [c for r in state.rounds for c in r.calls]
        assert any(c.summary_id for c in views)  # the summary rolled: there was something to drop
        for c in views:
            assert c.tokens.total + c.max_tokens <= window and c.tokens.total <= c.budget

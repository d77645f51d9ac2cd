"""A call of several attempts, seen from outside: what a slow view receives of the retry, and
how long the call is said to have taken.

An attempt that breaks mid-reply is followed by a restart token (views clear the failed text
before the retry's arrives), and a call's latency runs from its first request to the answer
it kept, over every attempt it was charged for.
"""

from __future__ import annotations

from pathlib import Path

from moot.core.clock import Clock
from moot.core.config import Overrides, build_config
from moot.core.events import Event, Token
from moot.core.session import SessionOptions, new_session
from tests.loopback import Faults, LoopbackServer, ModelServer
from tests.prose import loopback_reply

PROBLEM = "Design a rate limiter for a public HTTP API serving 50k requests per second"


async def test_a_slow_subscriber_still_receives_every_restart(tmp_path: Path) -> None:
    """A subscriber far behind loses token deltas, never a restart: each stream the server
    breaks off is retried, and the view must learn to drop the broken attempt's text."""
    srv = LoopbackServer(reply=loopback_reply, chunk_chars=24, faults=Faults(cut_every=3))
    with srv:
        # Every third request is cut whichever call sends it: with calls in parallel one call can
        # meet several cuts in a row, so it may retry more often than the default allows.
        cfg = build_config({"debate": {"max_retries": 12}},
                           Overrides(rounds=2, provider="openai", base_url=srv.base_url))
        session = new_session(PROBLEM, cfg, SessionOptions(state_dir=tmp_path / "d", backoff_base_s=0.01))
        slow = session.bus.subscribe("slow")
        slow.TOKEN_BACKLOG = 20  # a view that reads nothing until the debate ends
        sent: list[Token] = []

        def count(event: Event) -> None:
            if isinstance(event, Token) and event.restart:
                sent.append(event)

        session.bus.listen(count)
        state = await session.run()
    assert state.status == "completed", state.error
    received = []
    while not slow.queue.empty():
        event = slow.queue.get_nowait()
        if isinstance(event, Token) and event.restart:
            received.append(event.call_id)
    assert slow.dropped_tokens > 0  # it did fall behind
    assert len(sent) >= 2  # streams were broken off and retried
    assert received == [t.call_id for t in sent]


async def test_latency_counts_the_attempts_a_call_was_refused(tmp_path: Path) -> None:
    """A server that states no window refuses a request as too long; moot learns the window
    and asks again. The clock here moves one second per request the server receives, and the
    calls of a conversation run one at a time: the latencies of all the answers kept add up to
    one second per request sent, the refused one included."""
    served = ModelServer(window=1800, advertise=False)
    srv = LoopbackServer(reply=loopback_reply, model=served, chunk_chars=4096)
    debate = {"protocol": "conversation", "turns": 3, "summarization": {"method": "rule-based"}}
    with srv:
        cfg = build_config({"debate": debate}, Overrides(rounds=3, provider="openai", base_url=srv.base_url,
                                                         roles=["architect", "kiss"]))
        opts = SessionOptions(state_dir=tmp_path / "d", backoff_base_s=0.01,
                              clock=Clock(monotonic=lambda: float(srv.calls)))
        state = await new_session(PROBLEM, cfg, opts).run()
        sent = srv.requests
    assert state.status == "completed", state.error
    assert sum(served.refusal(b) is not None for b in sent) == 1
    assert state.final_solution is not None
    kept = [c.metadata for c in state.all_contributions() if c.metadata is not None]
    kept.append(state.final_solution.metadata)
    assert sum(m.latency_ms for m in kept) == 1000 * len(sent)

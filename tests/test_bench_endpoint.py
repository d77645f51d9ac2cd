"""A benchmark's debates share their server: one limit per endpoint across all of them.

A llama.cpp server says in `/props` how many requests it runs at once (`total_slots`); more
only queue there, their deadlines running, and those still queued when the run is killed
start after it. However many questions a bench runs at once, the server never holds more
requests than it has slots.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import cli
from tests.loopback import LoopbackServer, ModelServer, arithmetic_reply


def test_a_bench_never_holds_more_requests_than_the_server_has_slots(tmp_path: Path) -> None:
    served = ModelServer(window=8192, style="llama.cpp", slots=3)
    # Each request takes a moment, so the debates' calls overlap at the server.
    with LoopbackServer(arithmetic_reply(0.6), model=served, latency=lambda body: 0.05) as srv:
        r = cli("bench", "arithmetic:6:terms=3", "--protocols", "simultaneous", "--concurrency", "3",
                "--provider", "openai", "--base-url", srv.base_url, "--model", "loop", "--headless",
                "--state-dir", str(tmp_path / "debates"))
        most, calls = srv.most_in_flight, srv.calls
    assert r.returncode == 0, r.stderr
    assert calls == 6 * 3 * 2  # 3 agents × 2 rounds a question, all answered
    assert most == 3

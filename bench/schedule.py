"""Scheduling: how close a rounds debate comes to the critical path of its own call graph.

Run: .venv/bin/python bench/schedule.py [--rounds 3] [--sigma 0.6] [--median 1.0] [--chars 2000]

A debate of 3 agents (architect, performance, kiss) × 3 rounds, moot's defaults, against
the loopback OpenAI-compatible server. Each request waits a latency drawn from a log-normal
(median 1 s, σ 0.6) seeded by the request itself (a hash of its messages), and its reply
(2,000 characters of technical prose, `tests/prose.py`, sent in one chunk) is seeded the same
way: the same request waits the same and gets the same answer whatever the order requests
come in.

From the requests the server received it builds the call graph: request B depends on
request A when B quotes A's reply (a critique quotes the proposal it reads, a refinement the
critiques aimed at it, a summary the items it folds, the judge the final round). The graph's
critical path is the longest chain of latencies through it: no schedule can finish sooner.

Printed: wall time (first request to last reply), the critical path, their ratio, and
whether a second run of the same debate sent byte-identical requests (as a set: the order of
arrival may differ, the requests may not).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moot.core.config import Overrides, build_config  # noqa: E402
from moot.core.session import SessionOptions, new_session  # noqa: E402
from tests.loopback import LoopbackServer  # noqa: E402
from tests.prose import loopback_reply  # noqa: E402

PROBLEM = "Design a rate limiter for a public HTTP API serving 50k requests per second"
ROLES = ["architect", "performance", "kiss"]


def body_seed(body: dict[str, Any]) -> int:
    digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def latency(body: dict[str, Any], median: float, sigma: float) -> float:
    """Seconds this request waits: log-normal, seeded by the request alone."""
    return median * math.exp(random.Random(body_seed(body)).gauss(0.0, sigma))


def critical_path(bodies: list[dict[str, Any]], replies: list[str], waits: list[float]) -> tuple[float, int]:
    """(length, calls on it) of the longest chain of waits through the quote graph."""
    texts = [json.dumps(b.get("messages"), ensure_ascii=False) for b in bodies]
    # A reply is quoted by its first lines (a quote may be shortened to fit, never its start).
    keys = [json.dumps(r.strip()[:200], ensure_ascii=False)[1:-1] for r in replies]
    finish: list[float] = [0.0] * len(bodies)
    depth: list[int] = [0] * len(bodies)
    order = sorted(range(len(bodies)), key=lambda i: len(texts[i]))
    done: list[int] = []
    for i in order:  # a request quotes only replies that existed before it, so shorter prompts first is safe
        deps = [j for j in done if j != i and keys[j] and keys[j] in texts[i]]
        finish[i] = waits[i] + max((finish[j] for j in deps), default=0.0)
        depth[i] = 1 + max((depth[j] for j in deps), default=0)
        done.append(i)
    # Sorting by length is not a topological order in general: settle the longest paths by
    # relaxing until nothing changes (the graph is small and acyclic).
    for _ in range(len(bodies)):
        changed = False
        for i in range(len(bodies)):
            deps = [j for j in range(len(bodies)) if j != i and keys[j] and keys[j] in texts[i]]
            best = waits[i] + max((finish[j] for j in deps), default=0.0)
            if best > finish[i] + 1e-9:
                finish[i], depth[i] = best, 1 + max((depth[j] for j in deps), default=0)
                changed = True
        if not changed:
            break
    end = max(range(len(bodies)), key=lambda i: finish[i])
    return finish[end], depth[end]


async def run(rounds: int, median: float, sigma: float, chars: int, tmp: Path) -> dict[str, Any]:
    def answer(body: dict[str, Any], n: int) -> str:
        return loopback_reply(body, body_seed(body) % 1_000_000_007, chars)

    # Each reply in one chunk, with no cache bookkeeping: the figure is about scheduling, and on a
    # shared 2-core machine streaming 2,000 characters in small chunks costs a hop tens of ms.
    with LoopbackServer(reply=answer, latency=lambda b: latency(b, median, sigma), chunk_chars=1 << 16,
                        prefix_cache=False) as srv:
        cfg = build_config({}, Overrides(rounds=rounds, provider="openai", base_url=srv.base_url, roles=ROLES))
        session = new_session(PROBLEM, cfg, SessionOptions(state_dir=tmp, backoff_base_s=0.01))
        arrivals: list[float] = []
        inner = srv._record

        def stamped(body: dict[str, Any], headers: dict[str, str]) -> int:
            arrivals.append(time.perf_counter())
            return inner(body, headers)

        srv._record = stamped  # type: ignore[method-assign]
        state = await session.run()
        ended = time.perf_counter()
        bodies = srv.requests
    replies = [answer(b, 0) for b in bodies]
    waits = [latency(b, median, sigma) for b in bodies]
    path, calls = critical_path(bodies, replies, waits)
    wall = ended - arrivals[0]
    return {"status": state.status, "requests": len(bodies), "wall": wall, "path": path, "calls": calls,
            "bodies": sorted(json.dumps(b, sort_keys=True) for b in bodies)}


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        first = await run(args.rounds, args.median, args.sigma, args.chars, Path(tmp) / "a")
        second = await run(args.rounds, args.median, args.sigma, args.chars, Path(tmp) / "b")
    for name, r in (("run 1", first), ("run 2", second)):
        print(f"{name}: {r['status']}, {r['requests']} requests; wall {r['wall']:.2f} s, critical path "
              f"{r['path']:.2f} s ({r['calls']} calls); wall / critical path = {r['wall'] / r['path']:.3f}")
    same = first["bodies"] == second["bodies"]
    print(f"byte-identical requests in both runs: {'yes' if same else 'NO'} ({len(first['bodies'])} requests)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--median", type=float, default=1.0)
    ap.add_argument("--sigma", type=float, default=0.6)
    ap.add_argument("--chars", type=int, default=2000)
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()

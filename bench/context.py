"""Context benchmark: view-building cost as a debate grows, and fresh vs rolling summaries.

Run: .venv/bin/python bench/context.py [--rounds 200]

A zero-delay demo debate. (1) Times every view build (choosing the items under the
budget, rendering, counting) and compares round 10 with the last round: managed
context should cost the same however long the debate is. (2) Runs the same debate
with `fresh` and with `rolling` LLM summaries and prints the summarization input
tokens per round: fresh re-reads the whole perspective, rolling only what aged out.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from moot.core.config import Overrides, build_config  # noqa: E402
from moot.core.session import SessionOptions, new_session  # noqa: E402


async def run(rounds: int, strategy: str, state_dir: Path,
              roles: list[str]) -> tuple[dict[int, list[float]], dict[int, int], float]:
    cfg = build_config({"debate": {"summarization": {"strategy": strategy, "method": "llm"}}},
                       Overrides(rounds=rounds, provider="demo", roles=roles))
    session = new_session("Design a collaborative document editor for 1M daily users", cfg,
                          SessionOptions(state_dir=state_dir, demo_delay=0))
    builder = session.orchestrator.builder
    timings: dict[int, list[float]] = {}
    inner = builder.build

    def timed(record, history, budget):  # noqa: ANN001, ANN202
        t = time.perf_counter()
        try:
            return inner(record, history, budget)
        finally:
            if record.phase in ("proposal", "critique", "refinement"):
                timings.setdefault(record.round, []).append(time.perf_counter() - t)

    builder.build = timed  # type: ignore[method-assign]
    t0 = time.perf_counter()
    state = await session.run()
    wall = time.perf_counter() - t0
    inputs = {r.number: sum(s.metadata.input_tokens for s in r.summaries.values()) for r in state.rounds}
    return timings, inputs, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=200)
    args = ap.parse_args()
    roles = ["architect", "performance", "kiss"]
    with tempfile.TemporaryDirectory() as tmp:
        rolling_t, rolling_in, rolling_wall = asyncio.run(run(args.rounds, "rolling", Path(tmp) / "r", roles))
        fresh_t, fresh_in, fresh_wall = asyncio.run(run(args.rounds, "fresh", Path(tmp) / "f", roles))
    last = args.rounds
    print(f"debate: {args.rounds} rounds × {len(roles)} agents, demo provider, zero delay")
    for name, t in (("rolling", rolling_t), ("fresh", fresh_t)):
        m10 = statistics.median(t[10]) * 1000
        mlast = statistics.median(t[last]) * 1000
        print(f"{name:>7}: median view build round 10 {m10:.2f} ms, round {last} {mlast:.2f} ms "
              f"(ratio {mlast / m10:.2f}; target ≤ 1.5)")
    print("summarization input tokens (all agents) per round:")
    marks = sorted({2, 5, 10, 25, 50, 100, 150, last} & set(fresh_in))
    print("  round  " + "".join(f"{r:>9}" for r in marks))
    print("  fresh  " + "".join(f"{fresh_in[r]:>9}" for r in marks))
    print("  rolling" + "".join(f"{rolling_in[r]:>9}" for r in marks))
    print(f"  total: fresh {sum(fresh_in.values()):,} vs rolling {sum(rolling_in.values()):,} "
          f"(wall {fresh_wall:.1f} s vs {rolling_wall:.1f} s)")


if __name__ == "__main__":
    main()

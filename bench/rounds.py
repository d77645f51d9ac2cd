"""Rounds benchmark with default settings: waves of calls, and whether late rounds cost what early ones do.

Run: .venv/bin/python bench/rounds.py [--long 200]

1. One round of the default 3 agents against a loopback server that takes 1 s per call:
   proposals, critiques and refinements should be one wave each, then the synthesis —
   4 waves, about 4 s (target ≤ 4.5 s wall, start-up included).
2. 20 and `--long` demo rounds (zero delay) with default settings: the median wall time of
   a round among the first five vs the last five (target ratio ≤ 1.2).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moot.core.config import Overrides, build_config  # noqa: E402
from moot.core.events import Event, RoundStarted  # noqa: E402
from moot.core.session import SessionOptions, new_session  # noqa: E402
from tests.loopback import LoopbackServer  # noqa: E402


def one_round_wall(state_dir: Path) -> tuple[float, int]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with LoopbackServer(delay=1.0) as srv:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "moot", "run", "Design a URL shortener", "--headless", "-r", "1",
                            "--provider", "openai", "--base-url", srv.base_url, "--state-dir", str(state_dir)],
                           capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        assert r.returncode == 0, r.stderr
        return wall, srv.calls


async def round_times(rounds: int, state_dir: Path) -> list[float]:
    cfg = build_config({}, Overrides(rounds=rounds, provider="demo"))
    session = new_session("Design a collaborative document editor for 1M daily users", cfg,
                          SessionOptions(state_dir=state_dir, demo_delay=0))
    starts: list[float] = []

    def listen(event: Event) -> None:
        if isinstance(event, RoundStarted):
            starts.append(time.perf_counter())

    session.bus.listen(listen)
    await session.run()
    starts.append(time.perf_counter())
    return [b - a for a, b in zip(starts, starts[1:])]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--long", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        one_round_wall(Path(tmp) / "warm")
        wall, calls = one_round_wall(Path(tmp) / "one")
        print(f"1 round × 3 agents, 1 s per call, defaults: {wall:.2f} s wall for {calls} calls "
              f"(target ≤ 4.5 s: proposals, critiques, refinements, synthesis = 4 waves)")
        for rounds in (20, args.long):
            times = asyncio.run(round_times(rounds, Path(tmp) / f"r{rounds}"))
            early, late = statistics.median(times[:5]), statistics.median(times[-5:])
            print(f"{rounds} demo rounds, defaults: median round {early * 1000:.0f} ms in rounds 1–5, "
                  f"{late * 1000:.0f} ms in the last five (ratio {late / early:.2f}; target ≤ 1.2); "
                  f"total {sum(times):.1f} s")


if __name__ == "__main__":
    main()

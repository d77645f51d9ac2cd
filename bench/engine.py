"""Engine benchmark: orchestration overhead per call and bytes written as a debate grows.

Run: .venv/bin/python bench/engine.py [--rounds 50]

Uses the offline demo provider with zero delay, so what is measured is moot itself:
building views, folding events, streaming deltas through the bus, writing the log.
Figures are ratios measured in one run; see bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from moot.core.config import Overrides, build_config  # noqa: E402
from moot.core.session import SessionOptions, new_session  # noqa: E402


async def run(rounds: int, state_dir: Path, roles: list[str]) -> dict:
    cfg = build_config({"debate": {"summarization": {"method": "rule-based"}}},
                       Overrides(rounds=rounds, provider="demo", roles=roles))
    session = new_session("Design a URL shortener for 100M links a day", cfg,
                          SessionOptions(state_dir=state_dir, demo_delay=0))
    provider_s = 0.0
    pool = session.providers
    original_get = pool.get

    def timed_get(agent):  # noqa: ANN001, ANN202 - wraps the provider to time only its own work
        nonlocal provider_s
        p = original_get(agent)
        if getattr(p, "_timed", False):
            return p
        inner = p.stream

        async def stream(request):  # noqa: ANN001, ANN202 - time only the provider's own steps
            nonlocal provider_s
            items = inner(request).__aiter__()
            while True:
                t = time.perf_counter()
                try:
                    item = await items.__anext__()
                except StopAsyncIteration:
                    provider_s += time.perf_counter() - t
                    return
                provider_s += time.perf_counter() - t
                yield item

        p.stream = stream  # type: ignore[method-assign]
        p._timed = True  # type: ignore[attr-defined]
        return p

    pool.get = timed_get  # type: ignore[method-assign]
    t0, c0 = time.perf_counter(), time.process_time()
    state = await session.run()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    # Every call's record, read back from the log (a long debate's state holds its last rounds only;
    # a moot from before that held them all: the same script measures both).
    steps = session.folder.steps() if hasattr(session.folder, "steps") else state.rounds
    calls = sum(len(r.calls) for r in steps)
    return {"state": state, "wall": wall, "cpu": cpu, "provider_s": provider_s, "calls": calls,
            "bytes_written": session.writer.bytes_written, "snapshots": session.writer.snapshots,
            "events_path": session.folder.events_path}


def bytes_per_contribution_by_round(events_path: Path) -> dict[int, float]:
    """Event-log bytes appended during each round, divided by that round's contributions."""
    per_round: dict[int, list[int]] = {}
    current = 0
    for line in events_path.read_bytes().splitlines(keepends=True):
        e = json.loads(line)
        if e["type"] == "round_started":
            current = e["round"]
        if current:
            b = per_round.setdefault(current, [0, 0])
            b[0] += len(line)
            b[1] += e["type"] == "contribution_added"
    return {r: b[0] / max(1, b[1]) for r, b in per_round.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=50)
    args = ap.parse_args()
    roles = ["architect", "performance", "kiss"]
    with tempfile.TemporaryDirectory() as tmp:
        # one round more, so round N is an ordinary round (the last one also holds the synthesis)
        big = asyncio.run(run(args.rounds + 1, Path(tmp) / "big", roles))
        two = asyncio.run(run(2, Path(tmp) / "two", roles))
        twenty = asyncio.run(run(20, Path(tmp) / "twenty", roles))
        per = bytes_per_contribution_by_round(big["events_path"])
    overhead_ms = (big["wall"] - big["provider_s"]) / big["calls"] * 1000
    print(f"debate: {args.rounds + 1} rounds × {len(roles)} agents, demo provider, zero delay")
    print(f"calls: {big['calls']}, wall {big['wall']:.2f} s, inside the provider {big['provider_s']:.2f} s")
    print(f"orchestration overhead per call: {overhead_ms:.2f} ms (wall {big['wall'] / big['calls'] * 1000:.2f} ms/call)")
    print(f"CPU per call (the whole process, provider included; steady on a busy machine): "
          f"{big['cpu'] / big['calls'] * 1000:.2f} ms")
    r2, rn = per[2], per[args.rounds]
    print(f"event-log bytes per contribution: round 2 {r2:.0f} B, round {args.rounds} {rn:.0f} B "
          f"(ratio {rn / r2:.3f}; target within 10%)")
    ratio = twenty["bytes_written"] / two["bytes_written"]
    print(f"total bytes written (log + snapshots): 2 rounds {two['bytes_written'] / 1e6:.2f} MB, "
          f"20 rounds {twenty['bytes_written'] / 1e6:.2f} MB (ratio {ratio:.1f}; target ≤ 10), "
          f"{args.rounds + 1} rounds {big['bytes_written'] / 1e6:.2f} MB in {big['snapshots']} snapshots")


if __name__ == "__main__":
    main()

"""What a long headless run keeps growing: allocation sites and object counts compared between two turns.

Run: .venv/bin/python bench/memory_growth.py --turns 2000,8000          # tracemalloc: top growing lines
     .venv/bin/python bench/memory_growth.py --turns 2000,8000 --objects  # gc: object counts by type (faster)

One in-process `moot run --headless --protocol conversation --provider demo --demo-delay 0`
(the same debate as `bench/memory.py`); when the engine folds the event that begins each turn
named, the script records a snapshot, and at the end prints what grew between the first and the
last: by allocation line (tracemalloc, ~3× slower) or by object type (gc.get_objects). A flat
memory profile shows nothing here growing in proportion to the turns.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import tempfile
import tracemalloc
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moot.cli import main as moot_main  # noqa: E402
from moot.core.events import RoundStarted  # noqa: E402
from moot.core.orchestrator import Orchestrator  # noqa: E402

PROBLEM = "Design a collaborative document editor for 1M daily users"
AGENTS = "architect,performance,security,kiss"


def object_counts() -> Counter[str]:
    gc.collect()
    return Counter(type(o).__qualname__ for o in gc.get_objects())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", default="2000,8000", help="comma-separated turns to compare (the last is the run's length)")
    ap.add_argument("--objects", action="store_true", help="count objects by type instead of tracing allocations")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--depth", type=int, default=4, help="frames kept per allocation (more is slower)")
    args = ap.parse_args()
    marks = sorted(int(t) for t in args.turns.split(","))
    snaps: dict[int, object] = {}

    fold = Orchestrator._fold

    def watched(self: Orchestrator, event: object) -> None:
        fold(self, event)  # type: ignore[arg-type]  # (every event the bus folds)
        if isinstance(event, RoundStarted) and event.round in marks and event.round not in snaps:
            snaps[event.round] = object_counts() if args.objects else tracemalloc.take_snapshot()
            print(f"turn {event.round}: snapshot", file=sys.__stderr__, flush=True)

    Orchestrator._fold = watched  # type: ignore[method-assign]  # (this script watches the fold; moot is unchanged)
    if not args.objects:
        tracemalloc.start(args.depth)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            moot_main(["run", PROBLEM, "--headless", "--protocol", "conversation", "--turns", str(marks[-1] + 1),
                       "-a", AGENTS, "--provider", "demo", "--demo-delay", "0", "--state-dir", tmp])
    first, last = snaps[marks[0]], snaps[marks[-1]]
    span = marks[-1] - marks[0]
    if args.objects:
        assert isinstance(first, Counter) and isinstance(last, Counter)
        grew = sorted(((last[k] - first[k], k) for k in last), reverse=True)[: args.top]
        for n, k in grew:
            print(f"{n:+9,d} ({n / span:+.2f} a turn)  {k}")
        return
    assert isinstance(first, tracemalloc.Snapshot) and isinstance(last, tracemalloc.Snapshot)
    for stat in last.compare_to(first, "traceback")[: args.top]:
        print(f"{stat.size_diff / 1024:+10.1f} KiB ({stat.size_diff / span:+.0f} B a turn) {stat.count_diff:+8,d} blocks")
        for line in stat.traceback.format():
            print("      " + line)


if __name__ == "__main__":
    main()

"""The sessions screen with hundreds of saved debates: how long until its rows are ready.

Run: .venv/bin/python bench/sessions.py [--debates 300] [--rounds 3]

One demo debate is run, then copied N times into a state dir (each copy a debate of its own).
Measured in one run: listing every row by loading each debate (what `moot list` does), the
sessions list with no cache (the first open), and with its cache (every later open; only
debates whose files changed are read again). The ratio is the figure to trust.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moot.core.storage.sessions import CACHE_FILE, SessionList  # noqa: E402
from moot.core.storage.state_dir import StateDir, summarize_folder  # noqa: E402
from tests.conftest import run_debate  # noqa: E402


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--debates", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _, folder = asyncio.run(run_debate(work / "one", "Design a URL shortener", rounds=args.rounds))
        size = sum(p.stat().st_size for p in folder.path.iterdir())
        root = work / "debates"
        for i in range(args.debates):
            shutil.copytree(folder.path, root / f"20260101-000000-{i:04x}")
        sd = StateDir(root)
        folders = sd.debates()
        full = timed(lambda: [summarize_folder(f) for f in folders])
        cold = timed(lambda: SessionList(sd).rows())
        warm = min(timed(lambda: SessionList(sd).rows()) for _ in range(3))
        cache_kb = (root / CACHE_FILE).stat().st_size / 1024
    print(f"{args.debates} debates of {args.rounds} rounds ({size / 1024:.0f} KB each on disk)")
    print(f"  load every debate (moot list):   {full * 1000:8.0f} ms  ({full / args.debates * 1000:.2f} ms each)")
    print(f"  sessions list, first open:       {cold * 1000:8.0f} ms  (reads every debate, writes the cache)")
    print(f"  sessions list, cached:           {warm * 1000:8.0f} ms  ({cache_kb:.0f} KB cache)")
    print(f"  cached vs loading every debate:  {warm / full:8.3f}×")


if __name__ == "__main__":
    main()

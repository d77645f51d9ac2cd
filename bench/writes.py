"""Bytes written: what a long conversation writes to disk against what its folder keeps.

Run: .venv/bin/python bench/writes.py                  # 3,000 and 10,000 turns
     .venv/bin/python bench/writes.py --turns 1000,3000

Each size is one headless demo conversation (4 agents, moot's defaults, zero delay) run in a
child process that, when the debate is over, reads its own `/proc/self/io`: `wchar` counts
every byte handed to `write`/`pwrite` (the event log, the snapshots, SQLite's pages and its
journal), whatever the page cache does with them; the bytes the child printed (stderr and stdout,
sent to files) are taken off. The folder's final size is the sum of its files. Reported: bytes
written, the folder, their ratio (target ≤ 4 at 10,000 turns), and bytes written per turn and
per kept byte, with the split by file kind from the child's own count of snapshot bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROBLEM = "Design a collaborative document editor for 1M daily users"
AGENTS = "architect,performance,security,kiss"


def child(turns: int, state_dir: Path, report: Path) -> int:
    """Run one conversation in this process, then write what /proc/self/io says."""
    from moot.cli import main

    code = main(["run", PROBLEM, "--headless", "--provider", "demo", "--protocol", "conversation",
                 "--turns", str(turns), "-a", AGENTS, "--state-dir", str(state_dir)])
    sys.stdout.flush()
    sys.stderr.flush()
    io = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    report.write_text(json.dumps({"code": code, "wchar": int(io["wchar"]), "write_bytes": int(io["write_bytes"])}))
    return 0


def folder_bytes(state_dir: Path) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for path in state_dir.rglob("*"):
        if path.is_file():
            kind = path.name if path.parent.parent == state_dir else path.parent.name
            sizes[kind] = sizes.get(kind, 0) + path.stat().st_size
    return sizes


def measure(turns: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="moot-writes-") as tmp:
        base = Path(tmp)
        state, report = base / "debates", base / "report.json"
        out, err = base / "stdout", base / "stderr"
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY")}
        env["MOOT_DEMO_DELAY"] = "0"
        with out.open("wb") as o, err.open("wb") as e:
            subprocess.run([sys.executable, __file__, "--child", str(turns), str(state), str(report)],
                           stdout=o, stderr=e, env=env, check=True)
        data = json.loads(report.read_text())
        printed = out.stat().st_size + err.stat().st_size
        written = data["wchar"] - printed
        sizes = folder_bytes(state)
        kept = sum(sizes.values())
        return {"turns": turns, "code": data["code"], "written": written, "kept": kept, "files": sizes}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--turns", default="3000,10000")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(int(args.child[0]), Path(args.child[1]), Path(args.child[2]))
    for turns in (int(t) for t in args.turns.split(",")):
        r = measure(turns)
        written, kept = int(r["written"]), int(r["kept"])  # type: ignore[call-overload]
        files = ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(r["files"].items()))  # type: ignore[union-attr]
        print(f"{turns:>6} turns (exit {r['code']}): wrote {written / 1e6:.1f} MB, folder {kept / 1e6:.1f} MB "
              f"({files}); written / kept = {written / kept:.2f}; {written / turns / 1e3:.1f} KB written a turn")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Start-up benchmark: from `moot run … --headless` starting to its first request.

Run: .venv/bin/python bench/startup.py [--runs 7]

- openai: the first chat request reaching a loopback OpenAI-compatible server;
- demo: the first `call_started` line reaching the debate's event log (the demo provider
  makes no request; the call it starts is the equivalent moment).
Median and range over several runs, after one warm-up run (page cache, .pyc files). Also
the slowest imports of `moot.cli` and of the headless run path (`python -X importtime`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.loopback import LoopbackServer  # noqa: E402

MOOT = [sys.executable, "-m", "moot"]


def first_request(provider: str, srv: LoopbackServer, state_dir: Path) -> float:
    # As on a user's machine: bytecode caches are written (a sandbox may switch that off, and
    # then every run compiles moot's sources again).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["MOOT_STATE_DIR"] = str(state_dir)
    args = [*MOOT, "run", "Design a cache", "--headless", "-r", "1", "-a", "kiss"]
    args += ["--provider", "openai", "--base-url", srv.base_url] if provider == "openai" else ["--provider", "demo"]
    before = srv.calls
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        while time.perf_counter() - t0 < 30:
            if provider == "openai" and srv.calls > before:
                return time.perf_counter() - t0
            if provider == "demo":
                # A debate folder is made under a hidden name and renamed once complete.
                for log in state_dir.glob("[!.]*/events.jsonl"):
                    try:
                        if b'"call_started"' in log.read_bytes():
                            return time.perf_counter() - t0
                    except FileNotFoundError:
                        pass
            time.sleep(0.001)
        raise RuntimeError("no first request within 30 s")
    finally:
        proc.wait(timeout=60)


def slowest_imports(code: str, n: int = 8) -> list[tuple[int, str]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, env=env)
    rows = []
    for line in r.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LoopbackServer() as srv:
        for provider in ("demo", "openai"):
            first_request(provider, srv, Path(tmp) / f"warm-{provider}")
            times = [first_request(provider, srv, Path(tmp) / f"{provider}-{i}") for i in range(args.runs)]
            print(f"{provider:>6}: first request after median {statistics.median(times):.3f} s "
                  f"(min {min(times):.3f}, max {max(times):.3f}; {args.runs} runs)")
    for code in ("import moot.cli", "import moot.cli, moot.core.session, moot.core.observe.headless, openai"):
        total = slowest_imports(code, 1)
        print(f"\n`{code}`: {total[0][0] / 1000:.0f} ms cumulative at the top; slowest:")
        for us, name in slowest_imports(code)[1:]:
            print(f"  {us / 1000:7.1f} ms  {name.strip()}")


if __name__ == "__main__":
    main()

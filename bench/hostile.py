"""A hostile server against `moot run --headless`: how long it takes and how much memory it holds.

Run: .venv/bin/python bench/hostile.py

Each row starts a loopback OpenAI-compatible server misbehaving one way (`tests/loopback.py`)
and runs a one-round, one-agent debate against it as a separate process, reporting its wall
time, exit code and peak RSS (`wait4`), each beside an honest server's run measured in the
same session:
- a window probe that never ends: `/props` dripping a byte a second, `/api/show` sending an
  event a fifth of a second or 1 MiB chunks, `/props` inflating 1 MiB of spaces from every
  kilobyte on the wire (gzip), all forever;
- a reply that never ends (as fast as it is read), with `debate.timeout_s = 20`;
- a 5,243,162-character reply to calls allowed 1000 tokens, and Ctrl-C once the critiques
  (which quote it) are being built: the seconds from SIGINT to the process's exit, beside the
  same with ordinary replies (streamed slowly, so the critiques are in flight).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.loopback import Faults, LoopbackServer  # noqa: E402

LIMIT_S = 120.0
"""A run still going after this is stopped (SIGINT) and reported as such."""


def run(srv: LoopbackServer, workdir: Path, *, agents: str = "architect", timeout_s: float = 120,
        interrupt_at: str | None = None) -> dict[str, Any]:
    """One `moot run` against `srv`: wall seconds, exit code, peak RSS (MiB); with
    `interrupt_at`, SIGINT once that text shows on stderr, and the seconds it took to act."""
    cfg = workdir / "moot.json"
    cfg.write_text(json.dumps({"debate": {"max_retries": 0, "max_concurrency": 1, "timeout_s": timeout_s}}))
    err_path = workdir / "err"
    args = [sys.executable, "-m", "moot", "run", "Design a URL shortener for a small team", "--headless", "-r",
            "2" if interrupt_at else "1", "-a", agents, "--base-url", srv.base_url, "-c", str(cfg),
            "--state-dir", str(workdir / "debates")]
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY")}
    with err_path.open("w") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env)
        sent = None
        while True:  # wait4, not Popen.wait: the peak RSS of this one child
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            elapsed = time.perf_counter() - t0
            if sent is None and (elapsed > LIMIT_S or (interrupt_at and interrupt_at in err_path.read_text())):
                if interrupt_at:
                    time.sleep(1.0)  # into the phase, not at its first line
                proc.send_signal(signal.SIGINT)
                sent = time.perf_counter()
            time.sleep(0.02)
        end = time.perf_counter()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"wall_s": end - t0, "rc": proc.returncode, "peak_mib": usage.ru_maxrss / 1024,
            "sigint_to_exit_s": (end - sent) if sent is not None else None,
            "stopped": sent is not None and not interrupt_at}


def main() -> None:
    scenarios: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("honest server", {}, {}),
        ("/props drips a byte a second", {"faults": Faults(discovery={"/props": "drip"})}, {}),
        ("/api/show streams events forever", {"faults": Faults(discovery={"/api/show": "stream"})}, {}),
        ("/api/show floods 1 MiB chunks", {"faults": Faults(discovery={"/api/show": "flood"})}, {}),
        ("/props is a gzip bomb (1 MiB a KB)", {"faults": Faults(discovery={"/props": "bomb"})}, {}),
        ("a reply that never ends (timeout_s 20)", {"faults": Faults(endless_reply=True)}, {"timeout_s": 20}),
        ("600-character replies, Ctrl-C in the critiques", {"chunk_delay": 0.05},
         {"agents": "architect,kiss", "interrupt_at": "critiques"}),
        ("5 MB replies, Ctrl-C in the critiques", {"reply_chars": 5_243_162, "chunk_chars": 65536},
         {"agents": "architect,kiss", "interrupt_at": "critiques"}),
    ]
    print(f"{'scenario':48} {'exit':>4} {'wall s':>7} {'peak MiB':>9} {'SIGINT→exit s':>14}")
    base: dict[str, Any] | None = None
    for name, server_args, run_args in scenarios:
        with tempfile.TemporaryDirectory() as d, LoopbackServer(**server_args) as srv:
            r = run(srv, Path(d), **run_args)
        base = base or r
        sig = f"{r['sigint_to_exit_s']:.2f}" if r["sigint_to_exit_s"] is not None else "—"
        note = f"  (stopped: still running after {LIMIT_S:g} s)" if r["stopped"] else ""
        print(f"{name:48} {r['rc']:>4} {r['wall_s']:>7.1f} {r['peak_mib']:>9.0f} {sig:>14}"
              f"   ×{r['wall_s'] / base['wall_s']:.2f} time, ×{r['peak_mib'] / base['peak_mib']:.2f} memory{note}")


if __name__ == "__main__":
    main()

"""How long `moot run --trace` holds the process after "saved" when the collector is not there.

Run: .venv/bin/python bench/trace_exit.py [--runs 3]   (needs the otel extra: pip install -e '.[otel]')

Three collectors: none (the connection is refused), one that accepts and never answers (with
OTEL_EXPORTER_OTLP_TIMEOUT=30, so the exporter alone would wait 30 s), and a real receiver that
answers 200 (the baseline: a flush that succeeds). Median seconds from the "saved in" line on
stderr to the process's exit, over a one-round debate on the demo provider.
"""

from __future__ import annotations

import argparse
import http.server
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


class _Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def after_saved(endpoint: str, state_dir: Path, timeout: str | None = None) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update({"MOOT_DEMO_DELAY": "0", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint})
    if timeout:
        env["OTEL_EXPORTER_OTLP_TIMEOUT"] = timeout
    proc = subprocess.Popen([sys.executable, "-m", "moot", "run", "Design a cache", "--provider", "demo",
                             "--headless", "-r", "1", "-a", "kiss", "--trace", "--state-dir", str(state_dir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    saved, last = None, ""
    for line in proc.stderr:
        if line.startswith("saved in"):
            saved = time.perf_counter()
        last = line.strip()
    proc.wait()
    assert saved is not None, last
    return time.perf_counter() - saved, last


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    silent = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    threading.Thread(target=lambda: [held.append(silent.accept()[0]) for _ in iter(int, 1)], daemon=True).start()
    receiver = http.server.HTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    cases = [("refused (no collector)", "http://127.0.0.1:9", None),
             ("accepts, never answers (timeout 30 s)", f"http://127.0.0.1:{silent.getsockname()[1]}", "30"),
             ("answers 200 (baseline)", f"http://127.0.0.1:{receiver.server_address[1]}", None)]
    with tempfile.TemporaryDirectory() as tmp:
        for name, endpoint, timeout in cases:
            runs = [after_saved(endpoint, Path(tmp) / f"{name[:5]}-{i}", timeout) for i in range(args.runs)]
            times = [t for t, _ in runs]
            print(f"{name:>38}: {statistics.median(times):5.2f} s after 'saved' (min {min(times):.2f}, "
                  f"max {max(times):.2f}; {args.runs} runs) — {runs[-1][1][:70]}")
    receiver.shutdown()


if __name__ == "__main__":
    main()

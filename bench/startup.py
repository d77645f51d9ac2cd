"""Start-up benchmark: from `moot run` starting to its first screen (in a terminal) and to its
first request (headless).

Run: .venv/bin/python bench/startup.py [--runs 7] [--before OTHER/.venv/bin/moot]

- first screen: `moot run` in a tmux pane of 120x36 (a private tmux server), polled with
  `tmux capture-pane` until the header names the problem; with `--before`, that moot's first
  screen too, the two run alternately (a busy machine slows both alike), with their ratio;

- openai: the first chat request reaching a loopback OpenAI-compatible server, the first time
  moot meets that endpoint (it asks the server for the model's window) and when it remembers
  the window from an earlier run (`MOOT_WINDOW_CACHE`; it asks nothing);
- demo: the first `call_started` line reaching the debate's event log (the demo provider
  makes no request; the call it starts is the equivalent moment);
- the floor: `python -c "import openai"` alone, which a run with the openai provider cannot skip.
Median and range over several runs, after one warm-up run (page cache, .pyc files), as wall
time and as the process's CPU time at that moment (`/proc/PID/stat`: stable on a busy machine,
where wall time is not). Also the slowest imports of `moot.cli` and of the headless run path
(`python -X importtime`).
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


TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process, all its threads (`/proc/PID/stat`)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def first_request(provider: str, srv: LoopbackServer, state_dir: Path, window_cache: Path) -> tuple[float, float]:
    """(wall, CPU) seconds from the start of `moot run` to its first request."""
    # As on a user's machine: bytecode caches are written (a sandbox may switch that off, and
    # then every run compiles moot's sources again).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["MOOT_STATE_DIR"] = str(state_dir)
    env["MOOT_WINDOW_CACHE"] = str(window_cache)
    args = [*MOOT, "run", "Design a cache", "--headless", "-r", "1", "-a", "kiss"]
    args += ["--provider", "openai", "--base-url", srv.base_url] if provider == "openai" else ["--provider", "demo"]
    before = srv.calls
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        while time.perf_counter() - t0 < 30:
            if provider == "openai" and srv.calls > before:
                return time.perf_counter() - t0, cpu_seconds(proc.pid)
            if provider == "demo":
                # A debate folder is made under a hidden name and renamed once complete.
                if called(state_dir):
                    return time.perf_counter() - t0, cpu_seconds(proc.pid)
            time.sleep(0.001)
        raise RuntimeError("no first request within 30 s")
    finally:
        proc.wait(timeout=60)


def first_screen(moot: str, provider: str, srv: LoopbackServer, tmp: Path,
                 window_cache: Path) -> tuple[float, float, float, float]:
    """Seconds from starting `moot run` in a 120x36 tmux pane to its header naming the problem, and
    to its first request (its first `call_started` in its event log, written as the request is sent);
    and the process's CPU seconds at its first screen and at its first request."""
    problem = "Design a cache"
    folder = Path(tempfile.mkdtemp(dir=tmp))
    socket = f"moot-bench-{os.getpid()}-{folder.name}"  # a tmux server of its own: nobody else's is touched
    tmux = ["tmux", "-L", socket]
    env = f"env -u PYTHONDONTWRITEBYTECODE MOOT_STATE_DIR={folder} MOOT_WINDOW_CACHE={window_cache} MOOT_DEMO_DELAY=0.05"
    flags = f"--provider openai --base-url {srv.base_url}" if provider == "openai" else "--provider demo"
    command = f"cd {folder} && {env} {moot} run '{problem}' -r 1 -a kiss {flags}; sleep 60"
    subprocess.run([*tmux, "new-session", "-d", "-s", "bench", "-x", "120", "-y", "36", "sleep 60"], check=True)
    screen = request = None
    cpu = request_cpu = 0.0
    try:
        t0 = time.perf_counter()
        subprocess.run([*tmux, "respawn-pane", "-k", "-t", "bench", command], check=True)
        while time.perf_counter() - t0 < 30 and (screen is None or request is None):
            if screen is None:
                top = subprocess.run([*tmux, "capture-pane", "-p", "-t", "bench", "-S", "0", "-E", "0"],
                                     capture_output=True, text=True).stdout
                if problem in top:
                    screen = time.perf_counter() - t0
                    cpu = pane_cpu(tmux)
            if request is None and called(folder):  # its own log: a run killed before may still call the server
                request = time.perf_counter() - t0
                request_cpu = pane_cpu(tmux)
            time.sleep(0.003)
        if screen is None or request is None:
            raise RuntimeError("no first screen or no first request within 30 s")
        return screen, request, cpu, request_cpu
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def pane_cpu(tmux: list[str]) -> float:
    """CPU seconds so far of the moot process in the pane (the pane's shell's child): steadier
    than wall time on a busy machine."""
    shell = subprocess.run([*tmux, "display", "-p", "-t", "bench", "#{pane_pid}"], capture_output=True,
                           text=True).stdout.strip()
    try:
        children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
        return sum(cpu_seconds(int(pid)) for pid in children)
    except (OSError, ValueError):
        return float("nan")


def called(state_dir: Path) -> bool:
    """A debate under `state_dir` has logged its first `call_started`."""
    for log in state_dir.glob("[!.]*/events.jsonl"):
        try:
            if b'"call_started"' in log.read_bytes():
                return True
        except FileNotFoundError:
            pass
    return False


def screen_line(label: str, runs: list[float]) -> str:
    return f"{label}: median {statistics.median(runs):.3f} s (min {min(runs):.3f}, max {max(runs):.3f}); {len(runs)} runs"


def slowest_imports(code: str, n: int = 8) -> list[tuple[int, str]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, env=env)
    rows = []
    for line in r.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:n]


def sdk_import() -> tuple[float, float]:
    """(wall, CPU) seconds of a Python process that imports the openai SDK and exits."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "import openai"], env=env)
    _, _, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def line(label: str, runs: list[tuple[float, float]]) -> str:
    wall, cpu = [w for w, _ in runs], [c for _, c in runs]
    return (f"{label}: median {statistics.median(wall):.3f} s wall (min {min(wall):.3f}, max {max(wall):.3f}), "
            f"{statistics.median(cpu):.3f} s CPU (min {min(cpu):.3f}, max {max(cpu):.3f}); {len(runs)} runs")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--before", help="another moot executable (e.g. an older checkout's) whose first screen "
                                     "is measured alternately with this one's")
    ap.add_argument("--this", help="the moot executable measured as this one (default: this venv's)")
    ap.add_argument("--screen-only", action="store_true", help="only the first screen")
    args = ap.parse_args()
    n = args.runs
    this = args.this or str(Path(sys.executable).with_name("moot"))
    with tempfile.TemporaryDirectory() as tmp, LoopbackServer() as srv:
        t = Path(tmp)
        kept = t / "windows.json"  # one file for every run: the window is remembered after the first
        print(f"load average at the start: {os.getloadavg()[0]:.2f}")
        for provider in ("demo", "openai"):
            moots = {"this": this, **({"before": args.before} if args.before else {})}
            runs: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in moots}
            for moot in moots.values():
                first_screen(moot, provider, srv, t, kept)  # warm-up: .pyc files written, the window remembered
            for _ in range(n):
                for name, moot in moots.items():  # alternately
                    runs[name].append(first_screen(moot, provider, srv, t, kept))
            for name in moots:
                print(screen_line(f"first screen,  {provider}, {name}", [w for w, _, _, _ in runs[name]]))
                print(screen_line(f"  CPU at it,   {provider}, {name}", [c for _, _, c, _ in runs[name]]))
                print(screen_line(f"first request, {provider}, {name} (in the TUI)", [r for _, r, _, _ in runs[name]]))
                print(screen_line(f"  CPU at it,   {provider}, {name}", [c for _, _, _, c in runs[name]]))
            if args.before:
                for i, what in ((0, "first screen"), (2, "CPU at the first screen"), (1, "first request"),
                                (3, "CPU at the first request")):
                    mid = {name: statistics.median(run[i] for run in r) for name, r in runs.items()}
                    print(f"{what}, {provider}: this / before = {mid['this'] / mid['before']:.2f}")
        print(f"load average after the first screens: {os.getloadavg()[0]:.2f}")
        if args.screen_only:
            return
        first_request("demo", srv, t / "warm-demo", kept)
        first_request("openai", srv, t / "warm-openai", kept)  # also remembers the window in `kept`
        print(line("  demo, first call_started", [first_request("demo", srv, t / f"demo-{i}", kept)
                                                  for i in range(n)]))
        print(line("openai, window asked (first run)",
                   [first_request("openai", srv, t / f"ask-{i}", t / f"fresh-{i}.json") for i in range(n)]))
        print(line("openai, window remembered", [first_request("openai", srv, t / f"known-{i}", kept)
                                                 for i in range(n)]))
        sdk_import()
        print(line("the SDK's own import: python -c 'import openai'", [sdk_import() for _ in range(n)]))
    for code in ("import moot.cli", "import moot.cli, moot.core.session, moot.core.observe.headless, openai"):
        total = slowest_imports(code, 1)
        print(f"\n`{code}`: {total[0][0] / 1000:.0f} ms cumulative at the top; slowest:")
        for us, name in slowest_imports(code)[1:]:
            print(f"  {us / 1000:7.1f} ms  {name.strip()}")


if __name__ == "__main__":
    main()

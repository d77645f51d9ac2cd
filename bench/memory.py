"""Memory benchmark: peak RSS of a headless demo conversation as it grows, and resuming the largest.

Run: .venv/bin/python bench/memory.py            # 1,000 and 10,000 turns
     .venv/bin/python bench/memory.py --full     # 1,000, 10,000, 20,000 and 100,000 turns (an hour or more)
     .venv/bin/python bench/memory.py --turns 1000,20000
     .venv/bin/python bench/memory.py --resume DIR    # only the resume, of the debate in folder DIR
     .venv/bin/python bench/memory.py --readers DIR   # only the readers, on a debate folder already made

Each size is one `moot run --headless --protocol conversation --provider demo --demo-delay 0`
process, 4 agents, seed-003 defaults; its peak RSS and CPU time come from `wait4` (the kernel's
count for that process alone, so other work on the machine does not move them). Reported per
size: peak RSS, wall and CPU time per turn, the event log's bytes per turn and the snapshot's
size; then each peak over the first size's (target: 20,000 turns ≤ 1.3 × 1,000), and the CPU a
turn costs between the first size and the last (start-up left out).

Resume at the largest size: its folder cut inside the last turn, as a crash there leaves it at
worst (the log up to that turn's start; the snapshot as old as the writer lets it get: the log
has grown by `SNAPSHOT_SPAN` snapshots' worth since, or threefold, whichever is less): `moot
resume` start → its first request, and that process's peak RSS until then; the search index
copied as the crash leaves it, then once more deleted (a resume rebuilds it from the whole log).

Reading the largest back, one process each (`READERS`, output thrown away): the peak RSS of
the markdown and HTML reports, `moot show --json`, `moot context --turn` (first and last turn)
and `moot watch --headless`; then the HTML report's peak over the markdown report's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moot.core.search.index import INDEX_FILE  # noqa: E402
from moot.core.storage.folder import DebateFolder  # noqa: E402
from moot.core.storage.log_writer import CHECKPOINT_GROWTH, MIN_CHECKPOINT_BYTES  # noqa: E402

try:  # (the same script measures moot before bounded snapshots: the log then only triples)
    from moot.core.storage.log_writer import SNAPSHOT_SPAN  # noqa: E402
except ImportError:
    SNAPSHOT_SPAN = 1 << 30

PROBLEM = "Design a collaborative document editor for 1M daily users"
AGENTS = "architect,performance,security,kiss"
MOOT = [sys.executable, "-m", "moot"]


@dataclass
class Run:
    turns: int
    peak_mb: float
    wall_s: float
    cpu_s: float
    log_bytes: int
    snapshot_bytes: int
    folder: Path


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY")}
    env.update(extra)
    return env


def wait_usage(proc: subprocess.Popen[bytes]) -> tuple[int, float, float]:
    """(exit status, peak RSS in MB, CPU seconds) of a child, from the kernel (`wait4`)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def run(turns: int, state_dir: Path) -> Run:
    args = [*MOOT, "run", PROBLEM, "--headless", "--protocol", "conversation", "--turns", str(turns), "-a", AGENTS,
            "--provider", "demo", "--demo-delay", "0", "--state-dir", str(state_dir)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env())
    code, peak, cpu = wait_usage(proc)
    wall = time.perf_counter() - t0
    if code != 0:
        raise RuntimeError(f"moot run --turns {turns} exited {code}")
    (folder,) = [p for p in state_dir.iterdir() if p.is_dir()]
    return Run(turns, peak, wall, cpu, (folder / "events.jsonl").stat().st_size,
               (folder / "state.json").stat().st_size, folder)


def cut_in_last_turn(folder: Path, into: Path) -> tuple[Path, int]:
    """A copy of the debate as a crash inside its last turn leaves it at worst (see the module
    doc), and the bytes of log its resume folds on top of the snapshot."""
    target = into / folder.name
    target.mkdir(parents=True)
    data = (folder / "events.jsonl").read_bytes()
    last = data.rfind(b'"type":"round_started"')
    end = data.index(b"\n", last) + 1
    snapshot = (folder / "state.json").stat().st_size
    tail = max(MIN_CHECKPOINT_BYTES, min(end - end // CHECKPOINT_GROWTH, SNAPSHOT_SPAN * snapshot))
    covered = data.rindex(b"\n", 0, max(1, end - tail)) + 1
    # The snapshot the writer would have made of the log up to there: moot's own fold of it.
    (target / "events.jsonl").write_bytes(data[:covered])
    state = DebateFolder(target).load()
    state.log_offset = covered
    (target / "events.jsonl").write_bytes(data[:end])
    (target / "state.json").write_text(state.model_dump_json(exclude_defaults=True))
    # The search index is fed as events are emitted, so a crash leaves it holding at least what
    # the log holds (the resume trims the rest).
    if (folder / INDEX_FILE).exists():
        shutil.copyfile(folder / INDEX_FILE, target / INDEX_FILE)
    return target, end - covered


def own_peak_mb(pid: int) -> float:
    """A live process's own peak RSS (`VmHWM`). Not `wait4`'s: a child's `ru_maxrss` starts from its
    parent's peak when it execs, and this script has read the whole log to cut it by then."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def resume(folder: Path) -> tuple[float, float]:
    """Seconds from `moot resume` starting to its first request, and its peak RSS (MB) until then."""
    log = folder / "events.jsonl"
    before = log.stat().st_size
    args = [*MOOT, "resume", folder.name, "--headless", "--state-dir", str(folder.parent)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=child_env(MOOT_DEMO_DELAY="0.05"))
    try:
        while time.perf_counter() - t0 < 600:
            with open(log, "rb") as fh:
                fh.seek(before)
                if b'"call_started"' in fh.read():
                    first = time.perf_counter() - t0
                    peak = own_peak_mb(proc.pid)
                    break
            if proc.poll() is not None:
                raise RuntimeError(f"moot resume exited {proc.returncode} before its first request")
            time.sleep(0.005)
        else:
            raise RuntimeError("moot resume made no request within 600 s")
    finally:
        if proc.returncode is None:
            proc.kill()
    wait_usage(proc)
    return first, peak


def resumes(folder: Path, where: str, tmp: Path) -> None:
    """`moot resume` of `folder`'s debate cut inside its last turn: with the search index the crash
    leaves, then with none (rebuilt from the whole log before the first request)."""
    cut, tail = cut_in_last_turn(folder, tmp / "cut")
    lost = tmp / "lost" / cut.name
    shutil.copytree(cut, lost)
    (lost / INDEX_FILE).unlink(missing_ok=True)
    first, peak = resume(cut)
    print(f"moot resume in {where} (snapshot {tail / 1e6:.1f} MB of log behind): first request "
          f"after {first:.2f} s, peak RSS {peak:.1f} MB", flush=True)
    first, peak = resume(lost)
    print(f"  the same with its search index deleted (rebuilt from the whole log first): first request "
          f"after {first:.2f} s, peak RSS {peak:.1f} MB", flush=True)


READERS = [
    ("report", ["report", "{id}"]),
    ("report --html --max-calls 20", ["report", "{id}", "--html", "--max-calls", "20"]),
    ("show --json", ["show", "{id}", "--json"]),
    ("context --turn 1", ["context", "{id}", "--turn", "1"]),
    ("context --turn LAST", ["context", "{id}", "--turn", "{last}"]),
    ("watch --headless", ["watch", "{id}", "--headless"]),
]
"""The commands that read a finished debate back from its folder (`{last}`: its last turn)."""


def readers(folder: Path) -> dict[str, float]:
    """Peak RSS (MB) of each of `READERS` on the debate in `folder`, one process each."""
    state = json.loads((folder / "state.json").read_bytes())
    last = str(state.get("archived_rounds", 0) + len(state.get("rounds", [])))
    peaks: dict[str, float] = {}
    for name, argv in READERS:
        args = [*MOOT, *(a.format(id=folder.name, last=last) for a in argv), "--state-dir", str(folder.parent)]
        t0 = time.perf_counter()
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env())
        code, peak, cpu = wait_usage(proc)
        if code != 0:
            raise RuntimeError(f"moot {' '.join(args[3:])} exited {code}")
        peaks[name] = peak
        print(f"  moot {name}: peak RSS {peak:6.1f} MB · CPU {cpu:5.2f} s · wall {time.perf_counter() - t0:5.2f} s",
              flush=True)
    print(f"  peak RSS, HTML report / markdown report: {peaks['report --html --max-calls 20'] / peaks['report']:.2f} "
          "(target ≤ 1.3)")
    return peaks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="1,000, 10,000, 20,000 and 100,000 turns")
    ap.add_argument("--turns", help="comma-separated sizes (default 1000,10000)")
    ap.add_argument("--keep", type=Path, help="copy the largest debate's folder here (to profile it later)")
    ap.add_argument("--resume", type=Path, metavar="DIR", help="only measure resuming the debate in folder DIR")
    ap.add_argument("--no-readers", action="store_true", help="leave out reading the largest back")
    ap.add_argument("--readers", type=Path, metavar="DIR", help="only read back the debate in folder DIR")
    args = ap.parse_args()
    if args.resume is not None:
        with tempfile.TemporaryDirectory() as tmp:
            resumes(args.resume.resolve(), args.resume.name, Path(tmp))
        return
    if args.readers is not None:
        print(f"reading back {args.readers.name} ({(args.readers / 'events.jsonl').stat().st_size / 1e6:.1f} MB log)")
        readers(args.readers.resolve())
        return
    sizes = ([int(t) for t in args.turns.split(",")] if args.turns else
             [1_000, 10_000, 20_000, 100_000] if args.full else [1_000, 10_000])
    runs: list[Run] = []
    with tempfile.TemporaryDirectory() as tmp:
        print(f"conversation, {len(AGENTS.split(','))} agents, demo provider, zero delay; one process per size")
        for n in sizes:
            r = run(n, Path(tmp) / f"d{n}")
            runs.append(r)
            print(f"{n:>7} turns: peak RSS {r.peak_mb:6.1f} MB · wall {r.wall_s:7.1f} s ({r.wall_s / n * 1000:.2f} ms "
                  f"a turn) · CPU {r.cpu_s:7.1f} s ({r.cpu_s / n * 1000:.2f} ms a turn) · log "
                  f"{r.log_bytes / n:,.0f} B a turn · snapshot {r.snapshot_bytes / 1e6:.2f} MB", flush=True)
            if len(runs) < len(sizes):
                shutil.rmtree(r.folder)  # only the largest is kept, for the resume
        base = runs[0]
        for r in runs[1:]:
            print(f"peak RSS at {r.turns:,} turns / at {base.turns:,}: {r.peak_mb / base.peak_mb:.2f}"
                  + (" (target ≤ 1.3)" if r.turns >= 20 * base.turns else ""))
        if len(runs) > 1:
            last = runs[-1]
            marginal = (last.cpu_s - base.cpu_s) / (last.turns - base.turns) * 1000
            print(f"CPU a turn between {base.turns:,} and {last.turns:,} turns: {marginal:.2f} ms "
                  f"(at {base.turns:,}: {base.cpu_s / base.turns * 1000:.2f} ms a turn, start-up included)")
        largest = runs[-1]
        if args.keep:
            shutil.copytree(largest.folder, args.keep / largest.folder.name)
        if not args.no_readers:  # (before the cut: see `own_peak_mb`)
            print(f"reading back the {largest.turns:,}-turn debate ({largest.log_bytes / 1e6:.1f} MB log), "
                  "one process each:")
            readers(largest.folder)
        resumes(largest.folder, f"turn {largest.turns:,}", Path(tmp))

if __name__ == "__main__":
    main()

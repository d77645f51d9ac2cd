"""Conversation benchmark: 10,000 turns × 4 agents at a flat cost per turn.

Run: .venv/bin/python bench/conversation.py [--turns 10000] [--no-tui] [--layout N] [--prefix-cache]

A zero-delay demo conversation (seed 003 defaults: 50 recent messages, a summary
every 50, 8,000-token views), headless, in this process. It reports, each figure
measured within this one run (ratios, so a noisy machine moves both sides):

- wall time, and the median time to build a turn's view (the overflow check and the
  view the engine sends) at turns 90–110 vs the last 21 turns (target ratio ≤ 1.2);
- event-log bytes per turn at turns 90–110 vs the last 21 (target: equal within 10%);
- total bytes written (log + snapshots) / the final log's size (target ≤ 3);
- peak RSS, and the largest request (tokens + reserved output, target ≤ 8,000);
- `moot resume` start-up on the 10,000-turn folder cut before its last turn, with the
  worst snapshot a crash can leave (it covers a third of the log; the rest is replayed):
  process start → its first request (target < 2 s); and `moot context --turn T`
  latency (target < 1 s);
- TUI key-press latency while turn 10,000 streams (target p95 < 50 ms);
- the prompt tokens all requests sent (turns, summaries and the judge), by moot's count.

With `--layout N` the debate begins in view layout N instead of the newest (to compare the
tokens a layout sends against the one before it). With `--prefix-cache` it also models a
provider's prefix cache per speaker (the rule of `tests/prefix_cache.py`: the longest run of
tokens a request shares with its speaker's previous one, a speaker being its system message)
and prints the prompt tokens left to compute; it costs time, so the timings are then not the
ones to quote.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moot.core.config import Overrides, build_config  # noqa: E402
from moot.core.events import parse_event  # noqa: E402
from moot.core.models.state import DebateState  # noqa: E402
from moot.core.protocols.conversation import ConversationProtocol  # noqa: E402
from moot.core.providers.base import ChatRequest, Message, StreamItem  # noqa: E402
from moot.core.providers.demo import DemoProvider  # noqa: E402
from moot.core.session import SessionOptions, new_session  # noqa: E402
from moot.core.storage.folder import DebateFolder  # noqa: E402
from moot.core.storage.state import apply, new_state  # noqa: E402
from moot.core.tokens import encoding_for_model  # noqa: E402

PROBLEM = "Design a collaborative document editor for 1M daily users"
AGENTS = ["architect", "performance", "security", "kiss"]
MOOT = [sys.executable, "-m", "moot"]


class PrefixModel:
    """A prefix cache per speaker, as `tests/prefix_cache.py` models it, at a cost a 10,000-turn
    run can pay: whole messages equal to the previous request's count at their size (a size is
    counted once per text, and only the recent texts are kept), and only the first message that
    differs is tokenized, to find how far into it the two agree."""

    def __init__(self, model: str) -> None:
        self.encoding = encoding_for_model(model)
        self.last: dict[str, Sequence[Message]] = {}
        self.sizes: OrderedDict[tuple[str, str], int] = OrderedDict()
        self.cached = self.total = 0

    def size(self, m: Message) -> int:
        """Tokens of a message as a chat template frames it: start, role, content, end."""
        key = (m["role"], m["content"])
        n = self.sizes.get(key)
        if n is None:
            n = 2 + len(self.encoding.encode(m["role"])) + len(self.encoding.encode(m["content"], disallowed_special=()))
            self.sizes[key] = n
            if len(self.sizes) > 4096:
                self.sizes.popitem(last=False)
        else:
            self.sizes.move_to_end(key)
        return n

    def feed(self, messages: Sequence[Message]) -> None:
        speaker = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
        previous = self.last.get(speaker)
        self.last[speaker] = list(messages)
        sizes = [self.size(m) for m in messages]
        self.total += sum(sizes)
        if previous is None:
            return
        i = 0
        while i < min(len(previous), len(messages)) and previous[i] == messages[i]:
            i += 1
        cached = sum(sizes[:i])
        if i < min(len(previous), len(messages)) and previous[i]["role"] == messages[i]["role"]:
            old = self.encoding.encode(previous[i]["content"], disallowed_special=())
            new = self.encoding.encode(messages[i]["content"], disallowed_special=())
            same = next((j for j, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
            cached += 1 + len(self.encoding.encode(messages[i]["role"])) + same
        self.cached += min(cached, sum(sizes) - 1)  # a server always computes the last token


def model_prefix_cache(model: str) -> PrefixModel:
    """Feed every request the demo provider answers to a `PrefixModel` (the provider is unchanged)."""
    cache = PrefixModel(model)
    inner = DemoProvider.stream

    def stream(self: DemoProvider, request: ChatRequest) -> AsyncIterator[StreamItem]:
        cache.feed(request.messages)
        return inner(self, request)

    DemoProvider.stream = stream  # type: ignore[method-assign]
    return cache


async def run(turns: int, state_dir: Path) -> dict[str, object]:
    cfg = build_config({"debate": {"protocol": "conversation", "turns": turns}},
                       Overrides(provider="demo", roles=AGENTS))
    session = new_session(PROBLEM, cfg, SessionOptions(state_dir=state_dir, demo_delay=0))
    protocol = session.orchestrator.protocol
    assert isinstance(protocol, ConversationProtocol)
    builder = session.orchestrator.builder
    per_turn: dict[int, float] = {}
    inner_build, inner_overflow = builder.build, protocol._overflow

    def timed_build(record, history, budget, stretch=0):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        try:
            return inner_build(record, history, budget, stretch)
        finally:
            if record.phase == "turn":
                per_turn[record.round] = per_turn.get(record.round, 0.0) + time.perf_counter() - t

    def timed_overflow(record, window, held=None):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        try:
            return inner_overflow(record, window, held)
        finally:
            per_turn[record.round] = per_turn.get(record.round, 0.0) + time.perf_counter() - t

    builder.build = timed_build  # type: ignore[method-assign]
    protocol._overflow = timed_overflow  # type: ignore[method-assign]
    t0 = time.perf_counter()
    state = await session.run()
    wall = time.perf_counter() - t0
    return {"state": state, "wall": wall, "per_turn": per_turn, "folder": session.folder.path,
            "written": session.writer.bytes_written, "snapshots": session.writer.snapshots}


def bytes_per_turn(events_path: Path) -> dict[int, int]:
    out: dict[int, int] = {}
    turn = 0
    for line in events_path.read_bytes().splitlines(keepends=True):
        e = json.loads(line)
        if e["type"] == "round_started":
            turn = e["round"]
        if turn:
            out[turn] = out.get(turn, 0) + len(line)
    return out


def cut_before_last_turn(folder: Path, into: Path) -> tuple[Path, int]:
    """A copy of the debate as a crash during its last turn leaves it at worst: the log up to the
    last turn's start, and a snapshot written when the log was a third as long (the store
    rewrites it when the log has grown threefold)."""
    target = into / folder.name
    target.mkdir(parents=True)
    lines = (folder / "events.jsonl").read_bytes().splitlines(keepends=True)
    events = [parse_event(line) for line in lines]
    last_start = max(i for i, e in enumerate(events) if e.type == "round_started")
    kept = lines[: last_start + 1]
    (target / "events.jsonl").write_bytes(b"".join(kept))
    half = len(b"".join(kept)) // 3
    state, size = new_state(folder.name), 0
    for line, event in zip(kept, events):
        if size + len(line) > half:
            break
        apply(state, event)
        size += len(line)
    state.log_offset = size
    (target / "state.json").write_text(state.model_dump_json(exclude_defaults=True))
    return target, events[last_start].round  # type: ignore[union-attr]  # a round_started event


def resume_startup(folder: Path) -> float:
    """Seconds from `moot resume` starting to its first request (the first call_started it logs)."""
    log = folder / "events.jsonl"
    before = log.stat().st_size
    env = {**os.environ, "MOOT_DEMO_DELAY": "0.05"}
    t0 = time.perf_counter()
    proc = subprocess.Popen([*MOOT, "resume", folder.name, "--headless", "--state-dir", str(folder.parent)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        while time.perf_counter() - t0 < 60:
            with open(log, "rb") as fh:
                fh.seek(before)
                if b'"call_started"' in fh.read():
                    return time.perf_counter() - t0
            time.sleep(0.005)
        raise RuntimeError("resume made no request within 60 s")
    finally:
        proc.kill()
        proc.wait()


def context_latency(folder: Path, turn: int) -> float:
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        r = subprocess.run([*MOOT, "context", folder.name, "--turn", str(turn), "--state-dir", str(folder.parent)],
                           capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        assert r.returncode == 0, r.stderr
    return statistics.median(times)


async def tui_keys(folder: Path, seconds: float) -> tuple[list[float], int]:
    """Key → handled latency while the resumed conversation streams its last turns in the TUI."""
    from textual import events
    from textual.widgets import Input

    from moot.core.session import resume_session
    from moot.tui.app import create_app
    from moot.tui.runtime import LiveRuntime
    from moot.tui.screens.debate import DebateScreen
    from moot.tui.widgets.command_input import CommandInput

    session = resume_session(folder.name, SessionOptions(state_dir=folder.parent, demo_delay=0.02))
    app = create_app(LiveRuntime(session), cursor_blink=False)
    changes: list[float] = []

    def hook(message: object) -> None:
        if isinstance(message, Input.Changed):
            changes.append(time.perf_counter())

    handled: list[float] = []
    async with app.run_test(size=(160, 48), message_hook=hook) as pilot:
        while not isinstance(app.screen, DebateScreen) or not app.screen.loaded:
            await pilot.pause(0.05)
        screen = app.screen
        command = screen.query_one(CommandInput)
        command.focus()
        t_end = time.perf_counter() + seconds
        i = 0
        while time.perf_counter() < t_end:
            await asyncio.sleep(0.2)
            before = len(changes)
            t0 = time.perf_counter()
            app.post_message(events.Key("a" if i % 2 == 0 else "backspace", "a" if i % 2 == 0 else None))
            i += 1
            while len(changes) == before and time.perf_counter() - t0 < 5:
                await asyncio.sleep(0.001)
            if len(changes) > before:
                handled.append(changes[before] - t0)
        widgets = len(list(screen.walk_children(with_self=False)))
        await app.shutdown_runtimes()
    return handled, widgets


def window(values: dict[int, float] | dict[int, int], lo: int, hi: int) -> list[float]:
    return [float(values[t]) for t in range(lo, hi + 1) if t in values]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=10_000)
    ap.add_argument("--no-tui", action="store_true", help="skip the TUI key-latency part")
    ap.add_argument("--layout", type=int, help="begin the debate in this view layout (default: the newest)")
    ap.add_argument("--prefix-cache", action="store_true",
                    help="model a prefix cache per speaker and print the prompt tokens it leaves to compute (slower)")
    args = ap.parse_args()
    n = args.turns
    if args.layout is not None:
        from moot.core import orchestrator

        orchestrator.LAYOUT = args.layout  # the debate begins in it, as it would have
    cache = model_prefix_cache("") if args.prefix_cache else None
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(run(n, Path(tmp) / "debates"))
        state = result["state"]
        assert isinstance(state, DebateState) and state.status == "completed", state
        folder = result["folder"]
        assert isinstance(folder, Path)
        per_turn = result["per_turn"]
        assert isinstance(per_turn, dict)
        early = statistics.median(window(per_turn, 90, 110))
        late = statistics.median(window(per_turn, n - 20, n))
        log_size = (folder / "events.jsonl").stat().st_size
        sizes = bytes_per_turn(folder / "events.jsonl")
        b_early = statistics.mean(window(sizes, 90, 110))
        b_late = statistics.mean(window(sizes, n - 20, n - 1))
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        # Read back from the log: a long debate's state holds its last turns only (a moot from
        # before that held them all: the same script measures both).
        saved = DebateFolder(folder)
        steps = list(saved.steps()) if hasattr(saved, "steps") else state.rounds
        largest = max(c.tokens.total + c.max_tokens for r in steps for c in r.calls)
        summaries = sum(len(r.summaries) + len(r.replaced_summaries) for r in steps)
        del steps
        print(f"conversation: {n} turns × {len(AGENTS)} agents, demo provider, zero delay; {summaries} rolling "
              f"summaries; wall {result['wall']:.1f} s ({float(result['wall']) / n * 1000:.2f} ms/turn)")
        print(f"view build, median: turns 90–110 {early * 1000:.3f} ms, turns {n - 20}–{n} {late * 1000:.3f} ms "
              f"(ratio {late / early:.2f}; target ≤ 1.2)")
        print(f"event-log bytes per turn: turns 90–110 {b_early:.0f} B, turns {n - 20}–{n - 1} {b_late:.0f} B "
              f"(ratio {b_late / b_early:.3f}; target within 10%)")
        print(f"bytes written {int(result['written']) / 1e6:.1f} MB / final log {log_size / 1e6:.1f} MB = "
              f"{int(result['written']) / log_size:.2f} ({result['snapshots']} snapshots; target ≤ 3)")
        print(f"peak RSS {rss:.0f} MB; largest request {largest} tokens incl. reserved output (budget 8000)")
        t = state.totals
        print(f"layout {state.view_layout}: {t.calls:,} requests sent {t.prompt_tokens:,} prompt tokens by moot's "
              f"count ({t.prompt_tokens / t.calls:,.0f} a request)"
              + (f"; modelled prefix cache: {cache.cached:,} of {cache.total:,} cached "
                 f"({cache.cached / max(1, cache.total):.1%}), {cache.total - cache.cached:,} left to compute"
                 if cache else ""))
        cut_dir = Path(tmp) / "cut"
        cut, last = cut_before_last_turn(folder, cut_dir)
        startup = resume_startup(cut)
        print(f"moot resume on the {n}-turn folder cut in turn {last}: first request after {startup:.2f} s "
              "(target < 2 s)")
        latency = context_latency(folder, n - 1)
        print(f"moot context --turn {n - 1}: {latency:.2f} s (target < 1 s)")
        if not args.no_tui:
            shutil.rmtree(cut_dir)
            cut, last = cut_before_last_turn(folder, cut_dir)
            handled, widgets = asyncio.run(tui_keys(cut, 6.0))
            handled.sort()
            p95 = handled[min(len(handled) - 1, int(0.95 * len(handled)))] if handled else float("nan")
            print(f"TUI at turn {last} while streaming: key → handled median "
                  f"{statistics.median(handled) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms (n={len(handled)}; "
                  f"target p95 < 50 ms); widgets on screen {widgets}")


if __name__ == "__main__":
    main()

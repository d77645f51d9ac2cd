"""How the TUI holds up under streaming: key latency and frame rate while 6 agents stream.

Drives the app headless (run_test, 160×48) from a synthetic engine stream: 6 agents
× 200 tokens/s for ~10 s (markdown-shaped text, a new call every ~3 s per agent so
finishing and archiving are exercised too). Every 250 ms it types a key into the
command line and measures the delay until the input's value changed (handled) and
until the next frame was drawn (visible). Prints the figures; not a test.

    .venv/bin/python bench/tui_stream.py [--seconds 10] [--agents 6] [--rate 200]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("MOOT_CONFIG_DIR", tempfile.mkdtemp(prefix="moot-bench-"))

from textual import events  # noqa: E402
from textual.widgets import Input  # noqa: E402

from moot.core.clock import frozen_clock  # noqa: E402
from moot.core.events import (  # noqa: E402
    CallStarted,
    ContributionAdded,
    DebateStarted,
    PhaseStarted,
    RoundStarted,
    Token,
)
from moot.core.models.state import AgentInfo, CallMetadata, Contribution, TierTokens, ViewRecord  # noqa: E402
from moot.tui.app import create_app  # noqa: E402
from tests.tui.scripted import ScriptedRuntime  # noqa: E402
from moot.tui.widgets.command_input import CommandInput  # noqa: E402

ROLES = ["architect", "performance", "security", "testing", "kiss", "data-modeling", "generalist"]
WORDS = ("the cache keeps hot keys close to the edge while writes go through a queue so that "
         "latency stays flat under load and the database only sees batched traffic").split()
TOKENS_PER_CALL = 600


def token_text(i: int) -> str:
    """The i-th token of a markdown-shaped reply: headings, paragraphs and bullets."""
    word = WORDS[i % len(WORDS)]
    if i % 120 == 0:
        return f"\n\n## Section {i // 120 + 1}\n\n"
    if i % 40 == 0:
        return "\n\n"
    if i % 40 > 25 and i % 8 == 0:
        return f"\n- {word}"
    return f" {word}"


def agents(n: int) -> list[AgentInfo]:
    return [AgentInfo(id=ROLES[i] if i < len(ROLES) else f"agent{i}", name=ROLES[i % len(ROLES)].title(),
                      role=ROLES[i % len(ROLES)], model="demo", provider="demo", temperature=0.5, budget=7000)
            for i in range(n)]


def view(agent: AgentInfo, call_no: int) -> ViewRecord:
    used = 1500 + 400 * call_no
    return ViewRecord(call_id=f"call-{agent.id}-{call_no}", agent_id=agent.id, round=1 + call_no // 3,
                      phase="proposal", model="demo", budget=7000,
                      tokens=TierTokens(system=600, summary=300, history=used - 1200, task=300, total=used))


async def produce(runtime: ScriptedRuntime, infos: list[AgentInfo], rate: float, seconds: float) -> int:
    """Push tokens at `rate` per agent per second for `seconds`; returns the tokens pushed."""
    judge = AgentInfo(id="judge", name="Judge", role="generalist", model="demo", provider="demo",
                      temperature=0.5, budget=7000)
    runtime.push(DebateStarted(problem="Design a URL shortener", total_rounds=9, agents=infos, judge=judge,
                               prompts={}, config={}, provider_label="demo"),
                 RoundStarted(round=1), PhaseStarted(round=1, phase="proposal"))
    calls = {a.id: 0 for a in infos}
    texts = {a.id: "" for a in infos}
    counts = {a.id: 0 for a in infos}
    for a in infos:
        runtime.push(CallStarted(view=view(a, 0)))
    tick = 0.01
    per_tick = rate * tick
    owed = 0.0
    pushed = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        owed = rate * elapsed * len(infos) - pushed
        n_each = int(owed / len(infos))
        for a in infos:
            for _ in range(n_each):
                text = token_text(counts[a.id])
                counts[a.id] += 1
                texts[a.id] += text
                runtime.push(Token(call_id=f"call-{a.id}-{calls[a.id]}", agent_id=a.id, delta=text))
                pushed += 1
                if counts[a.id] % TOKENS_PER_CALL == 0:
                    c = Contribution(id=f"c-{a.id}-{calls[a.id]}", agent_id=a.id, role=a.role, type="proposal",
                                     round=1, content=texts[a.id],
                                     metadata=CallMetadata(call_id=f"call-{a.id}-{calls[a.id]}",
                                                           completion_tokens=TOKENS_PER_CALL))
                    runtime.push(ContributionAdded(contribution=c))
                    calls[a.id] += 1
                    texts[a.id] = ""
                    runtime.push(CallStarted(view=view(a, calls[a.id])))
        await asyncio.sleep(tick)
    del per_tick
    return pushed


async def main(seconds: float, n_agents: int, rate: float) -> None:
    runtime = ScriptedRuntime()
    app = create_app(runtime, cursor_blink=False, clock=frozen_clock(1.7e9))
    frames: list[float] = []
    changes: list[float] = []

    def hook(message: object) -> None:
        if isinstance(message, Input.Changed):
            changes.append(time.perf_counter())

    async with app.run_test(size=(160, 48), message_hook=hook) as pilot:
        from moot.tui.screens.debate import DebateScreen

        while not isinstance(app.screen, DebateScreen):
            await asyncio.sleep(0.01)
        screen = app.screen
        original = screen._compositor_refresh

        def counting_refresh() -> None:
            frames.append(time.perf_counter())
            original()

        screen._compositor_refresh = counting_refresh  # type: ignore[method-assign]
        original_layout = screen._refresh_layout
        layout_times: list[float] = []

        def timed_layout(*args: object, **kwargs: object) -> None:
            t = time.perf_counter()
            original_layout(*args, **kwargs)
            layout_times.append(time.perf_counter() - t)

        screen._refresh_layout = timed_layout  # type: ignore[method-assign]
        infos = agents(n_agents)
        producer = asyncio.create_task(produce(runtime, infos, rate, seconds))
        lags: list[float] = []

        async def lag_probe() -> None:
            while True:
                t = time.perf_counter()
                await asyncio.sleep(0.005)
                lags.append(time.perf_counter() - t - 0.005)

        probe = asyncio.create_task(lag_probe())
        await asyncio.sleep(0.3)
        command = screen.query_one(CommandInput)
        command.focus()
        handled: list[float] = []
        visible: list[float] = []
        t_end = time.perf_counter() + seconds - 0.5
        i = 0
        while time.perf_counter() < t_end:
            await asyncio.sleep(0.25)
            key = "a" if i % 2 == 0 else "backspace"
            i += 1
            before = len(changes)
            t0 = time.perf_counter()
            app.post_message(events.Key(key, "a" if key == "a" else None))
            while len(changes) == before and time.perf_counter() - t0 < 5:
                await asyncio.sleep(0.001)
            if len(changes) == before:
                continue
            t1 = changes[before]
            handled.append(t1 - t0)
            while not any(f >= t1 for f in frames[-5:]) and time.perf_counter() - t1 < 5:
                await asyncio.sleep(0.001)
            after = [f for f in frames[-5:] if f >= t1]
            if after:
                visible.append(after[0] - t0)
        pushed = await producer
        probe.cancel()
        t_stream_end = time.perf_counter()
        # Wait for the screen to drain what was pushed, to see whether it kept up.
        while runtime.backlog and time.perf_counter() - t_stream_end < 30:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)
        drain = time.perf_counter() - t_stream_end
        widgets = len(list(screen.walk_children(with_self=False)))
        bridge = screen.bridge.stats
        span = (frames[-1] - frames[0]) if len(frames) > 1 else 1.0

    gc.collect()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def ms(values: list[float], q: float) -> str:
        if not values:
            return "n/a"
        values = sorted(values)
        return f"{values[min(len(values) - 1, int(q * len(values)))] * 1000:.1f} ms"

    print(f"stream: {n_agents} agents × {rate:g} tokens/s for {seconds:g} s = {pushed} tokens "
          f"({pushed / seconds:.0f}/s); bridge flushes {bridge.flushes} ({bridge.flushes / seconds:.1f}/s)")
    print(f"key → handled:  median {statistics.median(handled) * 1000:.1f} ms, p95 {ms(handled, 0.95)}, "
          f"max {max(handled) * 1000:.1f} ms  (n={len(handled)})")
    if visible:
        print(f"key → on screen: median {statistics.median(visible) * 1000:.1f} ms, p95 {ms(visible, 0.95)}, "
              f"max {max(visible) * 1000:.1f} ms")
    print(f"event-loop lag: median {statistics.median(lags) * 1000:.1f} ms, p95 {ms(lags, 0.95)}, "
          f"max {max(lags) * 1000:.1f} ms")
    if layout_times:
        print(f"layout+paint per frame: median {statistics.median(layout_times) * 1000:.1f} ms, "
              f"p95 {ms(layout_times, 0.95)} (n={len(layout_times)})")
    print(f"frames: {len(frames)} in {span:.1f} s = {len(frames) / span:.1f} fps")
    print(f"drained {drain * 1000:.0f} ms after the stream ended; widgets on screen at the end: {widgets}; "
          f"max RSS {rss_mb:.0f} MB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--agents", type=int, default=6)
    parser.add_argument("--rate", type=float, default=200.0, help="tokens per second per agent")
    args = parser.parse_args()
    asyncio.run(main(args.seconds, args.agents, args.rate))

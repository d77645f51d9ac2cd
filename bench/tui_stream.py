"""How the TUI holds up under streaming: key latency, frame rate and main-thread CPU.

Drives the app headless (run_test, 160×48) from a synthetic engine stream: by default
12 agents × 400 tokens/s for ~10 s (markdown-shaped text, 600 tokens a call, so every
agent finishes a call every 1.5 s, all at the same moment, and finishing and archiving
are exercised too). Every 250 ms it types a key into the command line and measures the
delay until the input's value changed (handled) and until the next frame was drawn
(on screen). Prints the figures; not a test.

Wall figures (latency, fps, stalls) move with the machine's load; the main thread's
CPU time (`time.thread_time`) per frame and per streamed token hardly does, so compare
those between runs on a shared machine. The benchmark's own producer runs on the same
thread; its CPU is measured and taken out of the app's. `--breakdown` adds where the
app's CPU goes (exclusive CPU of the transcript, frames, roster, CSS updates, garbage
collection, …: bench/cpu_meter.py); it costs a little CPU itself.

    .venv/bin/python bench/tui_stream.py [--seconds 10] [--agents 12] [--rate 400] [--breakdown] [--paced 30]
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

from cpu_meter import GC, CpuMeter  # noqa: E402  (bench/, the script's folder)
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
from moot.tui.widgets.command_input import CommandInput  # noqa: E402
from tests.tui.scripted import ScriptedRuntime  # noqa: E402

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


async def produce(runtime: ScriptedRuntime, infos: list[AgentInfo], rate: float, seconds: float,
                  meter: CpuMeter, paced: float = 0.0, frames: list[float] | None = None) -> int:
    """Push tokens at `rate` per agent per second for `seconds`; returns the tokens pushed.

    `paced` (frames a second): the stream's clock advances by one frame's time per frame the
    screen draws instead of by the wall clock, so every frame has the same text to show
    (`rate / paced` tokens per agent) however fast the machine is: CPU per frame compares
    across loads. Its CPU (building and queueing the events) is measured as "benchmark producer"."""
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
    pushed = 0
    start = time.perf_counter()
    step = 0

    def clock() -> float:
        return step / paced if paced else time.perf_counter() - start

    while (elapsed := clock()) < seconds:
        with meter.measure(PRODUCER):
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
        if paced and frames is not None:
            drawn = len(frames)
            while len(frames) < drawn + 1:  # the next frame (it shows these tokens or the last ones)
                await asyncio.sleep(0.001)
            step += 1
        else:
            await asyncio.sleep(tick)
    return pushed


def instrument(meter: CpuMeter) -> list[str]:
    """Wrap the methods that the breakdown names (before the app exists: timers bind methods)."""
    from textual.css.stylesheet import Stylesheet
    from textual.screen import Screen

    from moot.tui.screens.debate_panes import AgentPanes
    from moot.tui.screens.debate_status import StatusLine
    from moot.tui.widgets.agent_pane import AgentPane
    from moot.tui.widgets.agent_roster import AgentRoster, AgentRow
    from moot.tui.widgets.debate_header import DebateHeader
    from moot.tui.widgets.event_log import EventLog
    from moot.tui.widgets.token_gauge import TokenGauge
    from moot.tui.widgets.transcript import Transcript

    missing: list[str] = []
    missing += meter.wrap(Transcript, ["append_text", "set_text", "to_history", "add", "remove_entry",
                                       "render_lines", "_sync"], TRANSCRIPT)
    missing += meter.wrap(Screen, ["_on_timer_update"], FRAMES)
    missing += meter.wrap(AgentRow, ["refresh_status", "show_view"], ROSTER)
    missing += meter.wrap(AgentRoster, ["tick"], ROSTER)
    missing += meter.wrap(Stylesheet, ["update_nodes"], STYLES)
    missing += meter.wrap(AgentPane, ["stream", "call_started", "contribution_added", "tick", "usage"], PANES)
    missing += meter.wrap(TokenGauge, ["update_view"], PANES)
    missing += meter.wrap(StatusLine, ["refresh", "tick"], SCREEN)
    missing += meter.wrap(AgentPanes, ["show_usage"], SCREEN)
    missing += meter.wrap(EventLog, ["add_event"], SCREEN)
    missing += meter.wrap(DebateHeader, ["show_state", "show_elapsed", "show_status"], SCREEN)
    return missing


PRODUCER = "benchmark producer"
TRANSCRIPT = "transcript: streamed text, markdown, its layout"
FRAMES = "frames: screen layout, compositor, paint"
ROSTER = "agent roster rows"
STYLES = "CSS updates (class changes)"
PANES = "panes: status, gauge, blocks"
SCREEN = "screen: header, event log, usage"
CATEGORIES = [TRANSCRIPT, FRAMES, GC, ROSTER, STYLES, PANES, SCREEN]


async def main(seconds: float, n_agents: int, rate: float, breakdown: bool, paced: float = 0.0) -> None:
    meter = CpuMeter()
    missing = instrument(meter) if breakdown else []
    runtime = ScriptedRuntime()
    app = create_app(runtime, cursor_blink=False, clock=frozen_clock(1.7e9))
    frames: list[float] = []
    changes: list[float] = []

    def hook(message: object) -> None:
        if isinstance(message, Input.Changed):
            changes.append(time.perf_counter())

    async with app.run_test(size=(160, 48), message_hook=hook):
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
        lags: list[float] = []
        meter.start()
        cpu0, proc0, wall0 = time.thread_time(), time.process_time(), time.perf_counter()
        frames_before, layouts_before = len(frames), len(layout_times)
        producer = asyncio.create_task(produce(runtime, infos, rate, seconds, meter, paced, frames))

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
        while time.perf_counter() < t_end or (paced and not producer.done()):
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
        cpu = time.thread_time() - cpu0
        proc = time.process_time() - proc0
        t_stream_end = time.perf_counter()
        wall = t_stream_end - wall0
        meter.stop()
        stream_frames = frames[frames_before:]
        stream_layouts = len(layout_times) - layouts_before
        # Wait for the screen to drain what was pushed, to see whether it kept up.
        while runtime.backlog and time.perf_counter() - t_stream_end < 30:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)
        drain = time.perf_counter() - t_stream_end
        widgets = len(list(screen.walk_children(with_self=False)))
        bridge = screen.bridge.stats

    gc.collect()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def ms(values: list[float], q: float) -> str:
        if not values:
            return "n/a"
        values = sorted(values)
        return f"{values[min(len(values) - 1, int(q * len(values)))] * 1000:.1f} ms"

    def med(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:.1f} ms" if values else "n/a"

    def top(values: list[float]) -> str:
        return f"{max(values) * 1000:.1f} ms" if values else "n/a"

    n_frames = max(1, len(stream_frames))
    span = (stream_frames[-1] - stream_frames[0]) if len(stream_frames) > 1 else wall
    gaps = [b - a for a, b in zip(stream_frames, stream_frames[1:])]
    stalls = [lag for lag in lags if lag > 0.150]
    producer_cpu = meter.cpu.get(PRODUCER, 0.0)
    app_cpu = cpu - producer_cpu
    pace = f", paced at {paced:g} frames a second of stream (took {wall:.1f} s)" if paced else ""
    print(f"stream: {n_agents} agents × {rate:g} tokens/s for {seconds:g} s = {pushed} tokens "
          f"({pushed / seconds:.0f}/s){pace}; bridge flushes {bridge.flushes} ({bridge.flushes / wall:.1f}/s)")
    print(f"key → handled:   median {med(handled)}, p95 {ms(handled, 0.95)}, max {top(handled)}  (n={len(handled)})")
    print(f"key → on screen: median {med(visible)}, p95 {ms(visible, 0.95)}, max {top(visible)}  (n={len(visible)})")
    print(f"frames: {len(stream_frames)} in {span:.1f} s = {len(stream_frames) / span:.1f} fps; "
          f"longest gap between frames {top(gaps)}; full layouts {stream_layouts} "
          f"(median {med(layout_times)} wall)")
    print(f"event-loop lag (5 ms probe): median {med(lags)}, p95 {ms(lags, 0.95)}, max {top(lags)}; "
          f"stalls > 150 ms: {len(stalls)}")
    print(f"main-thread CPU: {cpu:.2f} s in {wall:.1f} s of streaming (process {proc:.2f} s); the benchmark's "
          f"producer {producer_cpu:.2f} s; the app {app_cpu:.2f} s = {app_cpu / wall * 1000:.0f} ms a second, "
          f"{app_cpu / n_frames * 1000:.1f} ms a frame, {app_cpu / max(1, pushed) * 1e6:.0f} µs a streamed token")
    g = meter.gc
    print(f"garbage collection: {g.counts[0]}/{g.counts[1]}/{g.counts[2]} collections (gen 0/1/2), "
          f"{g.cpu * 1000:.0f} ms CPU = {g.cpu / app_cpu * 100 if app_cpu else 0:.1f} % of the app's, "
          f"longest {g.longest * 1000:.1f} ms")
    if breakdown:
        print("app CPU by category (exclusive; ms a second of streaming, ms a frame, share):")
        claimed = 0.0
        for category in CATEGORIES:
            value = meter.cpu.get(category, 0.0)
            claimed += value
            print(f"  {category:<48} {value / wall * 1000:6.0f} {value / n_frames * 1000:7.2f} "
                  f"{value / app_cpu * 100 if app_cpu else 0:6.1f} %")
        rest = app_cpu - claimed
        print(f"  {'rest: message pumps, asyncio, bridge, input':<48} {rest / wall * 1000:6.0f} "
              f"{rest / n_frames * 1000:7.2f} {rest / app_cpu * 100 if app_cpu else 0:6.1f} %")
        if missing:
            print(f"  (not found, not measured: {', '.join(missing)})")
    print(f"drained {drain * 1000:.0f} ms after the stream ended; widgets on screen at the end: {widgets}; "
          f"max RSS {rss_mb:.0f} MB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--agents", type=int, default=12)
    parser.add_argument("--rate", type=float, default=400.0, help="tokens per second per agent")
    parser.add_argument("--breakdown", action="store_true", help="where the app's CPU goes, by category")
    parser.add_argument("--paced", type=float, default=0.0, metavar="FPS",
                        help="advance the stream one 1/FPS s step per frame drawn (CPU per frame at that frame rate)")
    args = parser.parse_args()
    asyncio.run(main(args.seconds, args.agents, args.rate, args.breakdown, args.paced))

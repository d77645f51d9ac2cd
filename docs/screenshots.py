"""Take the docs site's pictures of the TUI from the real app, as SVG.

Run: .venv/bin/python docs/screenshots.py [--out docs/images] [--only NAME ...]

Each picture is the app as a person sees it, driven by Textual's Pilot at a fixed size: demo
debates are recorded first (the offline demo provider, fixed ids and clock, so the pictures do
not change from run to run unless the screens do), then opened the way a person would open them
and saved with Textual's own `save_screenshot`. Regenerate after a change to what a screen shows
and commit the SVGs with it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moot.core.events import Event  # noqa: E402
from moot.tui.app import MootApp, create_app  # noqa: E402
from tests.tui.conftest import FOUR, _record, fixed_clock, settle, upto, wait_for  # noqa: E402
from tests.tui.scripted import ScriptedRuntime  # noqa: E402
from tests.tui.test_snapshots import midstream  # noqa: E402

SIZE = (120, 36)
Shot = Callable[[Path, Path], Awaitable[None]]


async def _save(app: MootApp, pilot: object, out: Path, name: str) -> None:
    app.save_screenshot(filename=f"{name}.svg", path=str(out))
    print(f"wrote {out / name}.svg", file=sys.stderr)


async def _scripted(events: list[Event], out: Path, name: str, *keys: str,
                    command: str | None = None) -> None:
    runtime = ScriptedRuntime(events=events, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, runtime)
        if keys:
            await pilot.press(*keys)
            await settle(pilot)
        if command:
            app.screen.run_command_line(command)  # type: ignore[attr-defined]
            await settle(pilot)
        await _save(app, pilot, out, name)


async def live_debate(work: Path, out: Path) -> None:
    """A four-agent debate in round 2, its critiques streaming."""
    events = await _record(work / "live", roles=FOUR)
    await _scripted(midstream(events), out, "live-debate")


async def context_overview(work: Path, out: Path) -> None:
    """`c` (or `/context`): every agent's view, tier by tier, against its budget."""
    events = await _record(work / "overview", roles=FOUR)
    await _scripted(midstream(events), out, "context-overview", "c")


async def inspector(work: Path, out: Path) -> None:
    """The inspector: exactly the messages one call sent."""
    events = await _record(work / "inspector")
    await _scripted(events, out, "inspector", command="/context architect 2")


async def final_solution(work: Path, out: Path) -> None:
    """A finished debate: the judge's synthesis."""
    events = await _record(work / "final", roles=FOUR)
    await _scripted(events, out, "final-solution")


async def conversation(work: Path, out: Path) -> None:
    """A conversation: one transcript, turns in order."""
    events = await _record(work / "conversation", roles=["architect", "kiss", "security"],
                           debate={"protocol": "conversation", "turns": 12})
    await _scripted(upto(events, lambda e: e.type == "debate_completed"), out, "conversation")


async def saved_debates(work: Path, out: Path) -> None:
    """`moot watch` with no id: the saved debates, newest first."""
    import os

    work.mkdir(parents=True)
    os.chdir(work)  # the title shows the folder as given: `debates`, as a person's would read
    state = Path("debates")
    for i, roles in enumerate((["architect", "kiss"], FOUR, ["architect", "security", "testing"])):
        await _record(state, roles=roles, debate_id=f"debate-{i + 1}")
    app = create_app(None, state_dir=state, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await wait_for(pilot, lambda: "reading" not in str(app.screen.query("Static").first().render()))
        await settle(pilot)
        await _save(app, pilot, out, "saved-debates")


async def bench_dashboard(work: Path, out: Path) -> None:
    """`moot bench`: the live dashboard, once every question has run."""
    from moot.core.bench.datasets import load_dataset
    from moot.core.bench.executors import LocalExecutor
    from moot.core.bench.progress import BenchProgress
    from moot.core.bench.runner import plan
    from moot.core.config import Overrides, build_config
    from moot.core.storage.state_dir import StateDir
    from moot.tui.bench_app import BenchApp

    base = build_config({}, Overrides(provider="demo", roles=["generalist"] * 3, rounds=2))
    the_plan = plan(load_dataset("arithmetic:4"), ["single", "vote", "simultaneous"], base,  # type: ignore[arg-type]
                    state_dir=work / "bench", demo_delay=0.0)
    app = BenchApp(BenchProgress(the_plan), LocalExecutor(2), the_plan.jobs, state_dir=StateDir(work / "bench"),
                   demo=True, cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.bench_done, timeout=120)
        await settle(pilot)
        app.save_screenshot(filename="bench-dashboard.svg", path=str(out))
        print(f"wrote {out / 'bench-dashboard'}.svg", file=sys.stderr)


def _moot(*args: str, cwd: Path) -> None:
    """The real command, as a person runs it (the demo provider: no key, no network)."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY")}
    env["MOOT_DEMO_DELAY"] = "0"
    subprocess.run([sys.executable, "-m", "moot", *args], cwd=cwd, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def bench_plot(work: Path, out: Path) -> None:
    """`moot bench … -o results.md` draws accuracy against tokens a question beside the table."""
    import shutil

    work.mkdir(parents=True)
    _moot("bench", "arithmetic:6", "--protocols", "single,vote,simultaneous", "--provider", "demo", "--headless",
          "-o", "results.md", "--state-dir", "debates", cwd=work)
    shutil.copy(work / "results.svg", out / "bench-plot.svg")
    print(f"wrote {out / 'bench-plot'}.svg", file=sys.stderr)


async def html_report(work: Path, out: Path) -> None:
    """`moot report ID --html`: the page, drawn by headless Chromium (skipped without it)."""
    import shutil
    import subprocess

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("html-report: no chromium on the PATH, skipped", file=sys.stderr)
        return
    work.mkdir(parents=True)
    _moot("run", "Design a URL shortener", "--headless", "-r", "1", "-a", "architect,kiss,security",
          "--state-dir", "debates", cwd=work)
    debate = next((work / "debates").iterdir()).name
    _moot("report", debate, "--html", "-o", "report.html", "--state-dir", "debates", cwd=work)
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1200,900", f"--screenshot={out / 'html-report.png'}",
                    (work / "report.html").as_uri()], check=True, capture_output=True, timeout=120)
    print(f"wrote {out / 'html-report'}.png", file=sys.stderr)


async def fork_compare(work: Path, out: Path) -> None:
    """A real fork (`moot fork … --inject`) of a demo debate, opened in the app, and `/compare fork`."""
    from moot.core.storage.state_dir import StateDir
    from moot.tui.runtime.watch import WatchRuntime
    from moot.tui.screens.fork_compare import ForkCompareScreen

    work.mkdir(parents=True)
    _moot("run", "Design a URL shortener", "--headless", "-r", "2", "-a", "architect,kiss,security", "--id", "url",
          "--state-dir", "debates", cwd=work)
    _moot("fork", "url", "--at", "round:2", "--inject", "Assume a single region and no managed database",
          "--headless", "--state-dir", "debates", cwd=work)
    fork = next(f for f in StateDir(work / "debates").debates() if f.id != "url")
    app = create_app(WatchRuntime(fork), cursor_blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: getattr(app.screen, "loaded", False))
        await settle(pilot)
        app.screen.run_command_line("/compare fork")  # type: ignore[attr-defined]
        await wait_for(pilot, lambda: isinstance(app.screen, ForkCompareScreen))
        await settle(pilot)
        await _save(app, pilot, out, "fork-compare")


SHOTS: dict[str, Shot] = {
    "live-debate": live_debate,
    "context-overview": context_overview,
    "inspector": inspector,
    "final-solution": final_solution,
    "conversation": conversation,
    "saved-debates": saved_debates,
    "bench-dashboard": bench_dashboard,
    "fork-compare": fork_compare,
    "bench-plot": bench_plot,
    "html-report": html_report,
}


async def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    p.add_argument("--only", nargs="*", choices=sorted(SHOTS), help="take only these pictures")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="moot-shots-") as tmp:
        for name in args.only or SHOTS:
            await SHOTS[name](Path(tmp) / name, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))

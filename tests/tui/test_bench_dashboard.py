"""The `moot bench` dashboard (Pilot and snapshots), and the debate screen showing the new
protocols: a vote's final answer where the judge's would be, a council's rankings."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.widgets import DataTable

from moot.core.bench.datasets import load_dataset
from moot.core.bench.executors import LocalExecutor
from moot.core.bench.progress import BenchProgress
from moot.core.bench.runner import plan
from moot.core.config import Overrides, build_config
from moot.core.storage.state_dir import StateDir
from moot.tui.bench_app import BenchApp
from moot.tui.screens.bench import BenchScreen
from moot.tui.screens.debate import DebateScreen
from moot.tui.widgets.bench_plot import FRONT_STYLE, BenchPlot
from tests.tui.scripted import ScriptedRuntime

from .conftest import _record, settle, wait_for
from .test_snapshots import app_for

MEDIUM = (100, 30)


def _bench_app(tmp_path: Path, protocols: list[str], n: int = 3, delay: float = 0.0) -> BenchApp:
    base = build_config({}, Overrides(provider="demo", roles=["generalist"] * 3, rounds=2))
    the_plan = plan(load_dataset(f"arithmetic:{n}"), protocols, base, state_dir=tmp_path / "d",  # type: ignore[arg-type]
                    demo_delay=delay)
    progress = BenchProgress(the_plan)
    return BenchApp(progress, LocalExecutor(2), the_plan.jobs, state_dir=StateDir(tmp_path / "d"), demo=True,
                    cursor_blink=False)


def _cells(table: DataTable, row: str) -> list[str]:
    return [str(c) for c in table.get_row(row)]


async def test_dashboard_follows_the_run_and_opens_a_question(tmp_path: Path) -> None:
    app = _bench_app(tmp_path, ["single", "vote", "council"])
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.bench_done, timeout=60)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        protocols = screen.query_one("#bench-protocols", DataTable)
        for p, prog in app.progress.protocols.items():
            cells = _cells(protocols, p)
            assert cells[1] == "3/3" and cells[2] == "0"
            assert cells[3] == f"{100 * prog.accuracy:.1f}% ± {100 * prog.stderr:.1f}"
        # Cost beside accuracy: tokens per question and per right answer, and the Pareto front marked
        # in the table and in the plot (a protocol's number is its row's).
        front = app.progress.pareto()
        assert front and set(front) <= set(app.progress.protocols)
        plot = screen.query_one(BenchPlot).text
        red = {plot.plain[s.start:s.end] for s in plot.spans if s.style == FRONT_STYLE}
        for i, (p, prog) in enumerate(app.progress.protocols.items(), start=1):
            cells = _cells(protocols, p)
            assert cells[0] == f"{i} {p}" and cells[4] == f"{prog.tokens / 3:,.0f}"
            assert cells[5] == (f"{prog.tokens / prog.correct:,.0f}" if prog.correct else "–")
            assert cells[8] == ("◆" if p in front else "")
            assert str(i) in plot.plain and (str(i) in red) == (p in front)
        questions = screen.query_one("#bench-questions", DataTable)
        for (qid, p, run), row in app.progress.rows.items():
            cells = _cells(questions, f"{qid}\x1f{p}\x1f{run}")
            assert cells[2] == ("✓ right" if row.correct else "✗ wrong") and cells[3] == str(row.answer)
        assert "9/9 finished" in str(screen.query_one("#bench-title").render())
        questions.focus()
        questions.move_cursor(row=2)  # a1 through the council
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DebateScreen)
        await wait_for(pilot, lambda: app.screen.state.final_solution is not None)
        assert app.screen.state.protocol == "council" and app.screen.state.id.endswith("-council-a1")
        await pilot.press("escape", "escape")  # the zoomed final answer, then back to the dashboard
        await settle(pilot)
        assert isinstance(app.screen, BenchScreen)


async def test_quitting_mid_run_interrupts_resumably(tmp_path: Path) -> None:
    app = _bench_app(tmp_path, ["single", "simultaneous"], n=6, delay=0.05)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: len(app.progress.running) > 0 and app.progress.finished >= 1, timeout=60)
        await pilot.press("q")
        await asyncio.sleep(0.5)
    assert app.exit_code() == 130 and not app.bench_done
    states = [f.load().status for f in StateDir(tmp_path / "d").debates()]
    assert "completed" in states and "interrupted" in states  # saved; a rerun resumes them


def test_snapshot_dashboard_finished(snap_compare, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # A debate id holds a hash of its config, which changes with every new config field; the
    # snapshot is about the dashboard, so the hash is pinned.
    monkeypatch.setattr("moot.core.bench.runner._key", lambda data: "c0ffee00")
    app = _bench_app(tmp_path, ["single", "vote", "simultaneous"], n=4)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await wait_for(pilot, lambda: app.bench_done, timeout=60)
        await settle(pilot)

    assert snap_compare(app, terminal_size=MEDIUM, run_before=run_before)


def _debate_snapshot(snap_compare, tmp_path: Path, protocol: str, **debate: object) -> bool:  # type: ignore[no-untyped-def]
    events = asyncio.run(_record(tmp_path, roles=["architect", "kiss", "security"], debate_id=protocol,
                                 debate={"protocol": protocol, **debate}))
    app, runtime = app_for(events)
    assert isinstance(runtime, ScriptedRuntime)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)

    return bool(snap_compare(app, terminal_size=MEDIUM, run_before=run_before))


def test_snapshot_vote_debate(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Six samples: past the grid's room at 100×30, so the one-pane view with the roster of samples."""
    assert _debate_snapshot(snap_compare, tmp_path, "vote", samples=6)


def test_snapshot_council_debate(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert _debate_snapshot(snap_compare, tmp_path, "council")

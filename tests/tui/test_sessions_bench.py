"""The sessions screen with a bench among the saved debates: the bench's debates are one row,
enter shows them under it (and hides them again), and enter on one of them watches it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import DataTable

from moot.core.storage.state_dir import StateDir
from moot.tui.app import create_app
from moot.tui.screens.debate import DebateScreen
from moot.tui.screens.debates import DebatesScreen
from tests.conftest import cli

from .conftest import wait_for


@pytest.fixture(scope="module")
def with_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bench-sessions") / "debates"
    r = cli("bench", "arithmetic:3", "--protocols", "single,vote", "--provider", "demo", "--headless",
            "--state-dir", str(root), "-o", str(root.parent / "bench.md"))
    assert r.returncode == 0, r.stderr
    r = cli("run", "Pick a message queue for the billing events", "--headless", "--provider", "demo",
            "--protocol", "single", "--id", "queue", "--state-dir", str(root))
    assert r.returncode == 0, r.stderr
    return root


async def test_a_bench_is_one_row_that_enter_opens_and_closes(with_bench: Path, tmp_path: Path) -> None:
    root = Path(shutil.copytree(with_bench, tmp_path / "debates"))
    app = create_app(None, state_dir=StateDir(root), cursor_blink=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DebatesScreen) and app.screen.loaded)
        screen = app.screen
        assert isinstance(screen, DebatesScreen)
        assert len(screen.rows) == 7 and len(screen.shown) == 2  # six debates of the bench in one row
        assert screen.shown[0].id == "queue"  # run after the bench: newest first
        bench = screen.shown[1]
        assert bench.id.startswith("b-") and bench.protocol == "bench" and (bench.done, bench.total) == (6, 6)
        assert "bench of 6 debates (single ×3, vote ×3)" in bench.problem or \
            "bench of 6 debates (vote ×3, single ×3)" in bench.problem
        table = screen.query_one(DataTable)
        table.move_cursor(row=1)
        await pilot.press("enter")
        await pilot.pause()
        assert len(screen.shown) == 8 and [r.id for r in screen.shown[:2]] == ["queue", bench.id]
        inside = screen.shown[2:]
        assert all(r.id.startswith(bench.id + "-") and r.problem.startswith("↳ What is the result of")
                   for r in inside)
        await pilot.press("enter")  # on the bench's row again: its debates hidden
        await pilot.pause()
        assert [r.id for r in screen.shown] == ["queue", bench.id]
        await pilot.press("enter", "down", "enter")  # open it, go to its first debate, watch it
        await wait_for(pilot, lambda: isinstance(app.screen, DebateScreen))
        assert app.screen.runtime.folder.id == inside[0].id  # type: ignore[attr-defined]


async def test_the_filter_finds_a_benchs_debates_under_their_row(with_bench: Path, tmp_path: Path) -> None:
    root = Path(shutil.copytree(with_bench, tmp_path / "debates"))
    app = create_app(None, state_dir=StateDir(root), cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DebatesScreen) and app.screen.loaded)
        screen = app.screen
        assert isinstance(screen, DebatesScreen)
        await pilot.press("slash", *"vote", "enter")
        await pilot.pause()
        assert [r.protocol for r in screen.shown] == ["bench"]  # the bench holds the vote debates
        screen.query_one(DataTable).move_cursor(row=0)
        await pilot.press("enter")
        await pilot.pause()
        assert [r.protocol for r in screen.shown] == ["bench", "vote", "vote", "vote"]

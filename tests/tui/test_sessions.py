"""The sessions screen (saved debates): what it lists, sorting, filtering, opening a debate, and
reaching it from a debate; snapshots at 80×24 and 160×48.

The debates are real ones, run once for the module on the demo provider and, for one with a
cost, against the loopback server, each with its own frozen clock (so dates differ and nothing a
snapshot shows depends on when the tests run)."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, Label

from moot.core.clock import frozen_clock
from moot.core.config import Overrides, load_config
from moot.core.session import SessionOptions, new_session
from moot.core.storage.log import read_events
from moot.core.storage.log_writer import EventLogWriter
from moot.core.storage.state_dir import StateDir
from moot.tui.app import create_app
from moot.tui.runtime import WatchRuntime
from moot.tui.screens.debate import DebateScreen
from moot.tui.screens.debates import DebatesScreen
from tests.loopback import LoopbackServer

from .conftest import FIXED_TS, command, settle, wait_for

DAY = 86_400.0
SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])


async def _debate(root: Path, debate_id: str, problem: str, ts: float, *, rounds: int = 1,
                  debate: dict | None = None, roles: list[str] | None = None, base_url: str | None = None) -> None:
    config = load_config(None, Overrides(rounds=rounds, roles=roles, debate=debate,
                                         provider="openai" if base_url else "demo", base_url=base_url))
    session = new_session(problem, config, SessionOptions(state_dir=root, demo_delay=0, deterministic_ids=True,
                                                          debate_id=debate_id, clock=frozen_clock(ts)))
    session.start_writer()
    await session.run()


async def _make(root: Path) -> None:
    await _debate(root, "rate-limiter", "Design a rate limiter for a public API", FIXED_TS, rounds=2)
    await _debate(root, "standup", "# Run our weekly standup\n\nwith notes", FIXED_TS + DAY,
                  debate={"protocol": "conversation", "turns": 6}, roles=["architect", "kiss"])
    await _debate(root, "queue", "Pick a message queue for billing events", FIXED_TS + 2 * DAY,
                  debate={"protocol": "simultaneous"})
    with LoopbackServer() as server:
        await _debate(root, "migration", "Plan the database migration to Postgres 16", FIXED_TS + 3 * DAY,
                      base_url=server.base_url, roles=["architect", "kiss"])
    await _debate(root, "killed", "Design a URL shortener", FIXED_TS + 4 * DAY, rounds=2)
    # Killed mid-debate: the log stops in round 2, no snapshot, no process holds it.
    folder = StateDir(root).open("killed")
    events = list(read_events(folder.events_path))
    cut = next(i for i, e in enumerate(events) if e.type == "round_started" and e.round == 2)
    folder.events_path.write_text("".join(EventLogWriter.encode(e) + "\n" for e in events[:cut + 3]), "utf-8")
    folder.state_path.unlink()


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sessions") / "debates"
    asyncio.run(_make(root))
    return root


@pytest.fixture
def debates(made: Path, tmp_path: Path) -> Iterator[Path]:
    """A fresh copy in the test's folder (the working directory), named as the title shows it;
    dates in UTC."""
    shutil.copytree(made, tmp_path / "debates")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TZ", "UTC")
        time.tzset()
        yield Path("debates")
    time.tzset()


def sessions_app(root: Path):  # type: ignore[no-untyped-def]
    return create_app(None, state_dir=StateDir(root), cursor_blink=False)


async def loaded(pilot) -> DebatesScreen:  # type: ignore[no-untyped-def]
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, DebatesScreen) and pilot.app.screen.loaded)
    await pilot.pause()
    return pilot.app.screen


def order(screen: DebatesScreen) -> list[str]:
    return [r.id for r in screen.shown]


def title(screen: DebatesScreen) -> str:
    return str(screen.query_one("#debates-title", Label).render())


async def test_lists_every_debate_newest_first_with_its_numbers(debates: Path) -> None:
    app = sessions_app(debates)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        assert order(screen) == ["killed", "migration", "queue", "standup", "rate-limiter"]
        rows = {r.id: r for r in screen.shown}
        assert rows["killed"].status == "unfinished" and rows["killed"].done == 2
        assert rows["standup"].protocol == "conversation" and rows["standup"].unit == "turns"
        assert rows["standup"].problem == "Run our weekly standup"
        assert rows["migration"].cost_usd > 0 and not rows["migration"].demo and rows["queue"].demo
        assert all(r.tokens > 0 for r in screen.shown)
        table = screen.query_one(DataTable)
        first = [str(c) for c in table.get_row("killed")]
        assert first[:4] == ["2023-11-18 22:13", "unfinished", "rounds · DEMO", "2/2 rounds"]
        assert "5 debates · sorted by date ↓" in title(screen)


async def test_sort_by_keys_and_header_clicks(debates: Path) -> None:
    app = sessions_app(debates)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("s")  # the next column: status, A to Z
        assert screen.sort_key == "status"  # completed before unfinished; newest first among equals
        assert order(screen) == ["migration", "queue", "standup", "rate-limiter", "killed"]
        await pilot.press("S")
        assert order(screen)[0] == "killed"
        await pilot.click(DataTable, offset=(_header_x(screen, "cost"), 0))
        await pilot.pause()
        assert screen.sort_key == "cost" and screen.descending and order(screen)[0] == "migration"
        assert "Cost ▼" in [str(c.label) for c in screen.query_one(DataTable).columns.values()]
        await pilot.click(DataTable, offset=(_header_x(screen, "cost"), 0))
        await pilot.pause()
        assert not screen.descending and order(screen)[-1] == "migration"
        await pilot.click(DataTable, offset=(_header_x(screen, "tokens"), 0))
        await pilot.pause()
        tokens = [r.tokens for r in screen.shown]
        assert tokens == sorted(tokens, reverse=True)
        # The cursor stays on the debate it was on.
        table = screen.query_one(DataTable)
        table.move_cursor(row=table.get_row_index("queue"))
        await pilot.press("s")
        assert screen.selected_id() == "queue"


def _header_x(screen: DebatesScreen, key: str) -> int:
    x = 0
    for column_key, column in screen.query_one(DataTable).columns.items():
        if column_key.value == key:
            return x + 2
        x += column.get_render_width(screen.query_one(DataTable))
    raise AssertionError(key)


async def test_filter_as_you_type(debates: Path) -> None:
    app = sessions_app(debates)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("slash")
        assert isinstance(screen.focused, Input)
        await pilot.press(*"queue")
        assert order(screen) == ["queue"] and "1 of 5 debates" in title(screen)
        await pilot.press("escape")  # clears the filter, back in the table
        assert len(order(screen)) == 5 and isinstance(screen.focused, DataTable)
        await pilot.press("slash", *"demo conversation")
        assert order(screen) == ["standup"]
        await pilot.press("enter")  # back to the table, the filter kept
        assert isinstance(screen.focused, DataTable) and order(screen) == ["standup"]
        await pilot.press("ctrl+f", "ctrl+a")
        screen.query_one(Input).value = "no such debate"
        await pilot.pause()
        assert order(screen) == []
        assert "no debate matches" in str(screen.query_one("#debates-empty", Label).render())
        screen.query_one(Input).value = "UNFINISHED"
        await pilot.pause()
        assert order(screen) == ["killed"]


async def test_escape_leaves_the_filter_so_the_next_keys_act_on_the_table(debates: Path) -> None:
    app = sessions_app(debates)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await loaded(pilot)
        before = screen.sort_key
        await pilot.press("slash", "s", "escape", "s")
        assert screen.query_one(Input).value == ""  # the second `s` did not land in the filter
        assert len(order(screen)) == 5 and screen.sort_key != before  # it sorted


async def test_a_burst_after_the_slash_reaches_the_filter(debates: Path) -> None:
    """`/queue` sent in one burst (tmux send-keys, a paste): every key is in the filter, none
    reaches the table's keys (`q` would quit); a `/` inside the filter is text."""
    from tests.tui.test_key_bursts import burst

    app = sessions_app(debates)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await loaded(pilot)
        burst(app, "/queue")
        await wait_for(pilot, lambda: screen.query_one(Input).value == "queue")
        assert order(screen) == ["queue"] and app.is_running
        burst(app, "/x")
        await wait_for(pilot, lambda: screen.query_one(Input).value == "queue/x")


async def test_open_watch_and_replay_then_come_back(debates: Path) -> None:
    app = sessions_app(debates)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await loaded(pilot)
        table = screen.query_one(DataTable)
        table.move_cursor(row=table.get_row_index("standup"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DebateScreen) and app.screen.loaded)
        assert app.screen.runtime.mode == "watch" and app.screen.state.id == "standup"
        await settle(pilot)
        await pilot.press("d")  # the list below it comes back, not a second one
        await pilot.pause()
        assert app.screen is screen and screen.selected_id() == "standup"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DebateScreen) and app.screen.loaded)
        while isinstance(app.screen, DebateScreen):
            await pilot.press("escape")
            await pilot.pause()
        assert app.screen is screen and screen.selected_id() == "standup"
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, DebateScreen))
        assert app.screen.runtime.mode == "replay"


async def test_reached_from_a_debate_with_d_and_slash_debates(debates: Path) -> None:
    """From a watched debate: `d` lists the debates of its state dir; picking the one shown goes
    back to its screen instead of opening it twice; `/debates` opens the list again."""
    app = create_app(WatchRuntime(StateDir(debates).open("queue")), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DebateScreen) and app.screen.loaded)
        debate = app.screen
        await settle(pilot)
        await pilot.press("d")
        sessions = await loaded(pilot)
        assert sessions.can_go_back and len(order(sessions)) == 5
        table = sessions.query_one(DataTable)
        table.move_cursor(row=table.get_row_index("queue"))
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is debate
        await command(pilot, "/debates")
        again = await loaded(pilot)
        assert again.can_go_back and len(app.screen_stack) == 3  # the default screen, the debate, the list
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is debate


@SIZES
def test_snapshot_sessions(snap_compare, debates: Path, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await loaded(pilot)

    assert snap_compare(sessions_app(debates), terminal_size=size, run_before=run_before)


def test_snapshot_sessions_filtered_by_cost(snap_compare, debates: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        screen = await loaded(pilot)
        screen.sort_by("cost")
        await pilot.press("slash", *"rounds")
        await pilot.pause()

    assert snap_compare(sessions_app(debates), terminal_size=(80, 24), run_before=run_before)

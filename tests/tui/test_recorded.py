"""Watch, replay and the list of saved debates: the same screen from the log on disk."""

from __future__ import annotations

from textual.widgets import DataTable, Label

from moot.core.session import SessionOptions, resume_session  # noqa: F401
from moot.core.storage.state_dir import StateDir
from moot.tui.activity import calls_in_flight
from moot.tui.app import create_app
from moot.tui.runtime import ReplayRuntime, WatchRuntime, replay_timeline
from moot.tui.screens.debate import DebateScreen
from moot.tui.screens.debates import DebatesScreen

from .conftest import feedback, fixed_clock, settle, upto, wait_for


async def test_watch_shows_a_finished_debate_read_only(recorded_folder) -> None:  # type: ignore[no-untyped-def]
    app = create_app(WatchRuntime(recorded_folder, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.loaded)
        await settle(pilot)
        assert screen.state.status == "completed"
        assert screen.panes["judge"].solution_shown
        assert screen.state.model_dump(exclude={"log_offset"}) == recorded_folder.load().model_dump(exclude={"log_offset"})
        for line in ("/summarize architect", "/pause", "/stop"):
            screen.run_command_line(line)
            assert feedback(app).startswith("the debate is completed: nothing to")
        screen.run_command_line("/context kiss 2")
        await pilot.pause()
        assert type(app.screen).__name__ == "ContextScreen"


async def test_watch_of_a_running_debate_with_no_writer_is_read_only(recorded, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A log that stops mid-debate (its process was killed): shown, not steerable."""
    from moot.core.storage.log_writer import EventLogWriter

    folder = StateDir(tmp_path).create("killed")
    half = upto(recorded, lambda e: e.type == "call_started" and e.view.phase == "critique" and e.view.round == 2)
    folder.events_path.write_text("".join(EventLogWriter.encode(e) + "\n" for e in half), encoding="utf-8")
    app = create_app(WatchRuntime(folder, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.loaded)
        assert screen.state.status == "running" and not screen.runtime.can_steer
        await wait_for(pilot, lambda: str(screen.query_one("#hdr-status", Label).render()) == "WATCH · NOT RUNNING")
        # The calls in flight when the log stopped show as running, with their time.
        flying = {e.view.agent_id for e in calls_in_flight(half) if e.view.phase != "summarize"}
        assert flying
        await settle(pilot)
        for agent_id in flying:
            assert "call in progress · 0s" in str(screen.panes[agent_id].border_subtitle)
        for line in ("/summarize architect", "/pause", "/stop", "/inject hi"):
            screen.run_command_line(line)
            assert feedback(app) == "read-only: no process is running this debate", line


def test_replay_timeline_synthesizes_tokens_between_call_and_contribution(recorded) -> None:  # type: ignore[no-untyped-def]
    timeline = replay_timeline(recorded)
    assert [e for e in timeline if e.type != "token"] == recorded
    starts = {e.view.call_id: i for i, e in enumerate(timeline) if e.type == "call_started"}
    for i, e in enumerate(timeline):
        if e.type == "contribution_added" and e.contribution.metadata.call_id in starts:
            call_id = e.contribution.metadata.call_id
            tokens = [j for j, t in enumerate(timeline) if t.type == "token" and t.call_id == call_id]
            assert tokens and starts[call_id] < tokens[0] and tokens[-1] < i
            assert "".join(timeline[j].delta for j in tokens) == e.contribution.content


async def test_replay_plays_to_the_same_state(recorded_folder) -> None:  # type: ignore[no-untyped-def]
    runtime = ReplayRuntime(recorded_folder, speed=0, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, speed=0)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: runtime.finished, timeout=30)
        await settle(pilot)
        assert screen.state.status == "completed"
        assert len(screen.state.all_contributions()) == len(recorded_folder.load().all_contributions())
        screen.run_command_line("/pause")
        assert runtime.paused
        screen.run_command_line("/resume")
        assert not runtime.paused
        screen.run_command_line("/summarize all")
        assert feedback(app).startswith("read-only")


async def test_picker_lists_debates_and_opens_one(recorded_folder) -> None:  # type: ignore[no-untyped-def]
    app = create_app(None, state_dir=StateDir(recorded_folder.path.parent), cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DebatesScreen) and app.screen.loaded)
        table = app.screen.query_one(DataTable)
        assert table.row_count == 1
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DebateScreen) and app.screen.loaded)
        assert app.screen.runtime.mode == "watch"
        await settle(pilot)
        await pilot.press("escape")  # the solution is zoomed: first escape shows every pane
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DebatesScreen)


async def test_picker_with_no_debates(tmp_path) -> None:  # type: ignore[no-untyped-def]
    app = create_app(None, state_dir=tmp_path / "none", cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DebatesScreen) and app.screen.loaded)
        assert "no debates in" in str(app.screen.query_one("#debates-empty", Label).render())


async def test_a_finished_debate_at_80x24_opens_on_the_solution_and_escape_goes_back(recorded_folder) -> None:  # type: ignore[no-untyped-def]
    app = create_app(None, state_dir=StateDir(recorded_folder.path.parent), cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DebatesScreen) and app.screen.loaded)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DebateScreen) and app.screen.loaded)
        await settle(pilot)
        screen = app.screen
        assert screen.compact and screen.zoomed is None  # the roster stays beside the solution
        assert screen.current == "judge" and screen.panes["judge"].solution_shown
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DebatesScreen)

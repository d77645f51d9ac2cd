"""`/summarize [agent|all] [focus]`, feedback that follows what the debate did, `/save` and `/copy`."""

from __future__ import annotations

from pathlib import Path

from moot.core.events import ControlChanged, DebateInterrupted, Event, SummaryAdded, SummaryRequested
from moot.core.observe.printer import solution_document
from moot.core.storage.state import apply, new_state
from moot.tui.app import create_app
from moot.tui.screens.confirm import ConfirmScreen
from moot.tui.screens.debate import DebateScreen
from moot.tui.widgets.agent_pane import AgentPane
from tests.tui.scripted import ScriptedRuntime

from .conftest import FIXED_TS, FOCUS, command, feedback, fixed_clock, settle, upto


def split_at_manual_summary(recorded: list[Event]) -> tuple[list[Event], list[Event]]:
    """Events before the architect's summary request, and from the request to its summary."""
    before = upto(recorded, lambda e: e.type == "summary_requested", inclusive=False)
    rest = recorded[len(before):]
    through = upto(rest, lambda e: e.type == "summary_added" and e.summary.trigger == "manual")
    return before, through


async def test_summarize_with_a_focus_shows_the_summary_it_made(recorded4) -> None:  # type: ignore[no-untyped-def]
    before, through = split_at_manual_summary(recorded4)
    made = through[-1]
    assert isinstance(made, SummaryAdded) and made.summary.focus == FOCUS
    runtime = ScriptedRuntime(events=before, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, runtime)
        await command(pilot, f"/summarize architect {FOCUS}")
        assert runtime.commands == [("summarize", "architect", FOCUS)]
        assert feedback(app).startswith(f"summary of architect requested (focus: {FOCUS})")
        runtime.push(*through)
        await settle(pilot, runtime)
        md = made.summary.metadata
        assert feedback(app).startswith("architect summarized: ")
        assert md.before_tokens > md.after_tokens
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        pane = screen.panes["architect"]
        entry = pane.transcript.get(f"summary:{made.summary.id}")
        assert entry is not None and entry.expanded and entry.kind == "history"
        assert entry.text == made.summary.summary
        assert "focus: keep the numbers" in entry.title and made.summary.method in entry.title
        # The block opens and closes on click (one line when closed).
        pane.transcript.toggle(entry)
        assert not entry.expanded


async def test_summarize_arguments_and_errors(recorded) -> None:  # type: ignore[no-untyped-def]
    before, _ = split_at_manual_summary(recorded)
    runtime = ScriptedRuntime(events=before, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, runtime)
        await command(pilot, "/summarize achitect keep it")
        assert "no agent 'achitect' — did you mean architect?" in feedback(app)
        await command(pilot, "/summarize judge")
        assert "the judge summarizes the final round by itself" in feedback(app)
        await command(pilot, "/summarize kiss " + "x" * 501)
        assert "at most 500" in feedback(app)
        assert runtime.commands == []
        await command(pilot, "/summarize all the costs")
        assert runtime.commands == [("summarize", a, "the costs") for a in ("architect", "performance", "kiss")]
        assert feedback(app).startswith("summary of every agent requested (focus: the costs)")


async def test_s_without_a_focused_pane_asks_before_summarizing_every_agent(recorded) -> None:  # type: ignore[no-untyped-def]
    before, _ = split_at_manual_summary(recorded)
    runtime = ScriptedRuntime(events=before, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, runtime)
        app.screen.set_focus(None)
        await pilot.press("s")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert runtime.commands == [] and isinstance(app.screen, DebateScreen)
        app.screen.set_focus(None)  # closing the dialog gave the focus back to a pane
        await pilot.press("s")
        await pilot.press("y")
        await pilot.pause()
        assert [c[:2] for c in runtime.commands] == [("summarize", a) for a in ("architect", "performance", "kiss")]
        # with a pane focused, s summarizes that agent at once
        runtime.commands.clear()
        app.screen.set_focus(app.screen.query_one("#pane-kiss", AgentPane))
        await pilot.press("s")
        assert runtime.commands == [("summarize", "kiss")] and isinstance(app.screen, DebateScreen)


async def test_feedback_lines_follow_what_the_debate_did(recorded) -> None:  # type: ignore[no-untyped-def]
    before, _ = split_at_manual_summary(recorded)
    runtime = ScriptedRuntime(events=before, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, runtime)
        await command(pilot, "/pause")
        assert feedback(app).startswith("pausing: the calls in flight finish first")
        runtime.push(ControlChanged(ts=FIXED_TS, action="pause"), ControlChanged(ts=FIXED_TS, action="pause",
                                                                                  effective=True))
        await settle(pilot, runtime)
        assert feedback(app).startswith("paused: no call in flight")
        await command(pilot, "/resume")
        assert feedback(app) == "resumed"
        await command(pilot, "/stop")
        assert feedback(app).startswith("stopping at the next call boundary")
        runtime.push(DebateInterrupted(ts=FIXED_TS, status="stopped"))
        await settle(pilot, runtime)
        assert feedback(app).startswith("stopped and saved — continue with `moot resume recorded`")
        # A request made elsewhere (moot ctl) shows in the pane, not as this screen's feedback.
        runtime.push(SummaryRequested(ts=FIXED_TS, agent_id="kiss", focus="x", command_id="cmd-1"))
        await settle(pilot, runtime)
        assert "summary requested: x" in str(app.screen.query_one("#pane-kiss .pane-badge").render())


async def test_save_and_copy_the_final_solution(recorded, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    state = new_state("recorded")
    for e in recorded:
        apply(state, e)
    expected = solution_document(state)
    assert expected.startswith("# Design a URL shortener\n") and "Confidence" in expected
    before = upto(recorded, lambda e: e.type == "phase_started" and e.phase == "synthesis")
    runtime = ScriptedRuntime(events=before, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, runtime)
        await command(pilot, "/save")
        assert "no final solution yet" in feedback(app)
        runtime.push(*recorded[len(before):])
        await settle(pilot, runtime)
        await command(pilot, "/save")
        default = tmp_path / "solution-recorded.md"
        assert default.read_text(encoding="utf-8") == expected
        assert str(default) in feedback(app)
        (tmp_path / "out").mkdir()
        await command(pilot, "/save out/answer.md")
        assert (tmp_path / "out" / "answer.md").read_text(encoding="utf-8") == expected
        assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]  # no temp file left
        await command(pilot, "/save out/share/2026/answer.md")  # folders not there yet are made
        assert (tmp_path / "out" / "share" / "2026" / "answer.md").read_text(encoding="utf-8") == expected
        assert "made out/share/" in feedback(app)
        (tmp_path / "notes.txt").write_text("Remember to ask about the retention policy.\n")
        await command(pilot, "/save notes.txt/x.md")  # a file where a folder should be
        assert feedback(app).startswith("cannot write notes.txt/x.md: a file is in the way of its folder")
        assert (tmp_path / "notes.txt").read_text() == "Remember to ask about the retention policy.\n"
        await command(pilot, "/copy")
        assert app.clipboard == expected
        assert feedback(app).startswith("final solution copied")

"""Clarifying questions, moderator notes (/inject), convergence/budget lines and cost in the header."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widgets import Button, Input, Label

from moot.core.events import (
    BudgetReached,
    ClarificationsAnswered,
    Converged,
    ConvergenceScored,
    DebateCompleted,
    Event,
    NoteInjected,
)
from moot.core.models.state import Clarification, ConvergenceScore, ModeratorNote, Usage
from moot.core.observe.describe import Line, describe
from moot.tui.app import create_app
from moot.tui.commands import COMMANDS
from moot.tui.runtime import LiveRuntime, WatchRuntime
from moot.tui.screens.clarify import ClarifyScreen
from moot.tui.screens.debate import DebateScreen
from moot.tui.widgets.command_input import CommandInput
from moot.tui.widgets.debate_header import DebateHeader
from moot.tui.widgets.event_log import EventLog
from tests.tui.scripted import ScriptedRuntime

from .conftest import command, events_of, feedback, fixed_clock, make_session, settle, wait_for

CLARIFY = {"clarify": True}


def log_text(screen: DebateScreen) -> str:
    return "\n".join(strip.text for strip in screen.query_one(EventLog).lines)


def keys(text: str) -> list[str]:
    return [{" ": "space", "/": "slash"}.get(ch, ch) for ch in text]


def pause_after_first_proposal(session) -> None:  # type: ignore[no-untyped-def]
    orch = session.orchestrator
    done: list[bool] = []

    def listen(event) -> None:  # type: ignore[no-untyped-def]
        if event.type == "contribution_added" and event.contribution.agent_id == "architect" and not done:
            done.append(True)
            asyncio.get_running_loop().call_soon(orch.pause)

    session.bus.listen(listen)


# ---------------------------------------------------------------- clarifying questions


async def test_clarify_dialog_answers_reach_the_debate(tmp_path: Path) -> None:
    session = make_session(tmp_path / "state", rounds=1, debate=CLARIFY)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ClarifyScreen))
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ClarifyScreen)
        n = len(dialog.questions)
        assert n >= 3 and len(dialog.query(Input)) == n
        first = dialog.questions[0]
        label = str(dialog.query(".clarify-question").first().render())
        assert first.question in label and "Architect" in label  # the agent's name, then its question
        assert dialog.query_one("#answer-0", Input).has_focus
        await pilot.press(*keys("Postgres, 10k req/s"))  # the app's / binding must not steal the slash
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, DebateScreen))
        screen = app.screen
        await wait_for(pilot, lambda: screen.state.status == "completed", timeout=60)
        await settle(pilot)
        assert "clarify: %d questions, 1 answered" % n in log_text(screen)
        assert "clarifying questions" in log_text(screen)
        entry = screen.panes["architect"].transcript.get(screen.panes["architect"]._clarify_keys.get(1, ""))
        assert entry is not None and "Postgres, 10k req/s" in entry.text
    state = session.state
    assert state.clarified
    assert [c.answer for c in state.clarifications] == ["Postgres, 10k req/s"] + [""] * (n - 1)
    # the debate went on, and every later call carries the answer verbatim
    proposals = [c for c in state.rounds[0].contributions if c.type == "proposal"]
    assert len(proposals) == 3 and state.final_solution is not None
    calls = [v for v in state.rounds[0].calls if v.phase == "proposal"]
    assert calls and all("Postgres, 10k req/s" in v.inline.get("notes", "") for v in calls)
    kinds = [e["type"] for e in events_of(session)]
    assert kinds.index("clarifications_asked") < kinds.index("clarifications_answered") < kinds.index("round_started")


async def test_clarify_skip_all_and_enter_moves_on(tmp_path: Path) -> None:
    session = make_session(tmp_path / "state", rounds=1, debate=CLARIFY)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ClarifyScreen))
        await pilot.pause()
        dialog = app.screen
        await pilot.press(*keys("typed then skipped"), "enter")
        assert dialog.query_one("#answer-1", Input).has_focus  # enter: the next answer
        dialog.query_one("#clarify-skip", Button).press()
        await wait_for(pilot, lambda: session.state.clarified)
        await wait_for(pilot, lambda: session.state.status == "completed", timeout=60)
    assert session.state.clarifications and all(c.answer == "" for c in session.state.clarifications)


async def test_quitting_with_the_dialog_open_stops_without_hanging(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # A grace far longer than the wait below: the app can only end in time because the open
    # dialog gave up at once, and "stopped" (not "interrupted") says the grace never ran out.
    monkeypatch.setattr(LiveRuntime, "STOP_GRACE_S", 600.0)
    session = make_session(tmp_path / "state", rounds=1, debate=CLARIFY)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ClarifyScreen))
        await pilot.pause()
        await pilot.press("ctrl+q")
        await pilot.pause()
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.is_running, timeout=60)
    assert session.state.status == "stopped"
    assert not session.state.clarified  # asked again on resume
    assert [e["type"] for e in events_of(session)][-1] == "debate_interrupted"


async def test_watch_installs_no_clarifier(recorded_folder) -> None:  # type: ignore[no-untyped-def]
    app = create_app(WatchRuntime(recorded_folder, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, DebateScreen)
        await command(pilot, "/inject hello")
        assert "the debate is completed: nothing to inject" in feedback(app)


def test_no_clarifier_without_clarify(session, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    create_app(LiveRuntime(session, clock=fixed_clock))
    assert session.orchestrator.clarifier is None
    s2 = make_session(tmp_path / "other", debate=CLARIFY)
    create_app(LiveRuntime(s2, clock=fixed_clock))
    assert s2.orchestrator.clarifier is not None


# ---------------------------------------------------------------- /inject


async def test_inject_adds_a_moderator_note(session) -> None:  # type: ignore[no-untyped-def]
    pause_after_first_proposal(session)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: session.orchestrator.paused)
        await command(pilot, "/inject")
        assert "usage: /inject TEXT" in feedback(app)
        await command(pilot, "/inject    ")
        assert "usage: /inject TEXT" in feedback(app)
        assert not session.state.notes
        await command(pilot, "/inject Keep it simple")
        assert "moderator note added" in feedback(app)
        assert session.state.notes[0].text == "Keep it simple"
        await command(pilot, "/resume")
        await wait_for(pilot, lambda: screen.state.status == "completed", timeout=60)
        await settle(pilot)
        assert "moderator note (agents see it from their next call): Keep it simple" in log_text(screen)
        assert screen.state.notes[0].text == "Keep it simple"
    notes = [e for e in events_of(session) if e["type"] == "note_injected"]
    assert len(notes) == 1 and notes[0]["note"]["text"] == "Keep it simple"
    later = [v for r in session.state.rounds for v in r.calls if v.phase == "refinement"]
    assert later and all("Keep it simple" in v.inline.get("notes", "") for v in later)


async def test_inject_from_the_palette_prefills_the_command_line() -> None:
    runtime = ScriptedRuntime(clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*keys("moderator note"))
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        command_input = app.screen.query_one(CommandInput)
        assert command_input.value == "/inject "
        assert command_input.has_focus
        await pilot.press(*keys("Mind the cost"), "enter")
        await pilot.pause()
        # the scripted debate has not started: nothing is sent
        assert "has not started" in feedback(app)
        assert runtime.commands == []


async def test_the_palette_offers_every_command_of_the_table_search_among_them() -> None:
    runtime = ScriptedRuntime(clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(140, 45)) as pilot:
        offered = {line.split()[0] for _, _, line in app.screen.palette_entries()}
        assert offered == {f"/{name}" for name in COMMANDS}  # /theme through its per-theme entries
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*keys("search this debate"))
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        command_input = app.screen.query_one(CommandInput)
        assert command_input.value == "/search "
        assert command_input.has_focus


# ---------------------------------------------------------------- header and event log


async def test_header_shows_cost_and_caps_within_140_columns(recorded) -> None:  # type: ignore[no-untyped-def]
    events = [e.model_copy(deep=True) for e in recorded]
    started = events[0]
    assert started.type == "debate_started"
    started.problem = "Design a URL shortener that survives regional outages and a very long title " * 3
    started.config["debate"].update(max_cost_usd=0.05, max_total_tokens=2_000_000)
    for e in events:
        if e.type == "contribution_added":
            e.contribution.metadata.cost_usd = 0.0005
    end = next(i for i, e in enumerate(events) if e.type == "synthesis_completed")
    events = [*events[:end], BudgetReached(ts=events[end].ts, reason="cost reached the cap"),
              DebateCompleted(ts=events[end].ts, status="stopped_budget")]  # the widest status badge
    runtime = ScriptedRuntime(events=events, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot, runtime)
        screen = app.screen
        assert "STOPPED BUDGET" in str(screen.query_one("#hdr-status", Label).render())
        cost = screen.query_one("#hdr-cost", Label)
        spent = sum(c.metadata.cost_usd for r in screen.state.rounds for c in r.contributions)
        assert cost.display and str(cost.render()) == f"${spent:.4f}/$0.05"
        assert "/2.0M tok" in str(screen.query_one("#hdr-tokens", Label).render())
        header = screen.query_one(DebateHeader)
        for label in header.query(Label):
            if label.display:
                assert label.region.right <= 140, label.id
        assert screen.query_one("#hdr-title", Label).region.width >= 10


async def test_header_hides_cost_for_the_demo(recorded) -> None:  # type: ignore[no-untyped-def]
    runtime = ScriptedRuntime(events=recorded, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot, runtime)
        assert not app.screen.query_one("#hdr-cost", Label).display


def test_event_log_lines_for_the_new_events() -> None:
    qs = [Clarification(agent_id="a", question="q1", answer="x"), Clarification(agent_id="b", question="q2"),
          Clarification(agent_id="a", question="q3", answer="y")]
    answered = ClarificationsAnswered(round=1, answers=qs, done=True)
    assert describe(answered) == Line("manual", "clarify: 3 questions, 2 answered")
    assert text_of(ClarificationsAnswered(round=1, answers=[], done=True)) == "clarify: no questions"
    note = ModeratorNote(id="n1", text="Keep it\nsimple", after_round=1)
    assert text_of(NoteInjected(note=note)).endswith(": Keep it simple")
    assert "convergence score 70" in text_of(ConvergenceScored(score=ConvergenceScore(round=2, confidence=70)))
    assert text_of(Converged(round=2, confidence=92, threshold=90)).startswith("✓ converged after round 2")
    line = describe(BudgetReached(reason="cost $0.0500 reached the cap of $0.0500"))
    assert line is not None and line.kind == "warning" and "budget reached" in line.text
    done = describe(DebateCompleted(status="stopped_budget", totals=Usage(cost_usd=0.0123)))
    assert done == Line("warning", "■ debate stopped at its budget: 0 prompt + 0 completion tokens, $0.0123")


def text_of(event: Event) -> str:
    line = describe(event)
    assert line is not None
    return line.text

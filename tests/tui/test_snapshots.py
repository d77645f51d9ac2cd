"""Snapshots at 140×45, driven from a recorded demo debate (deterministic: no racing the engine).

Regenerate with `pytest tests/tui/test_snapshots.py --snapshot-update` and look at the
report before committing the SVGs.
"""

from __future__ import annotations

from moot.core.events import CallFailed, DebateFailed, Event, Token, Warning_
from moot.tui.app import create_app
from tests.tui.scripted import ScriptedRuntime

from .conftest import FIXED_TS, fixed_clock, settle, upto

SIZE = (140, 45)


def app_for(events: list[Event], theme: str | None = None):  # type: ignore[no-untyped-def]
    runtime = ScriptedRuntime(events=events, clock=fixed_clock)
    return create_app(runtime, cursor_blink=False, clock=fixed_clock, theme=theme), runtime


def half_streamed(recorded: list[Event], round_no: int, phase: str) -> list[Event]:
    """call_started of every agent's call in this round and phase, with half of each reply streamed."""
    out: list[Event] = []
    calls = [e for e in recorded if e.type == "call_started" and e.view.round == round_no and e.view.phase == phase]
    replies = {e.contribution.metadata.call_id: e.contribution.content
               for e in recorded if e.type == "contribution_added"}
    for call in calls:
        out.append(call)
    for call in calls:
        text = replies[call.view.call_id]
        out.append(Token(ts=FIXED_TS, call_id=call.view.call_id, agent_id=call.view.agent_id,
                         delta=text[: len(text) // 2]))
    return out


def before_round2_critiques(recorded: list[Event]) -> list[Event]:
    return upto(recorded, lambda e: e.type == "phase_started" and e.round == 2 and e.phase == "critique")


def test_snapshot_start(snap_compare, recorded) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(upto(recorded, lambda e: e.type == "call_started"))

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_midstream_gauges(snap_compare, recorded) -> None:  # type: ignore[no-untyped-def]
    # Round 2's proposals are the round-1 refinements carried over: its critiques are the calls.
    app, runtime = app_for(before_round2_critiques(recorded) + half_streamed(recorded, 2, "critique"))

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_after_manual_summarize(snap_compare, recorded) -> None:  # type: ignore[no-untyped-def]
    requested = upto(recorded, lambda e: e.type == "summary_requested", inclusive=False)
    rest = recorded[len(requested):]
    through_manual = upto(rest, lambda e: e.type == "summary_added" and e.summary.trigger == "manual")
    app, runtime = app_for(requested)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)
        await pilot.press("slash", *"summarize architect", "enter")
        assert runtime.commands == [("summarize", "architect")]
        runtime.push(*through_manual)
        await settle(pilot, runtime)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_context_inspector(snap_compare, recorded) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(recorded)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)
        pilot.app.screen.run_command_line("/context architect 2")
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_help(snap_compare, recorded) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(upto(recorded, lambda e: e.type == "call_started"))

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_error_state(snap_compare, recorded) -> None:  # type: ignore[no-untyped-def]
    events = upto(recorded, lambda e: e.type == "phase_started" and e.phase == "refinement")
    call = next(e for e in recorded[len(events):] if e.type == "call_started")
    failure = "openai: 503 Service Unavailable (after 3 retries)"
    events += [
        call,
        CallFailed(ts=FIXED_TS, call_id=call.view.call_id, agent_id="architect", error="503 Service Unavailable",
                   will_retry=True),
        CallFailed(ts=FIXED_TS, call_id=call.view.call_id, agent_id="architect", error=failure),
        Warning_(ts=FIXED_TS, message="architect: llm summary failed (timeout); used a rule-based summary",
                 agent_id="architect"),
        DebateFailed(ts=FIXED_TS, error=f"architect refinement in round 1 failed: {failure}"),
    ]
    app, runtime = app_for(events)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_light_theme(snap_compare, recorded) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(before_round2_critiques(recorded) + half_streamed(recorded, 2, "critique"), theme="light")

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_snapshot_final_solution(snap_compare, recorded) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(recorded)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)

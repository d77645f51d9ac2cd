"""What the screen looks like at 80×24, 100×30 and 160×48, driven from recorded demo debates
(deterministic: no racing the engine).

Regenerate with `pytest tests/tui/test_snapshots.py --snapshot-update` and look at the
report before committing the SVGs.
"""

from __future__ import annotations

import pytest
from rich.color import ColorSystem
from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.filter import LineFilter

from moot.core.events import CallFailed, DebateFailed, Event, Token, Warning_
from moot.tui.app import MootApp, create_app
from moot.tui.theming import BUNDLED
from tests.tui.scripted import ScriptedRuntime

from .conftest import FIXED_TS, FOCUS, fixed_clock, settle, upto

SMALL, MEDIUM, LARGE = (80, 24), (100, 30), (160, 48)
SIZES = pytest.mark.parametrize("size", [SMALL, MEDIUM, LARGE], ids=["80x24", "100x30", "160x48"])


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


def midstream(recorded: list[Event]) -> list[Event]:
    """Round 2's critiques half streamed (its proposals are round 1's refinements carried over)."""
    before = upto(recorded, lambda e: e.type == "phase_started" and e.round == 2 and e.phase == "critique")
    return before + half_streamed(recorded, 2, "critique")


def keys(text: str) -> list[str]:
    return ["space" if ch == " " else ch for ch in text]


def settled(runtime: ScriptedRuntime, *keys: str):  # type: ignore[no-untyped-def]
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)
        if keys:
            await pilot.press(*keys)
            await settle(pilot)
    return run_before


class EightBitColours(LineFilter):
    """What a 256-colour terminal shows: every colour as the nearest of its palette."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        out: list[Segment] = []
        for text, style, control in segments:
            if style is not None and (style.color is not None or style.bgcolor is not None):
                fg = style.color.downgrade(ColorSystem.EIGHT_BIT) if style.color is not None else None
                bg = style.bgcolor.downgrade(ColorSystem.EIGHT_BIT) if style.bgcolor is not None else None
                style = style + Style(color=fg, bgcolor=bg)
            out.append(Segment(text, style, control))
        return out


def in_256_colours(app: MootApp) -> MootApp:
    filters = [*app.get_line_filters(), EightBitColours()]
    app.get_line_filters = lambda: filters  # type: ignore[method-assign]  # the test's terminal, not a feature
    return app


# ---------------------------------------------------------------- a 4-agent debate at every size


@SIZES
def test_snapshot_midstream(snap_compare, recorded4, size) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(midstream(recorded4))
    assert snap_compare(app, terminal_size=size, run_before=settled(runtime))


def test_snapshot_start(snap_compare, recorded4) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(upto(recorded4, lambda e: e.type == "call_started"))
    assert snap_compare(app, terminal_size=SMALL, run_before=settled(runtime))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
def test_snapshot_after_summarize_with_a_focus(snap_compare, recorded4, size) -> None:  # type: ignore[no-untyped-def]
    requested = upto(recorded4, lambda e: e.type == "summary_requested", inclusive=False)
    rest = recorded4[len(requested):]
    through_manual = upto(rest, lambda e: e.type == "summary_added" and e.summary.trigger == "manual")
    app, runtime = app_for(requested)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)
        await pilot.press("slash", *keys(f"summarize architect {FOCUS}"), "enter")
        assert runtime.commands == [("summarize", "architect", FOCUS)]
        runtime.push(*through_manual)
        await settle(pilot, runtime)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_snapshot_context_overview(snap_compare, recorded4) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(midstream(recorded4))
    assert snap_compare(app, terminal_size=SMALL, run_before=settled(runtime, "c"))


def test_snapshot_context_overview_large(snap_compare, recorded4) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(recorded4)
    assert snap_compare(app, terminal_size=LARGE, run_before=settled(runtime, "escape", "c"))


def test_snapshot_inspector_finding(snap_compare, recorded4) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(midstream(recorded4))

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)
        await pilot.press("c", "down", "enter")
        await pilot.press("slash", *"latency", "enter", "n")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SMALL, run_before=run_before)


def test_snapshot_inspector(snap_compare, recorded) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(recorded)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)
        pilot.app.screen.run_command_line("/context architect 2")
        await settle(pilot)

    assert snap_compare(app, terminal_size=MEDIUM, run_before=run_before)


def test_snapshot_help(snap_compare, recorded4) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(upto(recorded4, lambda e: e.type == "call_started"))
    assert snap_compare(app, terminal_size=SMALL, run_before=settled(runtime, "question_mark"))


def test_snapshot_quit_asks(snap_compare, recorded4) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(midstream(recorded4))
    assert snap_compare(app, terminal_size=SMALL, run_before=settled(runtime, "q"))


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
    assert snap_compare(app, terminal_size=LARGE, run_before=settled(runtime))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
def test_snapshot_final_solution(snap_compare, recorded4, size) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(recorded4)
    assert snap_compare(app, terminal_size=size, run_before=settled(runtime))


@SIZES
def test_snapshot_conversation(snap_compare, recorded_conversation, size) -> None:  # type: ignore[no-untyped-def]
    events = upto(recorded_conversation, lambda e: e.type == "contribution_added" and e.contribution.round == 12)
    app, runtime = app_for(events)
    assert snap_compare(app, terminal_size=size, run_before=settled(runtime))


@pytest.mark.parametrize("theme", BUNDLED)
def test_snapshot_theme_in_256_colours(snap_compare, recorded4, theme) -> None:  # type: ignore[no-untyped-def]
    """Borders, gauges and the roster's selection as a 256-colour terminal shows them."""
    app, runtime = app_for(midstream(recorded4), theme=theme)
    assert snap_compare(in_256_colours(app), terminal_size=SMALL, run_before=settled(runtime))


def test_snapshot_theme_overview_in_256_colours(snap_compare, recorded4) -> None:  # type: ignore[no-untyped-def]
    """The overview's tier colours and its list selection, light theme, 256 colours."""
    app, runtime = app_for(midstream(recorded4), theme="light")
    assert snap_compare(in_256_colours(app), terminal_size=SMALL, run_before=settled(runtime, "c", "down"))

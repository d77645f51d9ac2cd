"""`/compare A B [round]` in the TUI: the screen, stepping through rounds, its refusals, and
snapshots at 80×24 and 160×48."""

from __future__ import annotations

import pytest
from textual.widgets import Label

from moot.tui.app import create_app
from moot.tui.screens.compare import CompareScreen, DiffColumn
from moot.tui.screens.debate import DebateScreen
from tests.tui.scripted import ScriptedRuntime

from .conftest import command, feedback, fixed_clock, settle


def app_for(events):  # type: ignore[no-untyped-def]
    runtime = ScriptedRuntime(events=events, clock=fixed_clock)
    return create_app(runtime, cursor_blink=False, clock=fixed_clock), runtime


def title(app) -> str:  # type: ignore[no-untyped-def]
    return str(app.screen.query_one("#cmp-title", Label).render())


async def test_compare_two_agents_and_step_through_the_rounds(recorded4) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(recorded4)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, runtime)
        await command(pilot, "/compare architect Kiss")  # by id, name or role, as everywhere
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        assert title(app) == "Compare ◀ Architect  ·  Kiss ▶  ·  round 2"
        headings = [str(h.render()) for h in app.screen.query(".cmp-heading")]
        assert headings[0].startswith("round 2 · proposal · ") and headings[0].endswith("% of the words in common")
        assert "claims only one of them makes" in headings
        assert "round 2 · what each said of the other" in headings
        left, right = list(app.screen.query(DiffColumn))[:2]
        assert left.side.contribution.agent_id == "architect" and right.side.contribution.agent_id == "kiss"
        marked = [span for span in left.text().spans if span.style]
        assert marked  # the words only the architect wrote are marked
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert title(app).endswith("round 1")
        await pilot.press("left_square_bracket")  # no round before the first
        await settle(pilot)
        assert title(app).endswith("round 1")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, DebateScreen)
        await command(pilot, "/compare architect kiss 1")
        await settle(pilot)
        assert title(app).endswith("round 1")


@pytest.mark.parametrize(("line", "error"), [
    ("/compare architect", "usage: /compare A B [round] — name two agents, e.g. /compare architect kiss 2"),
    ("/compare architect architect", "/compare takes two different agents (architect twice)"),
    ("/compare architect wizard", "no agent 'wizard' — agents: architect, performance, kiss, security"),
    ("/compare architect kiss 9", "no round 9: this debate has rounds 1–2"),
])
async def test_compare_refuses_in_one_line(recorded4, line: str, error: str) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(recorded4)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, runtime)
        await command(pilot, line)
        await settle(pilot)
        assert isinstance(app.screen, DebateScreen)
        assert feedback(app) == error


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_snapshot_compare(snap_compare, recorded4, size) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(recorded4)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)
        await command(pilot, "/compare architect security 1")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def _hostile(events, *, cut: bool = False):  # type: ignore[no-untyped-def]
    """The 4-agent debate with markup and an escape sequence in a name and in the vote's answers
    (a config's name, a model's answer: untrusted text); `cut`: only up to the first round."""
    from moot.core.events import DebateStarted, SynthesisCompleted
    from moot.core.models.state import Tally

    out = []
    for e in events:
        if cut and e.type == "round_started":
            break
        e = e.model_copy(deep=True)
        if isinstance(e, DebateStarted):
            e.agents[0].name = "Arch[/b] \x1b]0;t\x07itect"
        if isinstance(e, SynthesisCompleted):
            e.solution.tally = Tally(answers={"architect": "x [/x] y", "kiss": "[bold]42\x1b[2J"},
                                     counts={"x [/x] y": 1, "[bold]42\x1b[2J": 1}, winner="x [/x] y", rule="a tie")
        out.append(e)
    return out


@pytest.mark.parametrize("cut", [False, True], ids=["votes", "nothing-yet"])
async def test_compare_shows_names_and_answers_literally(recorded4, cut: bool) -> None:  # type: ignore[no-untyped-def]
    """Markup in a name or an answer is text (drawn as markup, '[/x]' raised MarkupError and ended
    the TUI); escape sequences never reach the screen."""
    from tests.tui.test_hostile_text import assert_clean

    app, runtime = app_for(_hostile(recorded4, cut=cut))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, runtime)
        await command(pilot, "/compare architect kiss")
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        app.screen.query_one("#cmp-body").scroll_end(animate=False, immediate=True)  # the table is last
        await settle(pilot, rounds=1)
        text = assert_clean(app)
        if cut:
            assert "Arch[/b] itect and Kiss have no contributions" in text
        else:
            assert "x [/x] y" in text and "[bold]42" in text

"""What the "what if" screens look like at 80×24 and 120×36: a debate and its fork side by side
(`/compare fork`), the inspector's re-run panel under a call's messages, and the editor `e` opens.

Driven from the recorded demo debate (deterministic ids, fixed clock); the fork is that debate
with its round-2 refinements and its answer written otherwise, so the pictures do not depend on a
fork's run. Regenerate with `pytest -n 0 tests/tui/test_snapshots_what_if.py --snapshot-update`
and read the SVGs' text before committing them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App
from textual.widgets import TextArea

from moot.core.events import Event
from moot.core.fork_compare import ForkComparison, compare_fork
from moot.core.models.state import DebateState, ForkOrigin
from moot.core.storage.folder import DebateFolder
from moot.core.storage.state import apply, new_state
from moot.tui.screens.context import ContextScreen
from moot.tui.screens.context_edit import EditCallScreen
from moot.tui.screens.fork_compare import ForkCompareScreen

from .conftest import settle
from .test_snapshots import app_for

SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
OTHERWISE = ("With the note in mind I keep everything in one region: a single Postgres primary holds the "
             "links, a read replica serves the redirects, and the counters batch into it every second.")


def _states(events: list[Event]) -> tuple[DebateState, DebateState]:
    parent = new_state(events[0].debate_id)
    for event in events:
        parent = apply(parent, event)
    fork = parent.model_copy(deep=True)
    fork.id = "snap-fork"
    fork.forked_from = ForkOrigin(debate=parent.id, at="round:2:refinement", seq=1)
    for c in fork.round(2).contributions:
        if c.type == "refinement":
            c.id, c.content = c.id + "-f", OTHERWISE + "\n\n" + c.content[: len(c.content) // 3]
            c.metadata.prompt_tokens += 120
    assert fork.final_solution is not None
    fork.final_solution.description = OTHERWISE
    return parent, fork


async def _to_refinement(pilot, screen: ContextScreen) -> None:  # type: ignore[no-untyped-def]
    """The inspector on the architect's round-2 refinement (a call whose reply is a contribution)."""
    while screen.record is not None and screen.record.phase != "refinement":
        await pilot.press("right")
    await settle(pilot)


class Host(App[None]):
    """Just the comparison screen (its parent and fork are built above, not run)."""

    def __init__(self, comparison: ForkComparison) -> None:
        super().__init__()
        self.comparison = comparison

    def on_mount(self) -> None:
        self.push_screen(ForkCompareScreen(self.comparison))


@SIZES
def test_snapshot_fork_compare(snap_compare, recorded, size) -> None:  # type: ignore[no-untyped-def]
    parent, fork = _states(recorded)
    assert snap_compare(Host(compare_fork(parent, fork)), terminal_size=size)


@SIZES
def test_snapshot_rerun_panel(snap_compare, recorded, size) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(recorded)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)
        pilot.app.screen.run_command_line("/context architect 2")
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, ContextScreen)
        await _to_refinement(pilot, screen)
        panel = screen.query_one("#ctx-rerun", TextArea)
        panel.display = True  # as `r` leaves it once the reply is in (the experiment's id fixed here)
        panel.load_text("re-running architect refinement (round 2) as recorded…\n\n" + OTHERWISE +
                        "\n\n── experiment exp-20260101-000000000-0000 saved · DEMO · 2,412 tok · $0.0000 ──"
                        "\n\nword diff against the recorded reply ([-removed-] {+added+}):\n\n{+With the note+} …")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@SIZES
def test_snapshot_edit_call(snap_compare, recorded, size, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app, runtime = app_for(recorded)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)
        pilot.app.screen.run_command_line("/context architect 2")
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, ContextScreen)
        await _to_refinement(pilot, screen)
        assert screen.record is not None
        from moot.core.context.inspect import call_view

        view = call_view(screen.record, screen.index)
        pilot.app.push_screen(EditCallScreen(screen.state, DebateFolder(tmp_path), screen.record, view))
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)

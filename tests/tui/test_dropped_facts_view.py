"""What each summary lost, on screen: the pane's summary event says how many facts it kept of how
many, and the inspector lists each one it dropped under the summary (snapshots at 80×24 and
120×36, scrolled there with the inspector's own find)."""

from __future__ import annotations

import pytest

from moot.core.events import Event, SummaryAdded
from moot.tui.app import create_app
from moot.tui.widgets.agent_pane import AgentPane
from tests.tui.scripted import ScriptedRuntime

from .conftest import fixed_clock, settle
from .test_context_screens import folded
from .test_snapshots import app_for, keys


async def test_the_panes_summary_says_how_many_facts_it_kept_of_how_many(recorded4: list[Event]) -> None:
    summaries = {e.summary.agent_id: e.summary for e in recorded4 if isinstance(e, SummaryAdded) and not e.judge}
    assert summaries
    runtime = ScriptedRuntime(events=recorded4, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, runtime)
        for pane in app.screen.query(AgentPane):
            s = summaries.get(pane.info.id)
            if s is None:
                continue
            facts, kept = s.metadata.facts, s.metadata.facts_kept
            assert facts is not None and kept is not None and facts > 0
            entry = pane.transcript.get(f"summary:{s.id}")
            assert entry is not None
            assert f" · {kept}/{facts} facts kept · " in entry.title
            assert f"{kept}/{facts} facts kept" in str(pane.query_one(".pane-badge").tooltip)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
def test_snapshot_inspector_lists_the_facts_a_summary_dropped(snap_compare, recorded_conversation,  # type: ignore[no-untyped-def]
                                                              size) -> None:
    state = folded(recorded_conversation)
    view = next(v for r in reversed(state.rounds) for v in r.calls if v.phase == "turn" and v.summary_id)
    app, runtime = app_for(recorded_conversation)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)
        await pilot.press("slash", *keys(f"context {view.agent_id} {view.round}"), "enter")
        await settle(pilot)
        await pilot.press("slash", *keys("lost:"), "enter")  # the inspector's find: to the first dropped fact
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)

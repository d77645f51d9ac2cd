"""A grounded debate in the TUI: each tool call is one collapsible line in its agent's pane (the
tool, its argument, what came back), the gauge and `/context` count the tools tier."""

from __future__ import annotations

import asyncio

import pytest

from moot.core.events import Event
from moot.core.storage.log import read_events
from moot.tui.app import create_app
from moot.tui.screens.context_overview import AgentOutlook, ContextOverviewScreen
from moot.tui.screens.debate import DebateScreen
from tests.grounding_helpers import make_refs
from tests.tui.scripted import ScriptedRuntime

from .conftest import fixed_clock, make_session, settle, upto


@pytest.fixture(scope="module")
def grounded(tmp_path_factory: pytest.TempPathFactory) -> list[Event]:
    root = tmp_path_factory.mktemp("grounded")
    refs = make_refs(root)
    session = make_session(root / "state", rounds=1, debate={"references": [str(refs)]}, debate_id="grounded")
    asyncio.run(session.run())
    return list(read_events(session.folder.events_path))


async def test_each_tool_call_is_one_line_in_its_pane_and_opens_on_click(grounded: list[Event]) -> None:
    events = upto(grounded, lambda e: e.type == "phase_completed" and e.phase == "proposal")
    runtime = ScriptedRuntime(events=events, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, runtime)
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        pane = screen.panes["architect"]
        transcript = pane.transcript
        lines = [e for e in transcript.entries if e.key.startswith("tool:")]
        titles = [e.title for e in lines]
        assert [t.split("(")[0] for t in titles] == ["⚒ list_files", "⚒ read_file", "⚒ search"]
        assert titles[0] == "⚒ list_files(.) → 3 files under ."
        assert titles[1].startswith("⚒ read_file(docs/plan.md, 60) → lines 1–14 of docs/plan.md")
        assert all(e.kind == "history" and not e.expanded and e.state == "done" for e in lines)
        transcript.toggle(lines[1])
        assert lines[1].expanded and '"path": "docs/plan.md"' in lines[1].text
        gauge = pane.gauge
        assert gauge.tokens is not None and gauge.tokens.tools > 0
        assert "tools " in str(gauge.tooltip)
        await pilot.press("c")
        await pilot.pause()
        overview = app.screen
        assert isinstance(overview, ContextOverviewScreen)
        widget = next(w for w in overview.query(AgentOutlook) if w.info.id == "architect")
        assert "tools" in str(widget.render())

"""The inspector (`/context agent turn`) shows, under the summary a view carried, how many facts
of what it covered the summary kept and each one it lost, with where it came from."""

from __future__ import annotations

from moot.core.events import Event
from moot.tui.app import create_app
from moot.tui.screens.context import ContextScreen, MessageText
from tests.tui.scripted import ScriptedRuntime

from .conftest import command, fixed_clock, settle
from .test_context_screens import folded


async def test_the_inspector_shows_what_the_summary_lost_under_it(recorded_conversation: list[Event]) -> None:
    state = folded(recorded_conversation)
    view = next(v for r in reversed(state.rounds) for v in r.calls if v.phase == "turn" and v.summary_id)
    summary = next(e.summary for e in recorded_conversation
                   if e.type == "summary_added" and e.summary.id == view.summary_id)
    facts, kept = summary.metadata.facts, summary.metadata.facts_kept
    assert facts is not None and kept is not None and facts > 0
    runtime = ScriptedRuntime(events=recorded_conversation, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot, runtime)
        await command(pilot, f"/context {view.agent_id} {view.round}")
        assert isinstance(app.screen, ContextScreen)
        text = app.screen.query_one(MessageText).text
    head, _, after = text.partition("━━ [user] summary")
    assert head and after  # the summary's message, then what it lost, then its text
    lines = after.split("\n")
    assert lines[1].startswith(f"summary {summary.id}: kept {kept} of {facts} facts of what it covered")
    lost = summary.dropped_facts or []
    assert lost  # the demo's summaries lose some of what their messages measured and left open
    assert lines[2: 2 + len(lost)] == [f"  lost: {f.text} ({f.source})" for f in lost]
    assert after.index("## Summary of the conversation so far") > after.index(lines[1])

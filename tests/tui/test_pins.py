"""/pin and /unpin on the command line of a live debate, the pinned tier in the agents' gauges, and
`/summarize … --from turn N`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from moot.tui.app import create_app
from moot.tui.runtime import LiveRuntime
from moot.tui.screens.context import MessageText
from moot.tui.widgets.token_gauge import TokenGauge

from .conftest import command, events_of, feedback, fixed_clock, make_session, wait_for

CONVERSATION = {"protocol": "conversation", "turns": 8}


async def test_pin_and_unpin_from_the_command_line_reach_the_views_and_the_gauge(tmp_path: Path) -> None:
    session = make_session(tmp_path / "state", debate=CONVERSATION)
    orch = session.orchestrator

    def listen(event) -> None:  # type: ignore[no-untyped-def]
        if event.type == "contribution_added" and event.contribution.round in (3, 6):
            asyncio.get_running_loop().call_soon(orch.pause)

    session.bus.listen(listen)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: orch.paused and session.state.current_round >= 3)
        await command(pilot, "/pin")
        assert "usage: /pin ITEM" in feedback(app)
        await command(pilot, "/pin turn 12")
        assert "no message of turn 12 is held" in feedback(app)
        await command(pilot, "/pin turn 2")
        assert "pinned turn 2: kept verbatim in every later view" in feedback(app)
        await command(pilot, "/pin turn 2")
        assert "turn 2 is pinned already" in feedback(app)
        await command(pilot, "/unpin turn 1")
        assert "turn 1 is not pinned" in feedback(app)
        await command(pilot, "/summarize all --from turn x")
        assert "--from turn 12" in feedback(app)
        await command(pilot, "/summarize all --from turn 3 keep the numbers")
        assert "summary of everything before turn 3 of every agent requested (focus: keep the numbers)" \
            in feedback(app)
        await command(pilot, "/resume")
        await wait_for(pilot, lambda: orch.paused and session.state.current_round >= 6, timeout=60)
        await pilot.pause()
        gauges = [g for g in screen.query(TokenGauge) if g.tokens is not None]
        assert any(g.tokens.pinned > 0 and "pinned " in str(g.tooltip) for g in gauges if g.tokens)
        await command(pilot, f"/context {session.state.agents[0].id}")  # the inspector names what is pinned
        await wait_for(pilot, lambda: isinstance(app.screen.focused, MessageText))
        assert "pinned: turn 2" in app.screen.query_one(MessageText).text
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)
        await command(pilot, "/unpin turn 2")
        assert "unpinned turn 2: later views may summarize it" in feedback(app)
        await command(pilot, "/resume")
        await wait_for(pilot, lambda: screen.state.status == "completed", timeout=60)
    changes = [(e["pin"]["label"], e["pin"]["active"], e["seq"]) for e in events_of(session)
               if e["type"] == "pin_changed"]
    assert [c[:2] for c in changes] == [("turn 2", True), ("turn 2", False)]
    asked = [e for e in events_of(session) if e["type"] == "summary_requested"]
    assert asked and all(e["from_step"] == 3 and e["focus"] == "keep the numbers" for e in asked)
    views = [(e["seq"], e["view"]) for e in events_of(session) if e["type"] == "call_started"]
    turns = [(s, v) for s, v in views if v["phase"] == "turn"]
    pinned = [v["round"] for s, v in turns if changes[0][2] < s < changes[1][2]]
    assert pinned and all(v.get("pinned") for s, v in turns if changes[0][2] < s < changes[1][2])
    assert all(not v.get("pinned") for s, v in turns if s > changes[1][2] or s < changes[0][2])


def test_snapshot_gauges_with_a_pinned_tier(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A conversation whose config pins the problem's constraints, at 80×24 while turn 5 is being
    written: each agent's gauge draws the pinned tier (▒) after its summary."""
    from tests.tui.scripted import ScriptedRuntime

    from .conftest import _record, settle, upto

    constraints = [
        "Every write path stays idempotent: a retried request with the same key returns the first result, "
        "and the key is kept for at least 24 hours so a client that retries after a timeout is safe.",
        "The p99 latency of a check stays under 5 ms at 20,000 requests a second on one node; the budget "
        "includes the network hop to the shared store and the serialisation of the response.",
        "No new runtime dependency is added without a named owner, a security review and a plan for the "
        "day its maintainers stop releasing; the team is two engineers for three months.",
    ]
    debate = {"protocol": "conversation", "turns": 6, "pinned": constraints,
              "conversation": {"max_context_tokens": 2500, "reserve_output_tokens": 500}}
    events = asyncio.run(_record(tmp_path, debate=debate, debate_id="pinned"))
    shown = upto(events, lambda e: e.type == "call_started" and e.view.round == 5 and e.view.phase == "turn")
    runtime = ScriptedRuntime(events=shown, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)

    assert shown[-1].type == "call_started" and shown[-1].view.tokens.pinned > 0.05 * shown[-1].view.budget
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)

"""Per-agent tokens and cost on the panes, and a live TUI session against the loopback OpenAI server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from textual.widgets import Label

from moot.core.config import Overrides, load_config
from moot.core.session import SessionOptions, new_session
from moot.tui.app import create_app
from moot.tui.runtime import LiveRuntime
from moot.tui.screens.debate import DebateScreen, agent_usage
from moot.tui.widgets.command_input import CommandInput
from tests.conftest import make_server
from tests.tui.scripted import ScriptedRuntime

from .conftest import fixed_clock, settle, wait_for

NOTE = "Keep it simple"


async def test_panes_show_each_agents_tokens_and_cost(recorded) -> None:  # type: ignore[no-untyped-def]
    events = [e.model_copy(deep=True) for e in recorded]
    for e in events:
        if e.type == "contribution_added" and e.contribution.agent_id == "architect":
            e.contribution.metadata.cost_usd = 0.0021
        elif e.type == "synthesis_completed":
            e.solution.metadata.cost_usd = 0.5
    runtime = ScriptedRuntime(events=events, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot, runtime)
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        usage = agent_usage(screen.state)
        n = sum(1 for r in screen.state.rounds for c in r.contributions if c.agent_id == "architect")
        tokens, cost = usage["architect"]
        assert tokens > 0 and abs(cost - 0.0021 * n) < 1e-9
        architect = str(screen.panes["architect"].border_subtitle)
        assert f"✓ done[/$success] [$text-muted]· {_k(tokens)} tok · ${cost:.4f}[" in architect, architect
        assert "tok · $0.50" in str(screen.panes["judge"].border_subtitle)
        # no cost and the demo provider: nothing added (the demo snapshots stay as they were)
        assert "tok" not in str(screen.panes["kiss"].border_subtitle)


def _k(n: int) -> str:
    from moot.tui.format import k

    return k(n)


def test_agent_usage_is_the_states_totals(recorded) -> None:  # type: ignore[no-untyped-def]
    """One source: what a pane shows is the state's per-agent totals, summaries and the judge included."""
    from moot.core.storage.state import apply, new_state

    state = new_state("recorded")
    for e in recorded:
        apply(state, e)
    usage = agent_usage(state)
    assert usage == {a: (u.total_tokens, u.cost_usd) for a, u in state.agent_totals.items()}
    assert usage["architect"][0] > 0 and usage["judge"][0] > 0
    assert sum(t for t, _ in usage.values()) == state.totals.total_tokens


async def test_live_openai_session_injected_note_and_cost(tmp_path: Path) -> None:
    """/inject at a call boundary of a live TUI session against an OpenAI-compatible
    server: the note is verbatim in every later request, and gpt-4o's cost shows."""
    srv = make_server()
    try:
        config = load_config(None, Overrides(rounds=1, provider="openai", base_url=srv.base_url, model="gpt-4o"))
        session = new_session("Design a URL shortener", config,
                              SessionOptions(state_dir=tmp_path / "state", deterministic_ids=True, debate_id="live",
                                             clock=fixed_clock, backoff_base_s=0.01))
        orch = session.orchestrator
        armed: list[bool] = []

        def listen(event) -> None:  # type: ignore[no-untyped-def]
            if event.type == "contribution_added" and not armed:
                armed.append(True)
                asyncio.get_running_loop().call_soon(orch.pause)

        session.bus.listen(listen)
        app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
        async with app.run_test(size=(140, 45)) as pilot:
            screen = app.screen
            assert isinstance(screen, DebateScreen)

            def at_boundary() -> bool:  # paused, and no call in flight
                calls = [v for r in session.state.rounds for v in r.calls]
                done = sum(len(r.contributions) for r in session.state.rounds)
                return orch.paused and bool(calls) and len(calls) == done == srv.calls

            await wait_for(pilot, at_boundary, timeout=60)
            before = srv.calls
            command = screen.query_one(CommandInput)
            command.focus()
            command.value = f"/inject {NOTE}"
            await pilot.press("enter")
            await pilot.pause()
            command.focus()
            command.value = "/resume"
            await pilot.press("enter")
            await wait_for(pilot, lambda: screen.state.status == "completed", timeout=120)
            await settle(pilot)
            cost = screen.state.totals.cost_usd
            assert cost > 0
            shown = screen.query_one("#hdr-cost", Label)
            assert shown.display and str(shown.render()) == f"${cost:.4f}"
            assert "· $" in str(screen.panes["architect"].border_subtitle)
            await pilot.press("q")
        bodies = srv.requests
    finally:
        srv.stop()
    assert session.state.notes[0].text == NOTE
    earlier, later = bodies[:before], bodies[before:]
    assert earlier and later
    assert not any(NOTE in json.dumps(b) for b in earlier)
    assert all(NOTE in b["messages"][-1]["content"] for b in later), [
        b["messages"][-1]["content"][:200] for b in later if NOTE not in b["messages"][-1]["content"]]

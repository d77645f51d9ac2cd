"""Fixtures for the TUI tests: sessions in tmp_path, a recorded debate, settling helpers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from moot.core.clock import frozen_clock
from moot.core.config import Overrides, load_config
from moot.core.events import Event
from moot.core.session import DebateSession, SessionOptions, new_session
from moot.core.storage.log import read_events

FIXED_TS = 1_700_000_000.0
fixed_clock = frozen_clock(FIXED_TS)
"""Every event at FIXED_TS and every latency 0 ms: nothing a snapshot draws depends on real time."""


@pytest.fixture(autouse=True)
def _config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never touch the user's ~/.config/moot."""
    path = tmp_path / "config"
    monkeypatch.setenv("MOOT_CONFIG_DIR", str(path))
    return path


def make_session(state_dir: Path, *, rounds: int = 2, delay: float = 0.0, roles: list[str] | None = None,
                 debate_id: str = "snap", debate: dict | None = None) -> DebateSession:
    config = load_config(None, Overrides(rounds=rounds, provider="demo", roles=roles, debate=debate))
    opts = SessionOptions(state_dir=state_dir, demo_delay=delay, deterministic_ids=True, debate_id=debate_id,
                          clock=fixed_clock)
    return new_session("Design a URL shortener", config, opts)


@pytest.fixture
def session(tmp_path: Path) -> DebateSession:
    return make_session(tmp_path / "state")


FOUR = ["architect", "performance", "kiss", "security"]
FOCUS = "keep the numbers and the cost trade-offs"


async def _record(state_dir: Path, roles: list[str] | None = None, debate: dict | None = None,
                  focus: str | None = None, debate_id: str = "recorded") -> list[Event]:
    """A whole demo debate (2 rounds by default), with a manual summary of the architect asked
    for after the round-2 proposals (made at its first critique call); in a conversation, asked
    for at turn 6."""
    s = make_session(state_dir, debate_id=debate_id, roles=roles, debate=debate)
    orch = s.orchestrator
    loop = asyncio.get_running_loop()

    def listen(event: Event) -> None:
        if event.type == "phase_completed" and event.round == 2 and event.phase == "proposal":
            loop.call_soon(orch.request_summary, "architect", focus)
        if event.type == "contribution_added" and event.contribution.round == 6 and event.contribution.type == "turn":
            loop.call_soon(orch.request_summary, "architect", focus)

    s.bus.listen(listen)
    s.start_writer()
    await s.run()
    return list(read_events(s.folder.events_path))


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> list[Event]:
    """Events of a finished demo debate (deterministic ids, fixed clock)."""
    return asyncio.run(_record(tmp_path_factory.mktemp("recorded")))


@pytest.fixture(scope="session")
def recorded4(tmp_path_factory: pytest.TempPathFactory) -> list[Event]:
    """A finished 4-agent demo debate (the one a new user watches at 80×24), whose manual
    summary of the architect carries a focus."""
    return asyncio.run(_record(tmp_path_factory.mktemp("recorded4"), roles=FOUR, focus=FOCUS))


@pytest.fixture(scope="session")
def recorded_conversation(tmp_path_factory: pytest.TempPathFactory) -> list[Event]:
    """A finished 16-turn conversation of 4 agents whose shared summary rolls (every 4 messages
    beyond the latest 6)."""
    debate = {"protocol": "conversation", "turns": 16,
              "conversation": {"recent_messages": 6, "summary_every": 4}}
    return asyncio.run(_record(tmp_path_factory.mktemp("conversation"), roles=FOUR, debate=debate,
                               debate_id="conversation"))


@pytest.fixture(scope="session")
def recorded_folder(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("recorded-folder")
    asyncio.run(_record(root))
    from moot.core.storage.state_dir import StateDir

    return StateDir(root).open("recorded")


def upto(events: list[Event], pred, *, inclusive: bool = True) -> list[Event]:  # type: ignore[no-untyped-def]
    """The events before (and with) the first one matching `pred`."""
    for i, e in enumerate(events):
        if pred(e):
            return events[: i + 1] if inclusive else events[:i]
    raise AssertionError("no event matched")


async def settle(pilot, runtime=None, rounds: int = 3) -> None:  # type: ignore[no-untyped-def]
    """Wait until pushed events are consumed, token batches flushed and every widget idle."""
    for _ in range(400):
        bridge = getattr(pilot.app.screen, "bridge", None)  # events read, not yet handed to the screen
        if (runtime is None or not getattr(runtime, "backlog", 0)) and not getattr(bridge, "pending", 0):
            break
        await pilot.pause(0.02)
    for _ in range(rounds):
        await pilot.pause(0.12)  # past the bridge's flush interval
        await pilot.pause()


async def wait_for(pilot, predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    """Poll until `predicate()` holds; `timeout` only guards against a hang (a loaded machine is slow)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise AssertionError("timed out waiting for the condition")
        await pilot.pause(0.05)


def feedback(app) -> str:  # type: ignore[no-untyped-def]
    """The inline message under the command line."""
    from textual.widgets import Label

    return str(app.screen.query_one("#command-feedback", Label).render())


async def command(pilot, line: str) -> None:  # type: ignore[no-untyped-def]
    """Type a whole command line and press Enter."""
    from moot.tui.widgets.command_input import CommandInput

    app = pilot.app
    app.screen.query_one(CommandInput).focus()
    app.screen.query_one(CommandInput).value = line
    await pilot.press("enter")
    await pilot.pause()


def events_of(session) -> list[dict]:  # type: ignore[no-untyped-def]
    """The session's event log as parsed JSON lines."""
    import json

    return [json.loads(line) for line in session.folder.events_path.read_text().splitlines() if line.strip()]

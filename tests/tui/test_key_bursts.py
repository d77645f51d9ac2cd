"""Keys that arrive in one burst (tmux send-keys, a paste typed as keys, a fast typist) reach the
command line as typed: a `/` inside a command's arguments is text, and a command runs on exactly
the line that was typed.

Pilot's `press` waits for the app to go idle after every key, which hides the bug; `burst` posts
every key before the app has handled the first, as a terminal delivers them."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events
from textual.app import App

from moot.core.events import Event
from moot.tui.app import create_app
from moot.tui.screens.debate import DebateScreen
from moot.tui.widgets.command_input import CommandInput
from tests.tui.scripted import ScriptedRuntime

from .conftest import feedback, fixed_clock, settle, upto, wait_for

KEY_NAMES = {"/": "slash", " ": "space", ".": "full_stop", "-": "minus", "\r": "enter"}


def burst(app: App[object], text: str) -> None:
    """Queue every key of `text` on the app at once (`\\r` is Enter)."""
    for ch in text:
        app.post_message(events.Key(KEY_NAMES.get(ch, ch), ch))


async def test_a_burst_keeps_the_slashes_of_a_save_path(recorded: list[Event], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out" / "share").mkdir(parents=True)
    runtime = ScriptedRuntime(events=recorded, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, runtime)
        burst(app, "/save out/share/sol3.md\r")
        saved = tmp_path / "out" / "share" / "sol3.md"
        await wait_for(pilot, saved.exists, timeout=10)
        assert f"saved to {saved.resolve()}" in feedback(app)
        assert [p.name for p in tmp_path.iterdir() if p.is_file()] == []  # no outsharesol3.md
        assert saved.read_text().startswith("# ")
        screen = app.screen
        assert isinstance(screen, DebateScreen) and screen.focused is None  # bindings work again
        assert screen.query_one(CommandInput).history[-1] == "/save out/share/sol3.md"


async def test_a_burst_of_commands_runs_each_on_what_was_typed(recorded: list[Event]) -> None:
    running = upto(recorded, lambda e: e.type == "phase_started" and e.round == 2)
    runtime = ScriptedRuntime(events=running, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, runtime)
        burst(app, "/inject a/b\r")
        await wait_for(pilot, lambda: bool(runtime.commands), timeout=10)
        assert runtime.commands == [("inject", "a/b")]
        # two commands in one burst: each runs on its own line, none on a mix of both
        burst(app, "/inject c/d e\r/inject /f/\r")
        await wait_for(pilot, lambda: len(runtime.commands) == 3, timeout=10)
        await settle(pilot, rounds=1)
        assert runtime.commands == [("inject", "a/b"), ("inject", "c/d e"), ("inject", "/f/")]
        assert app.screen.query_one(CommandInput).value == ""

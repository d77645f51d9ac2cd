"""A hostile server in the live TUI: no escape sequence or control character from it reaches
what the app draws, and markup in its text is shown literally, never interpreted.

The debate runs for real (LiveRuntime, the openai provider, the loopback server) with
escape sequences in every reply, in the clarifying questions, the judge's solution, the
reported model name and an error body; an agent's configured name carries some too. At
each stage the whole screen is rendered the way the app writes it to a terminal.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from textual.app import App

from moot.core.config import Overrides, load_config
from moot.core.safety.sanitize import UNSAFE
from moot.core.session import SessionOptions, new_session
from moot.tui.app import create_app
from moot.tui.runtime import LiveRuntime
from moot.tui.screens.clarify import ClarifyScreen
from moot.tui.screens.context import ContextScreen
from moot.tui.screens.debate import DebateScreen
from tests.conftest import Faults, LoopbackServer
from tests.test_hostile import HOSTILE, hostile_reply

from .conftest import command, fixed_clock, settle, wait_for

INJECTED = re.compile(r"\x1b\]|\x1bP|\x1b\[2J|\x1b\[H|[\x07\x7f\x80-\x9f]")
"""What only the hostile text could have put in the app's output: OSC (titles, links,
clipboard), DCS, clear/home, BEL, DEL, C1. (Textual's own output is SGR and cursor moves.)"""


def screen_output(app: App[Any]) -> tuple[str, str]:
    """(the text of every cell on screen, the terminal sequence the app writes for it)."""
    compositor = app.screen._compositor
    text = "".join(seg.text for strip in compositor.render_strips() for seg in strip if not seg.control)
    written = compositor.render_update(full=True).render_segments(app.console)
    return text, written


def assert_clean(app: App[Any]) -> str:
    text, written = screen_output(app)
    assert UNSAFE.findall(text) == [], UNSAFE.findall(text)[:5]
    assert INJECTED.findall(written) == [], INJECTED.findall(written)[:5]
    return text


async def test_hostile_text_is_drawn_clean_and_literal(tmp_path: Path) -> None:
    with LoopbackServer(reply=hostile_reply("Hi\x1b]0;pwned\x07\x1b[2J [bold red]markup[/] \x9b31m end"),
                        faults=Faults(model_name=HOSTILE, status_script=[500], error_message=HOSTILE)) as srv:
        cfg = tmp_path / "moot.json"
        cfg.write_text(json.dumps({
            "debate": {"max_retries": 1, "clarify": True},
            "agents": [{"id": "architect", "role": "architect", "name": "Arch\x1b]0;x\x07 [b]itect"},
                       {"id": "kiss", "role": "kiss"}],
        }))
        config = load_config(cfg, Overrides(rounds=1, provider="openai", base_url=srv.base_url))
        session = new_session("Design a URL shortener \x1b]0;title\x07", config,
                              SessionOptions(state_dir=tmp_path / "state", deterministic_ids=True,
                                             debate_id="hostile", clock=fixed_clock, backoff_base_s=0.01))
        app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, ClarifyScreen))
            await pilot.pause()
            text = assert_clean(app)
            assert "[bold red]markup[/]" in text  # a question, as written
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: isinstance(app.screen, DebateScreen))
            screen = app.screen
            assert isinstance(screen, DebateScreen)
            await wait_for(pilot, lambda: screen.state.status == "completed", timeout=60)
            await settle(pilot)
            screen.zoom(None)  # every pane, not only the judge's solution
            await settle(pilot, rounds=1)
            text = assert_clean(app)
            assert "[bold red]markup[/]" in text and "Arch [b]itect" in text
            for pane in screen.panes.values():  # every transcript entry, shown or scrolled away
                for entry in pane.transcript.entries:
                    strips = pane.transcript._entry_strips(entry, 80)
                    assert not UNSAFE.findall("".join(seg.text for s in strips for seg in s))
            screen.zoom(screen.judge_pane)
            await settle(pilot, rounds=1)
            assert "[bold red]markup[/]" in assert_clean(app)  # the solution
            await command(pilot, "/context architect 1")
            await wait_for(pilot, lambda: isinstance(app.screen, ContextScreen))
            await settle(pilot, rounds=1)
            assert "Design a URL shortener" in assert_clean(app)  # the problem, in the messages sent
            await pilot.press("escape")
            await pilot.press("q")
    # The event log on disk keeps what the server sent (the audit trail).
    raw = (session.folder.events_path).read_text()
    assert "\\u001b]0;pwned\\u0007" in raw


async def test_saved_debates_list_shows_problems_literally(tmp_path: Path) -> None:
    from moot.core.storage.state_dir import StateDir

    config = load_config(None, Overrides(rounds=1, provider="demo", roles=["kiss"]))
    session = new_session("Design [bold]this[/bold] \x1b]0;title\x07 now", config,
                          SessionOptions(state_dir=tmp_path / "state", demo_delay=0, debate_id="listed"))
    await session.run()
    app = create_app(state_dir=StateDir(tmp_path / "state"), cursor_blink=False)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot, rounds=1)
        assert "Design [bold]this[/bold] now" in assert_clean(app)
        await pilot.press("q")

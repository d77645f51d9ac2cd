"""A person's seat in the TUI (`--human`): their pane becomes an editor on their turn; typing, sending
with ctrl+s, a refusal shown inline, quitting while the debate waits and resuming with the draft, a
conversation's docked editor, an attached `moot watch` answering a debate run elsewhere, and
snapshots of the editor at 80×24 and 160×48."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from textual import events
from textual.geometry import Offset
from textual.widgets import Label, TextArea

from moot.core.config import Overrides, load_config
from moot.core.events import CallStarted, Event
from moot.core.human.desk import Turn
from moot.core.safety.sanitize import UNSAFE
from moot.core.session import DebateSession, SessionOptions, new_session, resume_session
from moot.core.storage.folder import writer_alive
from moot.core.storage.log import read_events
from moot.core.storage.state_dir import StateDir
from moot.tui.app import create_app
from moot.tui.runtime import LiveRuntime, WatchRuntime
from moot.tui.widgets.command_input import CommandInput
from tests.tui.scripted import ScriptedRuntime

from .conftest import fixed_clock, settle, upto, wait_for

PROPOSAL = "Start with one Postgres table / a base62 counter; q p x are letters here."
MORE = "Measure the p99 before adding a cache."


def keys(text: str) -> list[str]:
    special = {" ": "space", "/": "slash", ";": "semicolon", ".": "full_stop", ",": "comma", "?": "question_mark",
               "-": "minus"}
    return [special.get(ch, ch) for ch in text]


def seat_session(state_dir: Path, debate_id: str = "seat", debate: dict | None = None) -> DebateSession:
    config = load_config(None, Overrides(rounds=1, provider="demo", roles=["architect", "kiss"], humans=["Ada"],
                                         debate=debate))
    opts = SessionOptions(state_dir=state_dir, demo_delay=0.0, deterministic_ids=True, debate_id=debate_id,
                          clock=fixed_clock)
    return new_session("Design a URL shortener", config, opts)


def ada_said(session: DebateSession, kind: str) -> list[str]:
    return [c.content for c in session.state.all_contributions() if c.agent_id == "ada" and c.type == kind]


def hint(editor) -> str:  # type: ignore[no-untyped-def]
    return str(editor.query_one(".seat-hint", Label).render())


async def test_typing_a_turn_and_sending_it(tmp_path: Path) -> None:
    session = seat_session(tmp_path / "state")
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: "ada" in screen.editors)
        editor = screen.editors["ada"]
        await settle(pilot)
        assert editor.text_area.has_focus and screen.zoomed is screen.panes["ada"]
        assert str(screen.query_one("#hdr-status", Label).render()) == "✎ WAITING FOR YOU"
        assert "✎ waiting for you" in screen.panes["ada"].border_subtitle
        assert "Write your proposal for the debate topic" in editor.task_text  # the topic: in the header
        await pilot.press(*keys(PROPOSAL), "enter", *keys(MORE))
        await settle(pilot)
        # Every key was text: no command line, no pause, no stop.
        assert editor.text == f"{PROPOSAL}\n{MORE}"
        assert not isinstance(app.focused, CommandInput) and not session.orchestrator.paused
        assert "draft saved" in hint(editor)
        drafts = session.orchestrator.desk.drafts
        assert drafts is not None and drafts.load("ada", "r1-proposal") == f"{PROPOSAL}\n{MORE}"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: ada_said(session, "proposal"))
        assert ada_said(session, "proposal") == [f"{PROPOSAL}\n{MORE}"]
        # The next turn opens: her critique of the architect's proposal, which it quotes.
        await wait_for(pilot, lambda: "ada" in screen.editors and screen.editors["ada"].slot == "r1-critique-architect")
        editor = screen.editors["ada"]
        await settle(pilot)
        assert "The proposal, by **Architect**" in editor.task_text
        await pilot.press("ctrl+s")  # nothing typed: refused inline, the turn stays open
        await settle(pilot)
        assert "not sent: the answer is empty" in hint(editor) and not editor.sending
        await pilot.press("f2")  # everything she is shown: the inspector on her latest call
        await settle(pilot)
        assert type(app.screen).__name__ == "ContextScreen"
        # opened at what she is asked now, not at the top of the system prompt
        area = app.screen.query_one(TextArea)
        top = area.scroll_offset.y
        first_shown = area.wrapped_document.offset_to_location(Offset(0, top))[0]
        assert area.document.get_line(first_shown).startswith("━━ [user] task · "), area.document.get_line(first_shown)
        assert top > 0 and "The proposal, by **Architect**" in area.text
        await pilot.press("escape")
        await settle(pilot)
        assert editor.text_area.has_focus


async def test_a_key_typed_into_the_editor_is_masked_in_the_draft_on_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "lb-7Hq2Wm9xPz4Rk8VtC3nJ"  # configured, not shaped like `sk-…`
    monkeypatch.setenv("OPENAI_API_KEY", key)
    session = seat_session(tmp_path / "state")
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: "ada" in screen.editors)
        await settle(pilot)
        await pilot.press(*keys(f"Staging logs in with {key} today"))
        draft = session.folder.path / "drafts" / "ada@r1-proposal.md"
        await wait_for(pilot, lambda: draft.is_file() and "today" in draft.read_text())
        assert draft.read_text() == "Staging logs in with sk-*** today"
        assert screen.editors["ada"].text == f"Staging logs in with {key} today"  # the editor keeps what was typed
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: session.state.status != "running")


async def test_quit_while_waiting_then_resume_with_the_draft_and_send(tmp_path: Path) -> None:
    """Kill the debate while it waits for the person (ctrl+c: at once, no grace), resume, send."""
    root = tmp_path / "state"
    session = seat_session(root, debate_id="waiting")
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: "ada" in screen.editors)
        await settle(pilot)
        await pilot.press(*keys("Start with one table"))
        drafts = session.orchestrator.desk.drafts
        assert drafts is not None
        await wait_for(pilot, lambda: drafts.load("ada", "r1-proposal") == "Start with one table")
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: session.state.status != "running")
    assert session.state.status == "interrupted"

    resumed = resume_session("waiting", SessionOptions(state_dir=root, demo_delay=0.0, clock=fixed_clock))
    app = create_app(LiveRuntime(resumed, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: "ada" in screen.editors)
        editor = screen.editors["ada"]
        await settle(pilot)
        assert editor.text == "Start with one table"
        await pilot.press(*keys(" and measure first."))
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: ada_said(resumed, "proposal"))
    assert ada_said(resumed, "proposal") == ["Start with one table and measure first."]


async def test_a_conversation_docks_the_editor_under_the_transcript(tmp_path: Path) -> None:
    session = seat_session(tmp_path / "state", debate={"protocol": "conversation", "turns": 4})
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: "ada" in screen.editors)
        editor = screen.editors["ada"]
        await settle(pilot)
        assert editor.has_class("-docked") and editor.parent is screen
        row = screen.query_one("#row-ada")
        assert "✎ your turn" in str(row.query_one(".row-status", Label).render())
        await pilot.press(*keys(MORE), "ctrl+enter")  # where the terminal reports it (ctrl+s everywhere)
        await wait_for(pilot, lambda: session.state.status == "completed", timeout=60)
        await settle(pilot)
        assert not screen.editors
    assert ada_said(session, "message") == [MORE]
    after = next(c for c in session.state.all_contributions() if c.round == 4)
    assert "Ada" in after.content.split("\n")[0]  # the architect answers her by name


@pytest.mark.slow
async def test_an_attached_watch_answers_a_debate_run_elsewhere(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    env = {**os.environ, "MOOT_CONFIG_DIR": str(tmp_path / "config")}
    env.pop("OPENAI_API_KEY", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "moot", "run", "Design a rate limiter", "--headless", "--provider", "demo",
         "--human", "Ada", "-a", "architect,kiss", "--protocol", "conversation", "--turns", "3",
         "--state-dir", str(state_dir)], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)
    try:
        for _ in range(600):
            folders = StateDir(state_dir).debates() if state_dir.exists() else []
            if folders and writer_alive(folders[0]) and folders[0].events_path.exists():
                break
            await asyncio.sleep(0.05)
        [folder] = StateDir(state_dir).debates()
        app = create_app(WatchRuntime(folder, poll_s=0.05), cursor_blink=False)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            await wait_for(pilot, lambda: "ada" in screen.editors, timeout=60)
            await settle(pilot)
            await pilot.press(*keys(MORE), "ctrl+s")
            await wait_for(pilot, lambda: screen.state.status == "completed", timeout=60)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    said = [e for e in read_events(folder.events_path) if e.type == "seat_answered"]
    assert [(e.agent_id, e.via, e.command_id is not None) for e in said] == [("ada", "ctl", True)]
    assert [c.content for c in folder.load().all_contributions() if c.agent_id == "ada"] == [MORE]


# ---------------------------------------------------------------------------------------------- snapshots


def _record_with_ada(root: Path, debate: dict | None = None) -> list[Event]:
    async def run() -> list[Event]:
        session = seat_session(root, debate_id="recorded-seat", debate=debate)

        def opened(turn: Turn, is_open: bool) -> None:
            if is_open:
                text = {"proposal": PROPOSAL, "critique": "Too many moving parts for a first release.",
                        "refinement": "I keep the single table and add a tested restore."}.get(turn.phase, MORE)
                asyncio.get_running_loop().call_soon(session.orchestrator.say, "ada", text)

        session.orchestrator.desk.watch(opened)
        session.start_writer()
        await session.run()
        return list(read_events(session.folder.events_path))

    return asyncio.run(run())


@pytest.fixture(scope="module")
def recorded_seat(tmp_path_factory: pytest.TempPathFactory) -> list[Event]:
    return _record_with_ada(tmp_path_factory.mktemp("seat"))


@pytest.fixture(scope="module")
def recorded_seat_conversation(tmp_path_factory: pytest.TempPathFactory) -> list[Event]:
    return _record_with_ada(tmp_path_factory.mktemp("seat-conv"), {"protocol": "conversation", "turns": 4})


def _waiting(events: list[Event], phase: str, draft: str) -> ScriptedRuntime:
    upto_turn = upto(events, lambda e: isinstance(e, CallStarted) and e.view.agent_id == "ada"
                     and e.view.phase == phase)
    runtime = ScriptedRuntime(events=upto_turn, clock=fixed_clock)
    last = upto_turn[-1]
    assert isinstance(last, CallStarted)
    slot = f"r{last.view.round}-{phase}" + (f"-{last.view.target_agent_id}" if last.view.target_agent_id else "")
    runtime.drafts[("ada", slot)] = draft
    return runtime


async def test_a_draft_read_from_disk_is_made_terminal_safe_in_the_editor(recorded_seat) -> None:  # type: ignore[no-untyped-def]
    """The drafts folder is a file others may write: its text reaches the editor without escape
    sequences, control or reordering characters (the words stay, and become the answer)."""
    hostile = "Keep one table\x1b]0;pwned\x07 and\x1b[2J measure\u202e first\r\n- an outbox\x07\x9b31m"
    runtime = _waiting(recorded_seat, "critique", hostile)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: "ada" in screen.editors)
        await settle(pilot, runtime)
        editor = screen.editors["ada"]
        assert editor.text == "Keep one table and measure first\n- an outbox"
        assert UNSAFE.search(editor.text) is None


async def test_text_pasted_into_the_editor_is_made_terminal_safe(recorded_seat) -> None:  # type: ignore[no-untyped-def]
    """A paste is text from anywhere (a web page, a log): its escape sequences and control
    characters never reach the editor, so never the screen or the draft; the words stay."""
    runtime = _waiting(recorded_seat, "critique", "Agreed:")
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: "ada" in screen.editors)
        await settle(pilot, runtime)
        editor = screen.editors["ada"]
        editor.focus_text()
        app.post_message(events.Paste(" keep\x1b]52;c;aGk=\x07 the table\x1b[1A\r\n- measure\u202e first\x9b2J"))
        await wait_for(pilot, lambda: "measure" in editor.text)
        assert editor.text == "Agreed: keep the table\n- measure first"
        assert UNSAFE.search(editor.text) is None


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_snapshot_the_editor_pane(snap_compare, recorded_seat, size) -> None:  # type: ignore[no-untyped-def]
    runtime = _waiting(recorded_seat, "critique", "Too many moving parts for a first release:\n- an outbox")
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_snapshot_the_docked_editor_of_a_conversation(snap_compare, recorded_seat_conversation) -> None:  # type: ignore[no-untyped-def]
    runtime = _waiting(recorded_seat_conversation, "turn", "What traffic do we expect")
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot, runtime)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)

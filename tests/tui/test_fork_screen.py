"""`/fork`: the running debate forked at a round, the fork run in its own screen, the debate going on."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.widgets import Label

from moot.core.storage.folder import DebateFolder
from moot.core.storage.state_dir import StateDir
from moot.tui.app import create_app
from moot.tui.runtime import LiveRuntime
from moot.tui.screens.debate import DebateScreen

from .conftest import command, feedback, fixed_clock, make_session, wait_for

NOTE = "Assume one region and a team of two engineers."


async def test_fork_opens_the_fork_beside_the_running_debate(tmp_path: Path) -> None:
    session = make_session(tmp_path / "state", rounds=2, delay=0.005)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        first = app.screen
        assert isinstance(first, DebateScreen)
        await wait_for(pilot, lambda: first.state.current_round >= 2)
        assert session.state.status == "running"
        await command(pilot, f"/fork round 2 {NOTE}")
        await wait_for(pilot, lambda: app.screen is not first)
        forked = app.screen
        assert isinstance(forked, DebateScreen) and forked.runtime is not first.runtime
        assert first in app.screen_stack  # the debate it was forked from is still there, still running
        title = forked.query_one("#hdr-title", Label)
        await wait_for(pilot, lambda: str(title.render()).startswith("⑂ round:2 · "))
        assert str(title.tooltip) == f"a fork of {session.folder.id} at round:2"
        assert not str(first.query_one("#hdr-title", Label).render()).startswith("⑂")
        await wait_for(pilot, lambda: forked.state.status == "completed", timeout=120)
        await wait_for(pilot, lambda: session.state.status == "completed", timeout=120)
        await command(pilot, "/fork turn 1")
        assert "forks at a round" in feedback(app)
    (fork,) = [f for f in StateDir(tmp_path / "state").debates() if f.id != session.folder.id]
    state = DebateFolder(fork.path).load()
    assert state.forked_from is not None and state.forked_from.debate == session.folder.id
    assert state.forked_from.at == "round:2" and state.status == "completed"
    assert [n.text for n in state.notes] == [NOTE]
    assert session.state.status == "completed" and not session.state.notes


async def test_inspector_reruns_the_call_shown_and_forks_at_it(tmp_path: Path) -> None:
    from textual.widgets import TextArea

    from moot.tui.screens.context import ContextScreen

    session = make_session(tmp_path / "state", rounds=2)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        first = app.screen
        assert isinstance(first, DebateScreen)
        await wait_for(pilot, lambda: b'"debate_completed"' in session.folder.events_path.read_bytes())
        log = session.folder.events_path.read_bytes()
        await command(pilot, "/context architect 2")
        inspector = app.screen
        assert isinstance(inspector, ContextScreen) and inspector.record is not None
        while inspector.record.phase == "summarize":  # a call whose reply is a contribution, to diff against
            await pilot.press("right")
        record = inspector.record
        await pilot.press("r")
        panel = inspector.query_one("#ctx-rerun", TextArea)
        await wait_for(pilot, lambda: "experiment exp-" in panel.text)
        assert "DEMO" in panel.text and "word diff" in panel.text
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, DebateScreen) and app.screen is not first)
        forked = app.screen
        assert isinstance(forked, DebateScreen)
        await wait_for(pilot, lambda: forked.state.status == "completed", timeout=120)
    assert session.folder.events_path.read_bytes() == log  # neither the re-run nor the fork wrote to it
    (exp,) = (session.folder.path / "experiments").glob("exp-*.json")
    assert record.call_id in exp.read_text()
    (fork,) = [f for f in StateDir(tmp_path / "state").debates() if f.id != session.folder.id]
    origin = DebateFolder(fork.path).load().forked_from
    assert origin is not None and origin.at == f"round:2:{record.phase}"


async def test_the_saved_debates_show_each_fork_under_its_parent(tmp_path: Path) -> None:
    from textual.widgets import DataTable

    from moot.tui.screens.debates import DebatesScreen
    from tests.conftest import cli

    root = tmp_path / "state"
    for debate_id in ("older", "newer"):
        await make_session(root, rounds=2, debate_id=debate_id).run()
    for at in ("round:2", "round:1"):
        out = cli("fork", "older", "--at", at, "--no-run", "--state-dir", str(root))
        assert out.returncode == 0, out.stderr
    app = create_app(None, state_dir=StateDir(root), cursor_blink=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, DebatesScreen) and app.screen.loaded)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DebatesScreen)
        shown = [r.id for r in screen.shown]
        forks = [r for r in screen.shown if r.forked_from == "older"]
        at = shown.index("older")
        assert len(forks) == 2 and set(shown[at + 1:at + 3]) == {f.id for f in forks} and "newer" in shown
        table = screen.query_one(DataTable)
        cells = {f.fork_at: str(table.get_row(f.id)[-1]) for f in forks}
        assert cells["round 2"].startswith("⑂ round 2 · Design a URL shortener")
        assert cells["round 1"].startswith("⑂ round 1 · ")


async def test_rewind_stops_the_debate_and_goes_on_in_the_fork(tmp_path: Path) -> None:
    session = make_session(tmp_path / "state", rounds=2, delay=0.005)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        first = app.screen
        assert isinstance(first, DebateScreen)
        await wait_for(pilot, lambda: first.state.current_round >= 2)
        assert session.state.status == "running"
        await command(pilot, f"/rewind round 2 {NOTE}")
        await wait_for(pilot, lambda: app.screen is not first)
        forked = app.screen
        assert isinstance(forked, DebateScreen) and forked.runtime is not first.runtime
        await wait_for(pilot, lambda: session.state.status == "stopped", timeout=120)
        await wait_for(pilot, lambda: forked.state.status == "completed", timeout=120)
    (fork,) = [f for f in StateDir(tmp_path / "state").debates() if f.id != session.folder.id]
    state = DebateFolder(fork.path).load()
    assert state.forked_from is not None and state.forked_from.at == "round:2"
    assert [n.text for n in state.notes] == [NOTE] and state.current_round == 2
    assert DebateFolder(session.folder.path).load().status == "stopped"


async def test_compare_fork_sets_the_fork_beside_its_parent_from_the_fork_point(tmp_path: Path) -> None:
    from textual.widgets import Label, Static

    from moot.tui.screens.fork_compare import ForkCompareScreen

    session = make_session(tmp_path / "state", rounds=2)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        first = app.screen
        assert isinstance(first, DebateScreen)
        await wait_for(pilot, lambda: session.state.status == "completed", timeout=120)
        await command(pilot, "/compare fork")
        assert "no fork yet" in feedback(app)
        await command(pilot, f"/fork round 2 {NOTE}")
        await wait_for(pilot, lambda: app.screen is not first)
        forked = app.screen
        assert isinstance(forked, DebateScreen)
        await wait_for(pilot, lambda: forked.state.status == "completed", timeout=120)
        await command(pilot, "/compare fork")
        await wait_for(pilot, lambda: isinstance(app.screen, ForkCompareScreen))
        shown = app.screen
        assert isinstance(shown, ForkCompareScreen)
        c = shown.comparison
        assert (c.parent_id, c.fork_id, c.at, c.from_step) == (session.folder.id, forked.state.id, "round:2", 2)
        assert c.pairs and all(p.step == 2 for p in c.pairs) and c.answer is not None
        assert f"⑂ {forked.state.id}" in str(shown.query_one("#fcmp-title", Label).render())
        spend = str(shown.query_one("#fcmp-spend", Static).render())
        assert f"= {c.fork_spend.tokens:,} tokens" in spend and c.fork_spend.tokens > 0
        await pilot.press("escape")
        assert app.screen is forked
        app.pop_screen()
        await pilot.pause()
        assert app.screen is first
        await command(pilot, "/compare fork")  # from the parent: its newest fork
        await wait_for(pilot, lambda: isinstance(app.screen, ForkCompareScreen))
        again = app.screen
        assert isinstance(again, ForkCompareScreen) and again.comparison.fork_id == forked.state.id


async def test_inspector_shows_the_experiments_saved_on_the_call(tmp_path: Path) -> None:
    from textual.widgets import TextArea

    from moot.tui.screens.context import ContextScreen
    from tests.conftest import cli

    session = make_session(tmp_path / "state", rounds=2)
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: session.state.status == "completed", timeout=120)
        await command(pilot, "/context kiss 1")
        inspector = app.screen
        assert isinstance(inspector, ContextScreen) and inspector.record is not None
        while inspector.record.phase != "proposal":
            await pilot.press("right")
        record = inspector.record
        panel = inspector.query_one("#ctx-rerun", TextArea)
        await pilot.press("x")
        assert not panel.display  # nothing saved on it yet
        out = await asyncio.to_thread(cli, "call", session.folder.id, "--round", str(record.round), "--agent", "kiss",
                                      "--phase", "proposal", "-n", "2",
                                      "--state-dir", str(session.folder.path.parent))  # from another shell, as it were
        assert out.returncode == 0, out.stderr
        await pilot.press("x")
        assert panel.display
        (exp,) = (session.folder.path / "experiments").glob("exp-*.json")
        assert "1 experiment saved on this call" in panel.text and exp.stem in panel.text
        assert "reply 1 (seed 1)" in panel.text and "reply 2 (seed 2)" in panel.text


async def test_edit_sends_the_edited_messages_and_swaps_the_summary(tmp_path: Path) -> None:
    import json

    from textual.widgets import TextArea

    from moot.tui.screens.context import ContextScreen
    from moot.tui.screens.context_edit import EditCallScreen

    added = "Keep the whole design inside one region and say what that gives up."
    session = make_session(tmp_path / "state", rounds=3,
                           debate={"summarization": {"method": "llm", "threshold": 1500}})
    app = create_app(LiveRuntime(session, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: session.state.status == "completed", timeout=120)
        target = next(c for r in session.state.rounds for c in r.calls
                      if c.summary_id and c.phase not in ("summarize", "synthesis") and c.agent_id != "judge")
        await command(pilot, f"/context {target.agent_id} {target.round}")
        inspector = app.screen
        assert isinstance(inspector, ContextScreen)
        while inspector.record is not None and inspector.record.call_id != target.call_id:
            await pilot.press("right")
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EditCallScreen))
        editor = app.screen
        assert isinstance(editor, EditCallScreen)
        areas = [editor.query_one(f"#edit-msg-{n}", TextArea) for n in range(len(editor.original))]
        recorded = [a.text for a in areas]
        await pilot.press("ctrl+o")  # the summary written rule-based now, from the same items
        await wait_for(pilot, lambda: editor.summary == "rule-based")
        last = areas[-1]
        last.load_text(last.text + "\n\n" + added)
        await pilot.press("ctrl+r")
        panel = editor.query_one("#edit-reply", TextArea)
        await wait_for(pilot, lambda: "experiment exp-" in panel.text)
        sent = [a.text for a in areas]
    assert sent[-1] == recorded[-1] + "\n\n" + added
    # The LLM summary the call saw is replaced by a rule-based one of the same items; the rest is as recorded.
    (swapped,) = [n for n in range(len(sent) - 1) if sent[n] != recorded[n]]
    assert recorded[swapped] and sent[swapped]
    (path,) = (session.folder.path / "experiments").glob("exp-*.json")
    exp = json.loads(path.read_text())
    assert exp["call_id"] == target.call_id and exp["edited"] is True and exp["summary"] == "rule-based"
    assert [m["content"] for m in exp["messages"]] == sent


async def test_a_forks_header_shows_its_origin_as_one_plain_line(tmp_path: Path) -> None:
    """The fork's point and parent come from its log: no control characters reach the screen, and
    a `[/]` in them is text, not markup (a string tooltip is read as markup when shown)."""
    from rich.text import Text
    from textual.app import App, ComposeResult
    from textual.visual import visualize

    from moot.core.models.state import DebateState, ForkOrigin
    from moot.tui.widgets.debate_header import DebateHeader

    class HeaderOnly(App[None]):
        def compose(self) -> ComposeResult:
            yield DebateHeader()

    app = HeaderOnly()
    async with app.run_test() as pilot:
        header = app.query_one(DebateHeader)
        origin = ForkOrigin(debate="parent[/]", at="turn:3\x1b]0;title\x07\nsecond line", seq=1)
        header.show_state(DebateState(id="f", problem="Pick a queue", forked_from=origin), "", "")
        await pilot.pause()
        label = header.query_one("#hdr-title", Label)
        title = str(label.render())
        assert title.startswith("⑂ turn:3") and title.endswith("· Pick a queue")
        assert not any(ord(ch) < 32 or ch == "\x7f" for ch in title)
        assert isinstance(label.tooltip, Text) and "parent[/]" in label.tooltip.plain
        assert "\x1b" not in label.tooltip.plain and "\n" not in label.tooltip.plain
        visualize(label, label.tooltip)  # shown as it would be on hover: no markup error

"""`/search TEXT` in the TUI, and the recall tier in the gauge, `/context` and the inspector."""

from __future__ import annotations

import asyncio

import pytest
from textual.widgets import Input, Label, ListView, TextArea

from moot.core.context.index import DebateIndex
from moot.core.search.debates import strip_marks
from moot.core.storage.folder import DebateFolder
from moot.tui.app import create_app
from moot.tui.runtime import WatchRuntime
from moot.tui.screens.context import ContextScreen
from moot.tui.screens.context_overview import ContextOverviewScreen
from moot.tui.screens.debate import DebateScreen
from moot.tui.screens.search_results import SearchResultsScreen
from moot.tui.widgets.token_gauge import TokenGauge

from .conftest import FOUR, command, feedback, fixed_clock, make_session, settle, wait_for


@pytest.fixture(scope="module")
def conversation_folder(tmp_path_factory: pytest.TempPathFactory) -> DebateFolder:
    """A finished 24-turn demo conversation whose summary rolls early, so later views recall."""
    root = tmp_path_factory.mktemp("search")
    debate = {"protocol": "conversation", "turns": 24, "conversation": {"recent_messages": 6, "summary_every": 4}}
    session = make_session(root, roles=FOUR, debate=debate, debate_id="searched")

    async def go() -> None:
        session.start_writer()
        await session.run()

    asyncio.run(go())
    return DebateFolder(root / "searched")


async def _opened(pilot, app) -> DebateScreen:  # type: ignore[no-untyped-def]
    screen = app.screen
    await wait_for(pilot, lambda: isinstance(screen, DebateScreen) and screen.loaded)
    await settle(pilot)
    return screen


async def test_search_opens_the_hits_and_enter_jumps_to_the_message(conversation_folder: DebateFolder) -> None:
    app = create_app(WatchRuntime(conversation_folder, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _opened(pilot, app)
        await command(pilot, "/search PostgreSQL job queue")
        await pilot.pause()
        results = app.screen
        assert isinstance(results, SearchResultsScreen), feedback(app)
        assert results.hits and "hits for 'PostgreSQL job queue'" in str(results.query_one("#ctx-title", Label).render())
        first = results.hits[0].hit
        item = str(results.query_one(ListView).children[0].query_one(Label).render())
        assert item.startswith(f"turn {first.step} · ") and "PostgreSQL" in item
        await pilot.press("enter")
        await pilot.pause()
        inspector = app.screen
        assert isinstance(inspector, ContextScreen)
        record = inspector.record
        assert record is not None and record.round >= first.step
        index = DebateIndex(conversation_folder.load())
        held = [*index.turn_ids(*record.history_turns)] if record.history_turns else record.contribution_ids
        recalled = [it.id for it in record.recall.items] if record.recall else []
        assert first.doc_id in held + recalled + record.task_contribution_ids  # the view holds the message
        area = inspector.query_one(TextArea)
        # find holds the query as typed; what it selects is one of the words the search matched
        assert inspector.query_one("#ctx-find-input", Input).value == "PostgreSQL job queue"
        assert inspector.matches and area.selected_text.lower() in ("postgresql", "job", "queue")
        await pilot.pause()
        line = area.wrapped_document.location_to_offset(area.selection.start).y
        top, height = area.scroll_offset.y, area.scrollable_content_region.height
        assert line >= height, "the match is below the first screen, so finding it must scroll"
        assert top <= line < top + height, (top, line, height)  # the view opens on the match
        assert "of" in str(inspector.query_one("#ctx-find-status", Label).render())
        await pilot.press("escape", "escape", "escape")
        assert isinstance(app.screen, DebateScreen)


async def test_search_refuses_nothing_to_find_in_one_line(conversation_folder: DebateFolder) -> None:
    app = create_app(WatchRuntime(conversation_folder, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await _opened(pilot, app)
        for line, said in (("/search", "usage: /search TEXT"), ('/search "*()', "usage: /search TEXT"),
                           ("/search zyzzyvaqx", "no match for 'zyzzyvaqx'")):
            await command(pilot, line)
            assert feedback(app).startswith(said), feedback(app)
            assert isinstance(app.screen, DebateScreen)


async def test_the_recall_tier_in_the_gauge_the_overview_and_the_inspector(conversation_folder: DebateFolder) -> None:
    state = conversation_folder.load()
    last = [c for r in state.rounds for c in r.calls if c.phase == "turn"][-1]
    assert last.recall is not None and last.recall.items and last.tokens.recall
    app = create_app(WatchRuntime(conversation_folder, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _opened(pilot, app)
        gauges = [g for g in screen.query(TokenGauge) if g.tokens is not None and g.tokens.recall]
        assert gauges and f"recall {gauges[0].tokens.recall}" in str(gauges[0].tooltip)
        await command(pilot, "/context")
        overview = app.screen
        assert isinstance(overview, ContextOverviewScreen)
        assert "▓ recall" in str(overview.query_one("Legend").render())
        await pilot.press("escape")
        await command(pilot, f"/context {last.agent_id}")
        inspector = app.screen
        assert isinstance(inspector, ContextScreen) and inspector.record is not None
        assert inspector.record.call_id == last.call_id
        text = inspector.query_one(TextArea).text
        assert f"recall · {last.tokens.recall} tokens" in text
        why = f"recall: searched {', '.join(last.recall.query)}"
        assert why in text
        item = last.recall.items[0]
        assert f"{item.id}{' (passage)' if item.span else ''} · score {item.score:.2f} · {', '.join(item.terms)}" in text
        assert f"recall {last.tokens.recall / 1000:.1f}k" in str(inspector.query_one("#ctx-tiers", Label).render()) \
            or f"recall {last.tokens.recall}" in str(inspector.query_one("#ctx-tiers", Label).render())


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_snapshot_search_results(snap_compare, conversation_folder: DebateFolder, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await _opened(pilot, pilot.app)
        await command(pilot, "/search PostgreSQL job queue")
        await pilot.pause()

    app = create_app(WatchRuntime(conversation_folder, clock=fixed_clock), cursor_blink=False)
    assert snap_compare(app, terminal_size=size, run_before=run_before)


def typed(line: str) -> list[str]:
    """A command line as the keys a person types."""
    return ["space" if c == " " else c for c in line]


async def test_a_slash_on_the_lists_over_a_debate_opens_its_command_line(conversation_folder: DebateFolder) -> None:
    app = create_app(WatchRuntime(conversation_folder, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await _opened(pilot, app)
        theme = app.theme
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ContextOverviewScreen)
        # typed on the overview, the line is a command (not `t` for the theme, not enter for the inspector)
        await pilot.press(*typed("/search queue"), "enter")
        await pilot.pause()
        assert isinstance(app.screen, SearchResultsScreen), type(app.screen).__name__
        assert app.theme == theme
        # and on the hits too: back to the debate, the command run there
        await pilot.press(*typed("/context"), "enter")
        await pilot.pause()
        assert isinstance(app.screen, ContextOverviewScreen), type(app.screen).__name__
        assert [type(s).__name__ for s in app.screen_stack[1:]] == ["DebateScreen", "ContextOverviewScreen"]
        assert app.theme == theme


async def test_at_80_columns_each_hit_shows_its_match_and_enter_finds_the_query(
        conversation_folder: DebateFolder) -> None:
    app = create_app(WatchRuntime(conversation_folder, clock=fixed_clock), cursor_blink=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await _opened(pilot, app)
        await command(pilot, "/search latency")
        results = app.screen
        assert isinstance(results, SearchResultsScreen), feedback(app)
        far = [i for i, dh in enumerate(results.hits) if strip_marks(dh.hit.excerpt).find("latency") > 90]
        assert far, "the debate's excerpts hold the word past the width of the screen"
        labels = [item.query_one(Label) for item in results.query_one(ListView).children]
        for i, label in enumerate(labels):
            width = app.size.width - label.content_region.x  # what the screen shows of the line
            excerpt = label.render().plain.split("\n")[1][:width]
            assert "latency" in excerpt.lower(), (i, excerpt)
            cut_before = strip_marks(results.hits[i].hit.excerpt).replace("\n", " ").find("latency") > width
            assert excerpt.startswith("…") or not cut_before, excerpt
        for _ in range(far[0]):
            await pilot.press("down")
        await pilot.press("enter")
        await pilot.pause()
        inspector = app.screen
        assert isinstance(inspector, ContextScreen)
        assert inspector.query_one("#ctx-find-input", Input).value == "latency"
        assert inspector.query_one(TextArea).selected_text.lower() == "latency"

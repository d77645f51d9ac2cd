"""The slash-command parser, completion and small helpers (no app needed)."""

from __future__ import annotations

import pytest

from moot.core.events import DebateCompleted, DebateFailed, DebateInterrupted
from moot.core.models.state import DebateState
from moot.core.storage.state import apply
from moot.tui.commands import COMMANDS, CommandError, Vocabulary, complete, lookup, palette_entries, parse, parse_round
from moot.tui.format import clock_time, k
from moot.tui.screens.debate import grid_shape

VOCAB = Vocabulary(agents=lambda: ["architect", "performance", "kiss"], themes=lambda: ["dark", "light", "high-contrast"])


def test_parse_commands_and_args() -> None:
    cmd = parse("/summarize architect")
    assert cmd.name == "summarize" and cmd.args == ("architect",)
    assert parse("  /context kiss 2 ").args == ("kiss", "2")
    assert parse("/sum").name == "summarize"  # prefix
    assert parse("/q").name == "quit"  # alias


@pytest.mark.parametrize("line, message", [
    ("/frobnicate", "unknown command /frobnicate"),
    ("summarize", "commands start with /"),
    ("/", "type a command"),
    ("/pause now", "too many arguments"),
    ("/context a 1 extra", "too many arguments"),
])
def test_parse_errors(line: str, message: str) -> None:
    with pytest.raises(CommandError, match=message):
        parse(line)


def test_parse_inject_takes_the_rest_of_the_line() -> None:
    cmd = parse("/inject Keep it  simple, please ")
    assert cmd.name == "inject" and cmd.args == ("Keep it  simple, please",)
    assert parse("/inject").args == () and parse("/inject   ").args == ()
    assert parse("/inj\tno tabs lost").args == ("no tabs lost",)


def test_parse_round() -> None:
    assert parse_round("2", 3) == 2
    with pytest.raises(CommandError, match="no round 7"):
        parse_round("7", 2)
    with pytest.raises(CommandError, match="must be a number"):
        parse_round("two", 2)
    with pytest.raises(CommandError, match="no round has started"):
        parse_round("1", 0)


def test_completion() -> None:
    assert complete("/su", VOCAB) == "/summarize"
    assert complete("/summarize ar", VOCAB) == "/summarize architect"
    assert complete("/summarize a", VOCAB) == "/summarize architect"
    assert complete("/summarize al", VOCAB) == "/summarize all"
    assert complete("/context ju", VOCAB) == "/context judge"
    assert complete("/theme li", VOCAB) == "/theme light"
    assert complete("/pause x", VOCAB) is None
    assert complete("/inj", VOCAB) == "/inject"
    assert complete("/inject ke", VOCAB) is None  # free text: nothing to complete
    assert complete("hello", VOCAB) is None
    assert lookup("nope") is None


def test_palette_entries_cover_commands_and_agents() -> None:
    lines = [line for _, _, line in palette_entries([("architect", "Architect")], ["dark", "light"])]
    for line in ("/summarize all", "/pause", "/resume", "/stop", "/help", "/quit", "/summarize architect",
                 "/context architect", "/theme light", "/inject "):
        assert line in lines


def test_grid_shape_adapts() -> None:
    assert grid_shape(2, 140, 31) == (2, 1)
    assert grid_shape(4, 140, 31) == (2, 2)
    assert grid_shape(7, 160, 34) == (4, 2)
    assert grid_shape(9, 160, 34) == (3, 3)
    assert grid_shape(9, 60, 40)[0] == 1  # narrow: one column
    assert grid_shape(0, 100, 30) == (1, 1)


def test_formatting_and_exit_codes() -> None:
    assert [k(812), k(5234), k(7000), k(123456)] == ["812", "5.2k", "7k", "123k"]
    assert clock_time(75) == "01:15" and clock_time(3725) == "1:02:05"
    state = apply(DebateState(id="x", problem="p"), DebateFailed(error="budget", exit_code=4))
    assert (state.status, state.exit_code) == ("failed", 4)
    for event, code in ((DebateCompleted(), 0), (DebateInterrupted(status="stopped"), 0),
                        (DebateFailed(error="x"), 3), (DebateInterrupted(), 130)):
        assert apply(DebateState(id="x", problem="p"), event).exit_code == code


async def test_every_command_has_a_handler(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The registry (help, completion, palette, parser) and the screen's handler table agree."""
    from moot.tui.app import create_app
    from moot.tui.screens.debate import DebateScreen
    from tests.tui.scripted import ScriptedRuntime

    app = create_app(ScriptedRuntime(), cursor_blink=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        handlers = screen.command_handlers()
        assert set(handlers) == set(COMMANDS)
        assert all(callable(h) for h in handlers.values())

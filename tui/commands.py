"""Slash commands: the registry, a small parser, completion and the command-palette provider.

The registry is the single source for `/help`, completion, the palette and the
parser; the debate screen executes a `ParsedCommand` (see `DebateScreen.run_command_line`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.suggester import Suggester


class CommandError(Exception):
    """A command line that cannot run; the message is shown inline."""


@dataclass(frozen=True)
class CommandSpec:
    name: str
    usage: str
    help: str
    max_args: int = 0
    completes: tuple[str, ...] = ()
    """What each argument completes to: "agent", "agent+all", "agent+judge", "theme"."""
    key: str = ""
    """The key binding for the same action, shown in /help."""
    text: bool = False
    """The last argument is free text, the rest of the line (/inject's note, /summarize's focus)."""


COMMANDS: dict[str, CommandSpec] = {
    spec.name: spec
    for spec in (
        CommandSpec("summarize", "/summarize [agent|all] [focus]",
                    "Summarize an agent's context at its next call boundary; the focus text tells the "
                    "summarizer what to keep.", 2, ("agent+all",), "s", text=True),
        CommandSpec("context", "/context [agent] [round]",
                    "Without arguments: every agent's context by tier and its next summary. With an "
                    "agent: the exact messages of its latest call (or of its calls in that round).",
                    2, ("agent+judge",), "c · i"),
        CommandSpec("pause", "/pause", "Pause the debate at the next call boundary.", 0, (), "p"),
        CommandSpec("resume", "/resume", "Resume a paused debate.", 0, (), "p"),
        CommandSpec("stop", "/stop", "Stop the debate (saved; continue later with `moot resume`).", 0, (), "x"),
        CommandSpec("inject", "/inject TEXT",
                    "Add a moderator note: every agent sees it verbatim from its next call on.",
                    1, (), "", text=True),
        CommandSpec("save", "/save [FILE]",
                    "Write the final solution as markdown (default solution-ID.md here; atomic).", 1, (), ""),
        CommandSpec("copy", "/copy", "Copy the final solution (markdown) to the clipboard.", 0, (), ""),
        CommandSpec("theme", "/theme [name]", "Switch theme (remembered); without a name, list the themes.",
                    1, ("theme",), "t"),
        CommandSpec("help", "/help", "Show commands and keys.", 0, (), "?"),
        CommandSpec("quit", "/quit", "Quit (asks first while a debate is running).", 0, (), "q"),
    )
}
ALIASES = {"sum": "summarize", "ctx": "context", "q": "quit", "exit": "quit", "h": "help", "?": "help"}


@dataclass(frozen=True)
class ParsedCommand:
    spec: CommandSpec
    args: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.spec.name


def lookup(name: str) -> CommandSpec | None:
    """A command by name, alias or unambiguous prefix."""
    key = name.lower()
    if key in COMMANDS:
        return COMMANDS[key]
    if key in ALIASES:
        return COMMANDS[ALIASES[key]]
    matches = [spec for n, spec in COMMANDS.items() if n.startswith(key)]
    return matches[0] if len(matches) == 1 else None


def parse(line: str) -> ParsedCommand:
    """Parse `/name arg…`; raises CommandError with a message fit for the user."""
    text = line.strip()
    if not text or text == "/":
        raise CommandError("type a command after /, e.g. /help")
    if not text.startswith("/"):
        raise CommandError(f"commands start with /: did you mean /{text.split()[0]}? (/help lists them)")
    name, *more = text[1:].strip().split(maxsplit=1)
    rest = more[0].strip() if more else ""
    spec = lookup(name)
    if spec is None:
        raise CommandError(f"unknown command /{name} — /help lists the commands")
    if spec.text:
        return ParsedCommand(spec, tuple(rest.split(maxsplit=spec.max_args - 1)))
    args = rest.split()
    if len(args) > spec.max_args:
        raise CommandError(f"too many arguments — usage: {spec.usage}")
    return ParsedCommand(spec, tuple(args))


def parse_round(text: str, rounds: int) -> int:
    """A round number given by the user, checked against the rounds that exist."""
    try:
        n = int(text)
    except ValueError:
        raise CommandError(f"round must be a number, not {text!r}") from None
    if rounds == 0:
        raise CommandError("no round has started yet")
    if not 1 <= n <= rounds:
        raise CommandError(f"no round {n}: this debate has rounds 1–{rounds}" if rounds > 1
                           else f"no round {n}: this debate has only round 1 so far")
    return n


# ---------------------------------------------------------------- completion


@dataclass
class Vocabulary:
    """What arguments can complete to, read when completing (agents appear mid-debate)."""

    agents: Callable[[], list[str]]
    themes: Callable[[], list[str]]

    def words(self, kind: str) -> list[str]:
        if kind == "theme":
            return self.themes()
        words = list(self.agents())
        if kind == "agent+all":
            words.append("all")
        elif kind == "agent+judge":
            words.append("judge")
        return words


def complete(value: str, vocab: Vocabulary) -> str | None:
    """The full line `value` most likely completes to, or None."""
    if not value.startswith("/"):
        return None
    head, sep, rest = value[1:].partition(" ")
    if not sep:
        for name in COMMANDS:
            if name.startswith(head.lower()) and name != head.lower():
                return "/" + name
        return None
    spec = lookup(head)
    if spec is None or not spec.completes:
        return None
    parts = rest.split(" ")
    index = len(parts) - 1
    if index >= len(spec.completes):
        return None
    partial_word = parts[-1].lower()
    if not partial_word:
        return None
    for word in vocab.words(spec.completes[index]):
        if word.lower().startswith(partial_word) and word.lower() != partial_word:
            return value + word[len(partial_word):]
    return None


class CommandSuggester(Suggester):
    """Input suggester for the command line: command names, agents, themes."""

    def __init__(self, vocab: Vocabulary) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.vocab = vocab

    async def get_suggestion(self, value: str) -> str | None:
        return complete(value, self.vocab)


# ---------------------------------------------------------------- command palette


def palette_entries(agents: Iterable[tuple[str, str]], themes: Iterable[str]) -> list[tuple[str, str, str]]:
    """(title, help, command line) for the palette; agents are (id, display name).

    A line ending in a space needs text from the user: the palette puts it on the
    command line instead of running it."""
    agents = list(agents)
    out = [
        ("Summarize all agents", COMMANDS["summarize"].help, "/summarize all"),
        ("Pause debate", COMMANDS["pause"].help, "/pause"),
        ("Resume debate", COMMANDS["resume"].help, "/resume"),
        ("Stop debate", COMMANDS["stop"].help, "/stop"),
        ("Inject a moderator note", COMMANDS["inject"].help, "/inject "),
        ("Context overview", COMMANDS["context"].help, "/context"),
        ("Save the final solution", COMMANDS["save"].help, "/save"),
        ("Copy the final solution", COMMANDS["copy"].help, "/copy"),
        ("Help: commands and keys", COMMANDS["help"].help, "/help"),
        ("Quit moot", COMMANDS["quit"].help, "/quit"),
    ]
    for agent_id, name in agents:
        out.append((f"Summarize {name}", f"Summarize {name}'s context at its next call.", f"/summarize {agent_id}"))
        out.append((f"Context of {name}", f"What {name} saw in the current round.", f"/context {agent_id}"))
    out.append(("Context of the judge", "What the judge saw.", "/context judge"))
    for theme in themes:
        out.append((f"Theme: {theme}", "Switch theme (remembered).", f"/theme {theme}"))
    return out


@runtime_checkable
class CommandTarget(Protocol):
    """A screen that runs command lines (the debate screen): what the palette needs of it."""

    def palette_entries(self) -> list[tuple[str, str, str]]: ...

    def run_command_line(self, line: str) -> None: ...

    def prefill_command_line(self, line: str) -> None: ...


class MootCommandProvider(Provider):
    """The slash commands in Textual's command palette (ctrl+p)."""

    def _entries(self) -> tuple[CommandTarget | None, list[tuple[str, str, str]]]:
        screen = self.screen
        if not isinstance(screen, CommandTarget):
            return None, []
        return screen, screen.palette_entries()

    async def discover(self) -> Hits:
        screen, entries = self._entries()
        if screen is None:
            return
        for title, help_text, line in entries:
            yield DiscoveryHit(title, self._action(screen, line), help=help_text)

    async def search(self, query: str) -> Hits:
        screen, entries = self._entries()
        if screen is None:
            return
        matcher = self.matcher(query)
        for title, help_text, line in entries:
            score = max(matcher.match(title), matcher.match(line))
            if score > 0:
                yield Hit(score, matcher.highlight(title), self._action(screen, line), help=help_text)

    @staticmethod
    def _action(screen: CommandTarget, line: str) -> Callable[[], object]:
        if line.endswith(" "):
            return partial(screen.prefill_command_line, line)
        return partial(screen.run_command_line, line)

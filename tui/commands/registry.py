"""The command table — every slash command, its help and its handler — and the parser.

The table is the single source for `/help`, completion, the palette, the parser and the
debate screen's dispatch (`DebateScreen.run_command_line` → `run_command`).

Adding a command (say `/search QUERY`):

1. Write its handler, a function `search(ctx: CommandContext, query: str | None = None) -> None`,
   in the module of its family (`steering.py`, `inspection.py`, `solution.py`,
   `app_commands.py`) or a new module beside them. It reads the debate through `ctx`
   (`base.CommandContext`), reports with `ctx.feedback(…)`, raises `CommandError` (or
   `UsageError`) for anything the user should fix. Positional arguments arrive as strings;
   a missing one is None.
2. Add one `CommandSpec("search", "/search QUERY", "help text", max_args=1, run=search)` to
   `COMMANDS` below (`text=True` makes the last argument the rest of the line; `completes`
   and `key` feed completion and /help).
3. The palette (ctrl+p) offers it under its `palette` title (and `palette_line`, when it runs
   something other than `/search`: a line ending in a space puts it on the command line for
   the user to finish); an empty title leaves it out.

Tests: `tests/tui/test_commands.py` checks that every command has a handler; test the
command itself through Pilot (type it on the command line).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import app_commands, compare, finding, inspection, solution, steering, what_if
from .base import CommandContext, CommandError, UsageError

Handler = Callable[..., None]
"""`handler(ctx: CommandContext, *args: str) -> None`."""


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
    run: Handler | None = None
    """What runs it (see the module's docstring); None only for a spec built outside the table."""
    palette: str = ""
    """Its title in the command palette; empty: not there (/theme is, once per theme)."""
    palette_line: str = ""
    """What the palette runs; empty: `/name`. Ending in a space: it asks the user for the rest."""


COMMANDS: dict[str, CommandSpec] = {
    spec.name: spec
    for spec in (
        # The usage stays short (the help table's first column is as wide as its longest usage);
        # the description names the option.
        CommandSpec("summarize", "/summarize [agent|all] [focus]",
                    "Summarize an agent's context at its next call boundary; the focus text tells the "
                    "summarizer what to keep. `--from turn N` (or `round N`) before the focus folds "
                    "everything before that point and keeps the rest verbatim.", 2, ("agent+all",), "s", text=True,
                    run=steering.summarize,
                    palette="Summarize all agents", palette_line="/summarize all"),
        CommandSpec("context", "/context [agent] [round]",
                    "Without arguments: every agent's context by tier and its next summary. With an "
                    "agent: the exact messages of its latest call (or of its calls in that round).",
                    2, ("agent+judge",), "c · i", run=inspection.context, palette="Context overview"),
        CommandSpec("search", "/search TEXT",
                    "Find words in this debate (messages, contributions, summaries, notes); enter shows the "
                    "message in the messages view.", 1, (), "", text=True, run=finding.search,
                    palette="Search this debate", palette_line="/search "),
        CommandSpec("compare", "/compare A B [round]",
                    "Two agents' contributions side by side: the words only one of them wrote marked, the "
                    "claims only one makes listed; votes or ranks in vote and council debates. `/compare fork`: "
                    "this debate and its fork (its parent, in a fork) from the fork point, with tokens and cost.",
                    3, ("agent", "agent"), "", run=compare.compare,
                    palette="Compare two agents", palette_line="/compare "),
        CommandSpec("pause", "/pause", "Pause the debate at the next call boundary.", 0, (), "p",
                    run=steering.pause, palette="Pause debate"),
        CommandSpec("resume", "/resume", "Resume a paused debate.", 0, (), "p", run=steering.resume,
                    palette="Resume debate"),
        CommandSpec("stop", "/stop", "Stop the debate (saved; continue later with `moot resume`).", 0, (), "x",
                    run=steering.stop, palette="Stop debate"),
        CommandSpec("inject", "/inject TEXT",
                    "Add a moderator note: every agent sees it verbatim from its next call on.",
                    1, (), "", text=True, run=steering.inject,
                    palette="Inject a moderator note", palette_line="/inject "),
        CommandSpec("pin", "/pin ITEM",
                    "Keep an item verbatim in every later view of the agents that saw it, never summarized "
                    "away: `turn 12`, `round 2 AGENT [proposal|critique|refinement|answer]`.",
                    1, (), "", text=True, run=steering.pin, palette="Pin an item", palette_line="/pin "),
        CommandSpec("unpin", "/unpin ITEM", "Let a pinned item (or a configured constraint) go: later views "
                    "carry it no more.", 1, (), "", text=True, run=steering.unpin,
                    palette="Unpin an item", palette_line="/unpin "),
        CommandSpec("fork", "/fork [round N | turn N] [note]",
                    "Fork the debate at the start of a round (default: the current one) or turn and run the "
                    "fork in its own screen, the note as a moderator note from there; this debate goes on.",
                    1, (), "", text=True, run=what_if.fork, palette="Fork the debate here", palette_line="/fork "),
        CommandSpec("rewind", "/rewind [round N | turn N] [note]",
                    "As /fork, but stop this debate first (saved, resumable) and go on in the fork.",
                    1, (), "", text=True, run=what_if.rewind, palette="Rewind the debate",
                    palette_line="/rewind "),
        CommandSpec("save", "/save [FILE]",
                    "Write the final solution as markdown (default solution-ID.md here; atomic).", 1, (), "",
                    run=solution.save, palette="Save the final solution"),
        CommandSpec("copy", "/copy", "Copy the final solution (markdown) to the clipboard.", 0, (), "",
                    run=solution.copy, palette="Copy the final solution"),
        CommandSpec("theme", "/theme [name]", "Switch theme (remembered); without a name, list the themes.",
                    1, ("theme",), "t", run=app_commands.theme),
        CommandSpec("debates", "/debates", "The saved debates: sort, filter and open one (this one keeps "
                    "running; esc comes back).", 0, (), "d", run=app_commands.debates,
                    palette="Saved debates"),
        CommandSpec("help", "/help", "Show commands and keys.", 0, (), "?", run=app_commands.help_,
                    palette="Help: commands and keys"),
        CommandSpec("quit", "/quit", "Quit (asks first while a debate is running).", 0, (), "q",
                    run=app_commands.quit_, palette="Quit moot"),
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


def run_command(ctx: CommandContext, command: ParsedCommand) -> None:
    """Run a parsed command's handler on `ctx`; a `UsageError` gains the command's usage."""
    handler = command.spec.run
    if handler is None:
        raise CommandError(f"/{command.name} has no handler")
    try:
        handler(ctx, *command.args)
    except UsageError as exc:
        raise CommandError(f"usage: {command.spec.usage} — {exc}") from None

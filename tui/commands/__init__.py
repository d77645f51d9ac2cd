"""Slash commands: the table with a handler per command, a small parser, completion and the
command-palette provider.

- `registry.py`: the table (`COMMANDS`) and the parser — start there; its docstring says how
  to add a command (one handler function + one `CommandSpec` line).
- `base.py`: `CommandContext` (what a handler may use of the debate screen), `CommandError`.
- the handlers, by family: `steering.py` (/summarize /pause /resume /stop /inject),
  `inspection.py` (/context), `solution.py` (/save /copy), `app_commands.py` (/theme /help /quit).
- `completion.py` (tab on the command line) and `palette.py` (ctrl+p).

Inside moot, importers name the module; the names below are re-exported for the tests, which
import `moot.tui.commands` as they did when it was one module.
"""

from .base import CommandContext, CommandError, UsageError, parse_round
from .completion import CommandSuggester, Vocabulary, complete
from .palette import CommandTarget, MootCommandProvider, palette_entries
from .registry import ALIASES, COMMANDS, CommandSpec, Handler, ParsedCommand, lookup, parse, run_command

__all__ = [
    "ALIASES", "COMMANDS", "CommandContext", "CommandError", "CommandSpec", "CommandSuggester", "CommandTarget",
    "Handler", "MootCommandProvider", "ParsedCommand", "UsageError", "Vocabulary", "complete", "lookup",
    "palette_entries", "parse", "parse_round", "run_command",
]

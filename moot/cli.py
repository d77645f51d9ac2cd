"""The `moot` command: the composition root, above the engine (`moot.core`) and the TUI (`moot.tui`).

This module builds the parser and dispatches; each family of subcommands lives in its own
module under `moot/commands/` (run/resume, list/show, context, search, report/trace, eval, watch/replay,
serve, ctl, completion), which imports the engine only inside its handlers, so start-up stays short
(`bench/startup.py`). Exit codes: 0 ok, 2 bad arguments or input, 3 provider failure, 4 config
error, 130 interrupted. Errors are one line on stderr, never a traceback.

Adding a subcommand (`moot search`, say) takes one module and one line:

1. `moot/commands/search.py` with
   `def register(sub: Subcommands) -> None` that adds its parser
   (`p = sub.add_parser("search", help=…)`, arguments with the shared helpers of
   `commands/flags.py`: `add_debate_id`, `add_state_dir`, `completes(…, "file")`, …) and ends
   with `p.set_defaults(handler=cmd_search)`; and `def cmd_search(args) -> int` that imports
   what it needs from `moot.core` inside the function and returns an `ExitCode`, raising a
   `MootError` subclass (`InputError`, `ConfigError`, …) for a one-line error.
2. Add `search` to `FAMILIES` below (the order is the order of `moot --help`).

Shell completion (`moot completion bash|zsh`) and `--help` then include it with no other change;
`tests/test_cli_layout.py` checks that every registered subcommand has a handler.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from moot.core.errors import ExitCode, MootError

from . import __version__
from .commands import (
    bench,
    completion,
    configure,
    context,
    ctl,
    doctor,
    evaluate,
    export,
    fork,
    run,
    saved,
    search,
    serve,
    tidy,
    watch,
)
from .commands.flags import Handler, Parser

FAMILIES = (run, saved, tidy, fork, context, search, export, evaluate, watch, serve, ctl, bench, configure, doctor,
            completion)
"""Every subcommand module; each `register`s its parsers with their handlers."""


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="moot", description="Multi-agent LLM debates, watched live in the terminal.")
    p.add_argument("--version", action="version", version=f"moot {__version__}")
    p.set_defaults(root_parser=p)  # `moot completion` generates its script from the whole parser
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for family in FAMILIES:
        family.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    from moot.core.safety.secrets import known_secrets, one_line

    def fail(message: object, code: int) -> int:
        """The one error line on stderr: masked, terminal-safe (servers echo keys and escapes in errors)."""
        print(f"moot: {one_line(str(message), 2000, known_secrets())}", file=sys.stderr)
        return code

    def on_sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    # SIGTERM before a debate's own handlers are in place acts like Ctrl-C (a line and
    # exit 130), not a silent kill.
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        return int(handler(args))
    except MootError as exc:
        return fail(exc, exc.exit_code)
    except KeyboardInterrupt:
        print("moot: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        return ExitCode.OK
    except Exception as exc:  # the promise: one line, never a traceback (MOOT_DEBUG=1 shows it)
        if os.environ.get("MOOT_DEBUG"):
            raise
        return fail(f"unexpected error: {type(exc).__name__}: {exc}", ExitCode.UNEXPECTED)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

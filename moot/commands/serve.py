"""`moot serve`: the TUI in a browser (textual-serve, the `moot[serve]` extra), behind a token.

`moot serve [--port P] [--host H] [run args…]`: each browser tab that opens the printed address
runs `moot run <run args>` in the TUI (the saved debates, as `moot watch` shows them, when no run
args are given)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from moot.core.errors import ExitCode, InputError

from .flags import add_state_dir, positive_int

if TYPE_CHECKING:
    from .flags import Subcommands


def register(sub: Subcommands) -> None:
    s = sub.add_parser("serve", help="serve the TUI to a browser (needs moot[serve]); run args after the options",
                       description="Serve the TUI to a browser through textual-serve. Each browser tab runs "
                                   "`moot run RUN_ARGS` (the saved debates when none are given).")
    s.add_argument("--port", type=positive_int, default=8000, help="port (default 8000)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    s.add_argument("--public-url", help="the address browsers use, when a proxy stands in front (default: host:port)")
    s.add_argument("--max-sessions", type=positive_int, metavar="N",
                   help="browser sessions (each a TUI process) open at once; the rest get a page saying so "
                        "(default 4)")
    add_state_dir(s)
    s.add_argument("run_args", nargs=argparse.REMAINDER,
                   help="what each tab runs, as for `moot run` (a problem, -p FILE, --provider, …); "
                        "put `--` first when they start with an option")
    s.set_defaults(handler=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    import shlex

    from moot.tui.serve import DEFAULT_MAX_SESSIONS, new_token, serve

    run_args = list(args.run_args)
    if run_args[:1] == ["--"]:
        run_args = run_args[1:]
    base = [sys.executable, "-m", "moot"]
    state = ["--state-dir", args.state_dir] if args.state_dir else []
    if run_args:
        check_run_args(run_args)
        command = [*base, "run", *run_args, *state]
    else:
        command = [*base, "watch", *state]
    serve(shlex.join(command), host=args.host, port=args.port, token=new_token(), public_url=args.public_url,
          max_sessions=args.max_sessions or DEFAULT_MAX_SESSIONS)
    return ExitCode.OK


def check_run_args(run_args: list[str]) -> None:
    """The args are `moot run`'s (checked now: one line and exit 2, not a broken page later), and
    keep the TUI (a browser tab shows nothing of a headless run)."""
    from . import run
    from .flags import Parser

    parser = Parser(prog="moot")
    run.register(parser.add_subparsers(dest="command", required=True, parser_class=Parser))
    parsed = parser.parse_args(["run", *run_args])
    if parsed.headless or parsed.plain:
        raise InputError("moot serve shows the TUI: leave out --headless and --plain")

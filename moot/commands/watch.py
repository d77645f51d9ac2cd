"""`moot watch` and `moot replay`: a saved or running debate read from its event log, live
(tailing it) or with its original timing."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from moot.core.errors import InputError

from .flags import add_debate_id, add_state_dir, finite_seconds

if TYPE_CHECKING:
    from .flags import Subcommands


def register(sub: Subcommands) -> None:
    w = sub.add_parser("watch", help="watch a running or finished debate (tails its event log)")
    add_debate_id(w, optional=True)
    w.add_argument("--theme", help="TUI theme")
    w.add_argument("--headless", action="store_true", help="print event lines instead of the TUI")
    add_state_dir(w)
    w.set_defaults(handler=cmd_watch)

    r = sub.add_parser("replay", help="play a recorded debate back with its original timing")
    add_debate_id(r, optional=True)
    r.add_argument("--theme", help="TUI theme")
    r.add_argument("--speed", type=finite_seconds, default=1.0, help="playback speed (default 1)")
    add_state_dir(r)
    r.set_defaults(handler=cmd_replay)


def cmd_watch(args: argparse.Namespace) -> int:
    from moot.core.observe.headless import tail_events, wants_tui
    from moot.core.storage.state_dir import StateDir

    sd = StateDir(args.state_dir)
    if not wants_tui(args.headless):
        if args.id is None:
            raise InputError("give a debate id to watch without a terminal (see `moot list`)")
        import asyncio

        return asyncio.run(tail_events(sd.open(args.id)))
    from moot.tui.app import run_picker, run_watch

    if args.id is None:
        return run_picker(sd.root, args.theme)
    return run_watch(sd.open(args.id), args.theme)


def cmd_replay(args: argparse.Namespace) -> int:
    from moot.core.storage.state_dir import StateDir

    sd = StateDir(args.state_dir)
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        raise InputError("replay needs a terminal; use `moot show` or `moot report` to read a debate")
    from moot.tui.app import run_picker, run_replay

    if args.id is None:
        return run_picker(sd.root, args.theme)
    return run_replay(sd.open(args.id), args.speed, args.theme)

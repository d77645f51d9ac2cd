"""`moot rm ID…` and `moot prune --older-than AGE`: saved debates removed for good.

Both say what they will remove and ask in a terminal; elsewhere (a script, a pipe) they remove
nothing without `--yes`. A debate that a process runs now is never removed.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, cast

from moot.core.errors import ExitCode, InputError

from .flags import add_state_dir, completes

if TYPE_CHECKING:
    from moot.core.storage.folder import DebateFolder

    from .flags import Subcommands


def register(sub: Subcommands) -> None:
    rm = sub.add_parser("rm", help="remove saved debates (a bench's b-… id removes all its debates)")
    completes(rm.add_argument("ids", nargs="+", metavar="ID",
                              help="debate ids as `moot list` shows them (whole, not a prefix)"), "debate")
    rm.add_argument("--yes", action="store_true", help="do not ask (needed when stdin is not a terminal)")
    add_state_dir(rm)
    rm.set_defaults(handler=cmd_rm)

    prune = sub.add_parser("prune", help="remove saved debates older than an age")
    prune.add_argument("--older-than", required=True, metavar="AGE", help="e.g. 30d, 12h, 2w (s m h d w)")
    prune.add_argument("--yes", action="store_true", help="do not ask (needed when stdin is not a terminal)")
    add_state_dir(prune)
    prune.set_defaults(handler=cmd_prune)


def cmd_rm(args: argparse.Namespace) -> int:
    from moot.core.safety.sanitize import one_line_safe
    from moot.core.storage.state_dir import StateDir
    from moot.core.storage.tidy import bench_group

    sd = StateDir(args.state_dir)
    by_id = {f.id: f for f in sd.debates()}
    chosen: dict[str, DebateFolder] = {}
    for given in args.ids:
        members = [f for f in by_id.values() if bench_group(f.id) == given]
        if given in by_id:
            members = [by_id[given]]
        if not members:  # nothing is removed when one id is wrong: the list may have a typo
            raise InputError(f"no debate {one_line_safe(given, 60)!r} in {sd.root.absolute()}; nothing removed "
                             "(`moot list` shows the ids)")
        chosen.update((f.id, f) for f in members)
    return remove_all(list(chosen.values()), sd.root.absolute(), args.yes)


def cmd_prune(args: argparse.Namespace) -> int:
    from moot.core.storage.state_dir import StateDir, summarize_folder
    from moot.core.storage.tidy import parse_age

    age = parse_age(args.older_than)
    sd = StateDir(args.state_dir)
    cutoff = time.time() - age
    old = [f for f in sd.debates() if cast(float, summarize_folder(f)["created_at"]) < cutoff]
    if not old:
        print(f"moot: no debate in {sd.root.absolute()} is older than {args.older_than}", file=sys.stderr)
        return ExitCode.OK
    return remove_all(old, sd.root.absolute(), args.yes)


def remove_all(folders: list[DebateFolder], root: object, yes: bool) -> int:
    """Ask (or take `--yes`), then remove each; one line for what was removed and what was not."""
    from moot.core.safety.sanitize import one_line_safe
    from moot.core.storage.folder import writer_alive
    from moot.core.storage.tidy import folder_bytes, remove

    running = [f.id for f in folders if writer_alive(f)]
    if running:
        raise InputError(f"debate {one_line_safe(running[0], 60)} is being run by a moot process; nothing removed "
                         "(stop it first)")
    size = sum(folder_bytes(f.path) for f in folders)
    names = ", ".join(one_line_safe(f.id, 60) for f in folders[:5])
    more = f" and {len(folders) - 5} more" if len(folders) > 5 else ""
    plural = "s" if len(folders) != 1 else ""
    what = f"{len(folders)} debate{plural} ({size / 1e6:.1f} MB) from {root}: {names}{more}"
    if not yes:
        if not sys.stdin.isatty():
            raise InputError(f"nothing removed: removing {what} is for good, so confirm it in a terminal, "
                             "or pass --yes")
        print(f"Remove {what}? [y/N] ", end="", file=sys.stderr, flush=True)
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            print("moot: nothing removed", file=sys.stderr)
            return ExitCode.UNEXPECTED
    failed = []
    for f in folders:
        try:
            remove(f)
        except InputError as exc:
            failed.append(str(exc))
    print(f"removed {len(folders) - len(failed)} of {len(folders)} debates from {root}", file=sys.stderr)
    if failed:
        raise InputError(failed[0] + (f" (and {len(failed) - 1} more not removed)" if len(failed) > 1 else ""))
    return ExitCode.OK

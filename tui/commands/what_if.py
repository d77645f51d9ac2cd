"""`/fork [round N | turn N] [note…]`: the debate's history up to a point, run on in its own screen.

The fork is made as `moot fork` makes it (its history is this debate's log up to the point,
byte for byte; this debate's files are only read) and runs in this process beside the debate
shown, which goes on running. Without a point it forks at the start of the current round (or
turn); the rest of the line is a moderator note every agent of the fork sees from there on.
`/rewind` takes the same line but stops the debate shown first (at its next call boundary, saved
and resumable), so the fork is where the debate goes on.
"""

from __future__ import annotations

from typing import Any

from ...core.errors import MootError
from ...core.models.state import DebateState
from ...core.safety.sanitize import one_line_safe
from ...core.storage.folder import DebateFolder
from .base import CommandContext, CommandError


def fork_point(state: DebateState, text: str | None) -> tuple[str, str | None]:
    """(`round:N` or `turn:N`, the note or None) from `/fork`'s line; the current step by default."""
    from ...core.forking import step_point

    unit = "turn" if state.protocol == "conversation" else "round"
    try:
        return step_point(state, text, f"/fork {unit} N [note]")
    except MootError as exc:
        raise CommandError(str(exc)) from None


def start_fork(app: Any, folder: DebateFolder, at: str, note: str | None, demo_delay: float | None) -> str:
    """Fork the debate in `folder` at `at` (`round:N`, `round:N:PHASE`, `turn:N`) with `note`, and run
    the fork in its own screen (`MootApp.open_live`); its id. CommandError (one line) when it cannot."""
    from ...core.forking import ForkChanges, fork_debate
    from ...core.session import SessionOptions, resume_session
    from ...core.storage.fork import parse_point

    try:
        point = parse_point(at)
        forked = fork_debate(folder.id, point, ForkChanges(inject=note), folder.path.parent)
        session = resume_session(forked.id, SessionOptions(state_dir=folder.path.parent, demo_delay=demo_delay))
    except MootError as exc:
        raise CommandError(one_line_safe(str(exc), 300)) from None
    app.open_live(session)
    return forked.id


def demo_delay_of(runtime: object) -> float | None:
    """The demo provider's pacing of the debate a runtime runs (a fork keeps it), else None."""
    return getattr(getattr(getattr(runtime, "session", None), "providers", None), "demo_delay", None)


def fork(ctx: CommandContext, text: str | None = None) -> None:
    """`/fork [round N | turn N] [note…]`: open the fork in a new debate screen; this one keeps running."""
    folder = ctx.runtime.debate_folder()
    if folder is None or not ctx.state.problem:
        raise CommandError("the debate has not started yet: nothing to fork")
    at, note = fork_point(ctx.state, text)
    ctx.feedback(f"forking at {at.replace(':', ' ')}…")
    forked = start_fork(ctx.app, folder, at, note, demo_delay_of(ctx.runtime))
    ctx.feedback(f"forked at {at.replace(':', ' ')} as {forked}" + (" with the note" if note else "")
                 + ": it runs in its own screen, this debate goes on (esc comes back)")


def rewind(ctx: CommandContext, text: str | None = None) -> None:
    """`/rewind [round N | turn N] [note…]`: stop this debate and go on in the fork made at the point."""
    folder = ctx.runtime.debate_folder()
    if folder is None or not ctx.state.problem:
        raise CommandError("the debate has not started yet: nothing to rewind")
    at, note = fork_point(ctx.state, text)
    # The fork reads only what the log already holds up to the point, so stopping first loses nothing
    # the fork needs; a debate that has already ended is simply forked.
    stopping = ctx.state.status == "running" and ctx.runtime.can_steer
    if stopping:
        ctx.runtime.stop()
    ctx.feedback(f"rewinding to {at.replace(':', ' ')}…")
    forked = start_fork(ctx.app, folder, at, note, demo_delay_of(ctx.runtime))
    ctx.feedback(f"rewound to {at.replace(':', ' ')} as {forked}" + (" with the note" if note else "")
                 + (": this debate stops at its next call boundary" if stopping else "")
                 + " and the fork goes on in its own screen (esc comes back)")


def compare_fork(ctx: CommandContext, other: str | None = None) -> None:
    """`/compare fork [ID]`: this debate and a fork side by side from the fork point — in a fork, its
    parent; else its newest fork (or the debate `ID`, a fork of this one or the one this forks)."""
    from ...core.fork_compare import compare_fork as compared
    from ...core.storage.sessions import read_row
    from ...core.storage.state_dir import StateDir

    folder = ctx.runtime.debate_folder()
    if folder is None or not ctx.state.problem:
        raise CommandError("the debate has not started yet: nothing to compare")
    sd, this = StateDir(folder.path.parent), ctx.state
    try:
        if other is None and this.forked_from is not None:
            other = this.forked_from.debate
        if other is None:
            forks = [f.id for f in sd.debates() if read_row(f).forked_from == this.id]
            if not forks:
                raise CommandError("this debate has no fork yet: /fork makes one (/compare fork ID names one)")
            other = forks[-1]
        them = sd.open(other).load()
        parent, fork = (this, them) if them.forked_from is not None and them.forked_from.debate == this.id \
            else (them, this)
        comparison = compared(parent, fork)
    except MootError as exc:
        raise CommandError(one_line_safe(str(exc), 300)) from None
    ctx.feedback("")
    ctx.open_fork_compare(comparison)

"""What a command handler may use: the errors it raises and the screen it acts on.

A handler is a plain function `handler(ctx, *args) -> None` (see `registry.py`). It reads
and steers the debate through `CommandContext` — a narrow door onto the debate screen —
and says what happened with `ctx.feedback(…)`; any problem is a `CommandError` whose message
the command line shows inline, never a traceback.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any, Protocol

from ..runtime.base import READ_ONLY, ReadOnlyError, Runtime

if TYPE_CHECKING:
    from textual.app import App

    from ...core.context.index import DebateIndex
    from ...core.fork_compare import ForkComparison
    from ...core.models.state import DebateState
    from ...core.search.debates import DebateHit
    from ..followups import Followups


class CommandError(Exception):
    """A command line that cannot run; the message is shown inline."""


class UsageError(CommandError):
    """The arguments do not fit the command: shown as `usage: <its usage> — <this hint>`."""


class CommandContext(Protocol):
    """What the debate screen offers its commands."""

    state: DebateState
    index: DebateIndex
    runtime: Runtime
    followups: Followups
    """What the feedback line becomes once the command has taken effect."""

    @property
    def app(self) -> App[Any]: ...

    def feedback(self, text: str, error: bool = False) -> None:
        """The line under the command line ("" hides it)."""

    def focused_agent_id(self) -> str | None:
        """The agent whose pane has focus (or is shown, in the focus layout)."""

    def open_context_overview(self) -> None: ...

    def open_inspector(self, agent_id: str, round_no: int | None = None) -> None: ...

    def open_help(self) -> None: ...

    def open_debates(self) -> None:
        """The saved debates (the sessions screen), to open another one."""

    def open_compare(self, a: str, b: str, step: int | None = None) -> None:
        """Agents `a` and `b` side by side (`/compare`)."""

    def open_fork_compare(self, comparison: ForkComparison) -> None:
        """A debate and its fork side by side from the fork point (`/compare fork`)."""

    def open_search_results(self, text: str, hits: list[DebateHit]) -> None:
        """The hits of `/search TEXT` (enter: the message in the messages view)."""

    def controls_changed(self) -> None:
        """Pause/resume changed: redraw the header's status and the footer's keys."""

    def quit_app(self) -> None:
        """Quit as `q` does (asks once while a debate runs here)."""


def require_running(ctx: CommandContext, what: str) -> None:
    """The debate has started, has not ended (a replay may still be paused) and is steerable."""
    state, runtime = ctx.state, ctx.runtime
    if not state.problem:
        raise CommandError("the debate has not started yet")
    if state.status != "running" and runtime.mode != "replay":
        hint = f" (continue it with `moot resume {state.id}`)" if state.status in (
            "stopped", "interrupted", "failed") else ""
        raise CommandError(f"the debate is {state.status}: nothing to {what}{hint}")
    if not runtime.can_steer and runtime.mode != "replay":
        raise ReadOnlyError(READ_ONLY)


def require_engine(ctx: CommandContext, what: str) -> None:
    """As `require_running`, for commands that need the engine itself (not a replay's playback)."""
    require_running(ctx, what)
    if not ctx.runtime.can_steer:
        raise ReadOnlyError(READ_ONLY)


def no_agent(ctx: CommandContext, name: str, extra: str = "") -> CommandError:
    """`no agent 'achitect' — did you mean architect? agents: …`, to raise."""
    ids = [a.id for a in ctx.state.agents]
    close = difflib.get_close_matches(name.lower(), ids, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return CommandError(f"no agent {name!r} — {hint}agents: {', '.join(ids)}{extra}")


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

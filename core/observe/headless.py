"""The headless view: run a debate printing a line per event, or follow one on disk.

Lines go to stderr (through `moot.core.observe.describe`), the final solution to stdout, so
`moot run … --headless > solution.md` works. Ctrl-C and SIGTERM stop the debate at
once; it is saved and the resume command is printed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import ExitCode, StoreError
from ..event_bus import Subscription
from ..events import DebateInterrupted, DebateResumed, is_terminal, parse_event
from ..models.state import DebateState
from ..safety.sanitize import one_line_safe
from ..session import WRITER_BACKLOG, DebateSession
from ..storage.files import open_regular
from ..storage.folder import DebateFolder, writer_alive
from ..storage.state_dir import default_state_dir
from .describe import describe
from .printer import print_events, solution_text
from .terminal import wants_tui as wants_tui  # where the CLI and the tests found it before

if TYPE_CHECKING:
    from ..human.stdin_seat import LineReader


def resume_hint(folder: Path, debate_id: str) -> str:
    """`moot resume ID` with `--state-dir` when the debate is not in the default folder."""
    root = folder.parent
    flag = "" if root.resolve() == default_state_dir().resolve() else f" --state-dir {root}"
    return f"moot resume {debate_id}{flag}"


def ending_line(state: DebateState, folder: Path) -> str | None:
    """The one line that tells a person how an unfinished debate ended and how to continue it
    (None for a debate that completed). `running` here means it was cut off before it could
    record its own end."""
    hint = f"saved in {folder}; continue with `{resume_hint(folder, state.id)}`"
    if state.status == "failed":
        return f"moot: {one_line_safe(state.error or 'failed', 600)}; {hint}"
    if state.status in ("interrupted", "running"):
        cause = f" ({one_line_safe(state.error, 80)})" if state.status == "interrupted" and state.error else ""
        return f"moot: debate interrupted{cause}; {hint}"
    if state.status == "stopped":
        return f"moot: debate stopped; {hint}"
    return None


Printer = Callable[[Subscription], Coroutine[Any, Any, None]]
"""Prints a debate's events as they come (`print_events`; plain mode's `print_plain`)."""
Steering = Callable[[Callable[[str], None]], Coroutine[Any, Any, None]]
"""Takes commands while the debate runs (plain mode's stdin); given the function that
interrupts the debate at once with a cause, as a signal does."""


async def run_headless(session: DebateSession, printer: Printer | None = None,
                       steering: Steering | None = None, seat_out: TextIO | None = None,
                       seat_lines: LineReader | None = None, plain: bool = False) -> DebateState:
    """Run the debate to its end, printing progress; signals interrupt it (saved, resumable).

    A person's turns are shown on `seat_out` (stderr), in words when `plain`, and read from
    `seat_lines` (stdin)."""
    printer_sub = session.bus.subscribe("printer", limit=WRITER_BACKLOG)  # never far behind: see Subscription
    # The debate's own end line is left to `finish_headless`, which says it once, with the resume hint.
    printing = asyncio.create_task(printer(printer_sub) if printer is not None
                                   else print_events(printer_sub, skip=(DebateInterrupted,)))
    session.start_writer()
    seat = None
    if session.people:  # a person's turns: shown on stderr, answered on stdin (or `moot ctl say`)
        from ..human.stdin_seat import StdinSeat

        seat = asyncio.create_task(StdinSeat(session.orchestrator.desk, session.folder.id, session.people,
                                             seat_out or sys.stderr, seat_lines, plain=plain).run())
    loop = asyncio.get_running_loop()
    engine = asyncio.ensure_future(session.run())
    interrupted = False

    def interrupt(cause: str) -> None:
        # Ctrl-C / SIGTERM: cancel the debate at once (it records `interrupted` and
        # flushes the log). Signals that come while it flushes are ignored, so a
        # second Ctrl-C cannot tear the log.
        nonlocal interrupted
        if not interrupted and not engine.done():
            interrupted = True
            session.orchestrator.interrupted_by = cause
            engine.cancel()

    def on_signal(sig: signal.Signals) -> None:
        interrupt(sig.name)

    steer = asyncio.create_task(steering(interrupt)) if steering is not None else None

    stop_signals = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal, sig)
            stop_signals.append(sig)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - not on this platform
            pass
    try:
        try:
            state = await engine
        except asyncio.CancelledError:
            if not interrupted:
                raise
            state = session.state
            await session.close()
    finally:
        if seat is not None:
            seat.cancel()
        for sig in stop_signals:
            loop.remove_signal_handler(sig)
        if steer is not None:
            steer.cancel()
        session.bus.unsubscribe(printer_sub)
        await printing
    return state


def finish_headless(session: DebateSession, state: DebateState, plain: bool = False) -> int:
    """Print the solution (stdout) or the ending line (stderr); the exit code for the debate.

    Plain mode reads the solution out last, under a heading, and says where it was saved on
    stdout too, so everything is read in order."""
    folder = session.folder.path
    line = ending_line(state, folder)
    if line is not None:
        print(line, file=sys.stderr)
        return state.exit_code if state.status != "running" else int(ExitCode.INTERRUPTED)
    if plain:
        print("\nFinal solution.\n", flush=True)
    sys.stdout.write(solution_text(state))
    sys.stdout.flush()
    if plain:
        print(f"\nEnd of the final solution. The debate is saved in {folder}.", flush=True)
    else:
        print(f"saved in {folder}", file=sys.stderr)
    return int(ExitCode.OK)


READ_BLOCK = 1 << 20
"""Bytes of log `tail_events` reads at a time: a long debate's log is never held whole."""


def _blocks(folder: DebateFolder, offset: int) -> Iterator[bytes]:
    """The log from byte `offset` to its end as it is now, a block at a time."""
    try:
        fh = os.fdopen(open_regular(folder.events_path), "rb")
    except FileNotFoundError:
        raise StoreError(f"no event log in {folder.path}") from None
    except OSError as exc:
        raise StoreError(f"cannot read {folder.events_path}: {exc.strerror}") from None
    with fh:
        fh.seek(offset)
        while True:
            try:
                block = fh.read(READ_BLOCK)
            except OSError as exc:
                raise StoreError(f"cannot read {folder.events_path}: {exc.strerror}") from None
            if not block:
                return
            yield block


async def tail_events(folder: DebateFolder, poll_s: float = 0.2) -> int:
    """Print a debate's events as they are appended, following it through any resume, until it
    ends; the exit code.

    Whether a process still writes the debate is its lock (`writer_alive`), probed before each
    read: once no one holds it, the rest of the log is all there will be. Ending with a terminal
    event (after any `debate_resumed` that follows an earlier one) is the end: 0, with the
    resume hint when the debate did not complete. Ending without one means the writer died:
    one line saying so, and 130 (the debate is resumable, like an interrupted one)."""
    offset = 0
    pending = b""
    ended = False
    while True:
        alive = writer_alive(folder)
        for block in _blocks(folder, offset):
            offset += len(block)
            pending += block
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                if not raw.strip():
                    continue
                try:
                    event = parse_event(raw)
                except ValueError:
                    raise StoreError(f"{folder.events_path} is corrupt") from None
                line = describe(event)
                if line is not None:
                    print(line.text, flush=True)
                if is_terminal(event):
                    ended = True
                elif isinstance(event, DebateResumed):
                    ended = False  # a later run of the same debate: keep following
        if not alive:
            break
        await asyncio.sleep(poll_s)
    if ended:
        try:
            hint = ending_line(folder.load(), folder.path)
        except StoreError:
            hint = None
        if hint is not None:
            print(hint, file=sys.stderr)
        return int(ExitCode.OK)
    print(f"moot: debate {one_line_safe(folder.id)} stopped without an end and no process is writing it "
          f"(killed?); continue with `{resume_hint(folder.path, folder.id)}`", file=sys.stderr)
    return int(ExitCode.INTERRUPTED)

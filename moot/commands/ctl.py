"""`moot ctl`: steer a debate that another process runs (pause, resume, stop, summarize, inject, pin,
unpin), or
answer a person's turn in it (`say`), or fork it as `/fork` does (`fork`).

The command is a file in the debate's `control/` folder; this process then follows the event
log until the command is in effect (exit 0), refused (exit 2) or `--wait` runs out. A command
not taken by then is withdrawn (exit 2): it is applied exactly once or not at all. `fork` sends
nothing: it reads what the debate's log holds up to the point (the debate goes on untouched) and
makes the fork, which `moot resume FORK` runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from moot.core.errors import ExitCode, InputError

from .flags import add_debate_id, add_state_dir, finite_seconds, open_debate

if TYPE_CHECKING:
    from moot.core.control.commands import ControlCommand
    from moot.core.storage.folder import DebateFolder

    from .flags import Subcommands

ACTIONS = ["pause", "resume", "stop", "summarize", "inject", "say", "pin", "unpin", "fork"]


def register(sub: Subcommands) -> None:
    ctl = sub.add_parser("ctl", help="steer a debate that another process runs (pause, summarize, inject…)")
    add_debate_id(ctl)
    ctl.add_argument("action", choices=ACTIONS)
    ctl.add_argument("words", nargs="*", metavar="ARG",
                     help="summarize: AGENT|all [FOCUS…]; inject: the note's text; say: your answer ('-': read "
                          "it from stdin); pin, unpin: turn N | round N AGENT [TYPE] | constraint N; "
                          "fork: [round N | turn N] [NOTE…]")
    ctl.add_argument("--from", dest="from_step", nargs=2, metavar=("turn|round", "N"),
                     help="summarize: fold everything before that turn (or round) and keep the rest verbatim")
    ctl.add_argument("--as", dest="seat", metavar="NAME",
                     help="say: whose seat, when more than one person takes part (before the action: "
                          "moot ctl ID --as NAME say TEXT)")
    ctl.add_argument("--wait", type=finite_seconds, default=10.0,
                     help="seconds to wait until it is in effect (default 10); one not taken by then is "
                          "withdrawn; 0: send and return")
    add_state_dir(ctl)
    ctl.set_defaults(handler=cmd_ctl)


def cmd_ctl(args: argparse.Namespace) -> int:
    """Send one command to the process running a debate and follow it until it is in effect."""
    from moot.core.control.commands import send

    folder = open_debate(args)
    if args.seat is not None and args.action != "say":
        raise InputError("--as goes with say")
    words = list(args.words)
    from_step = _from_step(args.from_step, args.action)
    if args.action == "fork":
        return _fork(folder, words, args.state_dir)
    if args.action == "say" and words == ["-"]:
        words = [_read_answer()]
    command = _command(folder, args.action, words, args.seat)
    command.step = from_step
    start = folder.events_path.stat().st_size if folder.events_path.exists() else 0
    send(folder, command)
    if args.wait <= 0:
        print(f"sent {command.id}; the running debate takes it at its next call boundary")
        return ExitCode.OK
    return _follow(folder, command, start, args.wait)


def _fork(folder: DebateFolder, words: list[str], state_dir: str | None) -> int:
    """`fork [round N | turn N] [NOTE…]`: the fork made now (at the current round or turn by
    default, the note a moderator note from there); its id on stdout, to `moot resume`."""
    from moot.core.forking import ForkChanges, fork_debate, step_point
    from moot.core.storage.fork import parse_point

    at, note = step_point(folder.load(), " ".join(words), f"moot ctl {folder.id} fork [round N | turn N] [NOTE…]")
    forked = fork_debate(folder.id, parse_point(at), ForkChanges(inject=note), state_dir)
    print(f"moot: forked {folder.id} at {at.replace(':', ' ')} as {forked.id}"
          + (" with the note" if note else "") + f"; `moot resume {forked.id}` runs it", file=sys.stderr)
    print(forked.id)
    return ExitCode.OK


def _from_step(value: list[str] | None, action: str) -> int | None:
    """`--from turn N` (or `round N`): the step a summary folds everything before."""
    if value is None:
        return None
    if action != "summarize":
        raise InputError("--from goes with summarize")
    word, n = value
    if word.lower() not in ("turn", "round") or not n.isdigit() or int(n) < 1:
        raise InputError("usage: moot ctl ID summarize AGENT|all --from turn N [FOCUS…] (or --from round N)")
    return int(n)


def _read_answer() -> str:
    """`say -`: the answer from stdin, read no further than the limit of an answer (an endless
    pipe is refused in one line, not read until memory runs out)."""
    from moot.core.control.commands import MAX_SAY

    text = sys.stdin.read(MAX_SAY + 1)
    if len(text) > MAX_SAY:
        raise InputError(f"the answer on stdin is over {MAX_SAY:,} characters, the limit of an answer")
    return text


def _command(folder: DebateFolder, action: str, words: list[str], seat: str | None = None) -> ControlCommand:
    """The command the words ask for, checked (an unknown agent, an empty note: InputError)."""
    from moot.core.agents import require_agent
    from moot.core.control.commands import MAX_SAY, MAX_TEXT, ControlCommand
    from moot.core.events import DebateStarted, parse_event
    from moot.core.storage.files import open_regular

    agent = text = None
    if action == "summarize":
        if not words:
            raise InputError("usage: moot ctl ID summarize AGENT|all [FOCUS…]")
        agent, text = words[0], " ".join(words[1:]).strip() or None
        if agent.lower() != "all":
            try:
                with os.fdopen(open_regular(folder.events_path), "rb") as fh:
                    started = parse_event(fh.readline())
            except (OSError, ValueError) as exc:
                raise InputError(f"cannot read debate {folder.id}: {exc}") from None
            if isinstance(started, DebateStarted):
                agent = require_agent(agent, started.agents, where=f" in debate {folder.id}").id
    elif action == "inject":
        text = " ".join(words).strip()
        if not text:
            raise InputError("usage: moot ctl ID inject TEXT…")
    elif action in ("pin", "unpin"):
        text = " ".join(words).strip()
        if not text:
            raise InputError(f"usage: moot ctl ID {action} turn N | round N AGENT [TYPE] | constraint N")
    elif action == "say":
        text = " ".join(words).strip()
        if not text:
            raise InputError("usage: moot ctl ID [--as NAME] say TEXT… (or - to read it from stdin)")
        agent = _seat(folder, seat)
    elif words:
        raise InputError(f"{action} takes no arguments")
    if text is not None:
        what = {"inject": "the note", "say": "the answer", "pin": "the item", "unpin": "the item"}.get(action,
                                                                                                  "the focus")
        limit = MAX_SAY if action == "say" else MAX_TEXT
        if len(text) > limit:
            raise InputError(f"{what} is {len(text)} characters; the limit is {limit}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # bytes that are not UTF-8 arrive as lone surrogates
            raise InputError(f"{what} is not valid UTF-8 text") from None
    return ControlCommand(action=action, agent=agent, text=text)


def _seat(folder: DebateFolder, seat: str | None) -> str | None:
    """The id of the person's seat `say` answers for: `--as NAME` checked against the debate's
    people, or its only one; None when the debate's first event cannot be read (its process
    then decides)."""
    from moot.core.agents import require_agent
    from moot.core.events import DebateStarted, parse_event
    from moot.core.models.provider_kinds import is_person
    from moot.core.storage.files import open_regular

    try:
        with os.fdopen(open_regular(folder.events_path), "rb") as fh:
            started = parse_event(fh.readline())
    except (OSError, ValueError):
        return seat
    if not isinstance(started, DebateStarted):
        return seat
    people = [a for a in started.agents if is_person(a.provider)]
    if not people:
        raise InputError(f"nobody takes a seat in debate {folder.id} (a debate started with --human NAME has one)")
    if seat is None:
        if len(people) > 1:
            raise InputError(f"say as whom? seats: {', '.join(a.id for a in people)} (moot ctl {folder.id} --as NAME say …)")
        return people[0].id
    return require_agent(seat, people, where=f" among the seats of debate {folder.id}").id


def _follow(folder: DebateFolder, command: ControlCommand, start: int, wait: float) -> int:
    """Read the log from `start` until the command is in effect, refused, or `wait` runs out."""
    import time

    from moot.core.control.commands import effect_of, withdraw
    from moot.core.errors import StoreError
    from moot.core.events import ControlChanged, Event, is_terminal, parse_event
    from moot.core.observe.describe import describe
    from moot.core.safety.sanitize import one_line_safe
    from moot.core.storage.files import open_regular
    from moot.core.storage.folder import writer_alive

    def show(event: Event) -> None:
        if isinstance(event, ControlChanged) and event.effective:
            print(f"{command.id}: ⏸ paused: no call in flight; nothing runs until `moot ctl {folder.id} resume`")
            return
        line = describe(event)
        if line is not None:
            print(f"{command.id}: {line.text}")

    def refused(event: Event) -> int:
        print(f"moot: {one_line_safe(getattr(event, 'message', 'refused'), 400)}", file=sys.stderr)
        return ExitCode.INPUT

    offset, rest = start, b""
    taken = False
    deadline = time.monotonic() + wait
    while True:
        try:
            with os.fdopen(open_regular(folder.events_path), "rb") as fh:
                fh.seek(offset)
                data = fh.read()
        except StoreError as exc:
            raise InputError(str(exc)) from None
        except OSError as exc:
            raise InputError(f"cannot read debate {folder.id}: {exc.strerror or exc}") from None
        offset += len(data)
        *lines, rest = (rest + data).split(b"\n")
        for raw in lines:
            try:
                event = parse_event(raw)
            except ValueError:  # pydantic's ValidationError included
                continue
            effect = effect_of(command, event, taken=taken)
            if effect == "refused":
                return refused(event)
            if effect is not None:
                show(event)
                if effect == "in_effect":
                    return ExitCode.OK
                taken = True
            elif taken and is_terminal(event):
                show(event)  # the debate ended before the pause could hold anything
                return ExitCode.OK
        alive = writer_alive(folder)
        if not taken and (not alive or time.monotonic() >= deadline):
            if withdraw(folder, command):
                why = ("the process running it ended" if not alive
                       else f"its process did not take it within {wait:g} s (is it stuck?)")
                print(f"moot: debate {folder.id}: {why}; {command.id} withdrawn, nothing changed", file=sys.stderr)
                return ExitCode.INPUT
            taken = True  # claimed at the last moment: its outcome is on its way to the log
            deadline = time.monotonic() + max(wait, 5.0)
            continue
        if taken and (not alive or time.monotonic() >= deadline):
            then = "paused once they finish" if command.action == "pause" else "the debate ends once they finish"
            print(f"{command.id}: {command.action} taken; calls still in flight after {wait:g} s (nothing new "
                  f"starts; {then})" if alive else f"{command.id}: taken; the debate's process ended")
            return ExitCode.OK
        time.sleep(0.05)

"""Steering a debate that another process runs, through the debate's folder.

`moot ctl ID pause` and an attached `moot watch ID` write one small JSON file per command
into `<folder>/control/` (written to a temp name, then renamed: never half a command). The
process that runs the debate — the one holding the folder's lock — watches that folder,
hands each command to the same door its own TUI uses (`pause`, `resume`, `stop`,
`request_summary`, `inject`), which records it as an event carrying the command's id, and
deletes the file. The sender then sees in the event log when its command took effect.
With no live writer there is nobody to obey: `send` refuses (InputError, exit 2).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from moot.core.errors import InputError
from moot.core.store import DebateFolder, writer_alive

CONTROL_DIR = "control"
Action = Literal["pause", "resume", "stop", "summarize", "inject"]
MAX_TEXT = 4000


class ControlCommand(BaseModel):
    id: str = Field(default_factory=lambda: f"cmd-{secrets.token_hex(4)}")
    action: Action
    agent: str | None = None
    """summarize: the agent (id, name or role; `all`)."""
    text: str | None = Field(None, max_length=MAX_TEXT)
    """summarize: the focus; inject: the note."""
    ts: float = Field(default_factory=time.time)


def control_dir(folder: DebateFolder) -> Path:
    return folder.path / CONTROL_DIR


def send(folder: DebateFolder, command: ControlCommand) -> None:
    """Hand a command to the process running the debate; InputError when none runs it."""
    if not writer_alive(folder):
        raise InputError(f"debate {folder.id} is not running in any process: nothing to {command.action} "
                         f"(continue it with `moot resume {folder.id}`)")
    inbox = control_dir(folder)
    try:
        inbox.mkdir(exist_ok=True)
        if inbox.is_symlink() or not inbox.is_dir():
            raise InputError(f"{inbox} is not a folder moot made; refusing to write there")
        tmp = inbox / f".{command.id}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(command.model_dump_json())
        os.replace(tmp, inbox / f"{command.ts:017.6f}-{command.id}.json")
    except OSError as exc:
        raise InputError(f"cannot send the command to debate {folder.id}: {exc.strerror or exc}") from None


Handler = Callable[[ControlCommand], None]


class Inbox:
    """In the process that runs the debate: applies the commands others send, in order."""

    POLL_S = 0.1

    def __init__(self, folder: DebateFolder, apply: Handler, on_error: Callable[[ControlCommand, str], None]) -> None:
        self.folder = folder
        self.apply = apply
        self.on_error = on_error

    def drain(self) -> int:
        """Apply every command waiting now; the number applied."""
        inbox = control_dir(self.folder)
        try:
            names = sorted(p.name for p in inbox.iterdir() if p.name.endswith(".json"))
        except OSError:
            return 0
        done = 0
        for name in names:
            path = inbox / name
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as fh:
                    raw = fh.read(MAX_TEXT * 4)
                command = ControlCommand.model_validate_json(raw)
            except (OSError, ValidationError, ValueError):
                command = None
            finally:
                try:
                    path.unlink()
                except OSError:
                    pass
            if command is None:
                continue
            try:
                self.apply(command)
            except (KeyError, ValueError) as exc:
                self.on_error(command, str(exc))
            done += 1
        return done

    async def run(self) -> None:
        while True:
            self.drain()
            await asyncio.sleep(self.POLL_S)


def describe_command(command: ControlCommand) -> str:
    what = {"summarize": f"summarize {command.agent or 'all'}" + (f" ({command.text})" if command.text else ""),
            "inject": "inject a note"}.get(command.action, command.action)
    return what


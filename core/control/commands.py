"""Steering a debate that another process runs, through the debate's folder.

`moot ctl ID pause` and an attached `moot watch ID` call `send`, which writes one small JSON
file per command into `<folder>/control/` (a 0600 file in a 0700 folder, written under a temp
name and then renamed: never half a command). The process that runs the debate — the one
holding the folder's lock — polls that folder (`Inbox`), claims each file by renaming it, and
hands the command to the same door its own TUI uses (`pause`, `resume`, `stop`,
`request_summary`, `inject`), which records it as an event carrying the command's id. The
sender reads the event log to learn when its command took effect (`effect_of`).

Nothing put in that folder can crash the debate or reach outside it. The writer never follows
a symbolic link (the folder is opened with O_NOFOLLOW and every file relative to it), never
blocks on a FIFO, reads at most MAX_FILE_BYTES, and takes only regular files of its own user.
Every file or command it does not apply is a warning event, carrying the command's id when
there is one, so the sender learns of a refusal as it learns of a success:
- a file that is not a command (malformed, too large, a link, a FIFO, another user's);
- a command stamped before the writer took the debate's lock: it was left for a process that
  died before taking it, so a resumed debate drops it rather than replaying last week's `stop`;
- a command the debate cannot take (an unknown agent, `resume` when not paused).
With no live writer there is nobody to obey: `send` refuses (InputError, exit 2). A sender that
stops waiting takes its command back (`withdraw`); claim and withdrawal are both one rename of
the same file, so a command is applied exactly once or not at all.
"""

from __future__ import annotations

import asyncio
import errno
import os
import secrets
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from ..errors import InputError
from ..events import ControlChanged, DebateCompleted, Event, Warning_, is_terminal, parse_event
from ..models.base import Model
from ..safety.sanitize import one_line_safe
from ..storage.folder import DebateFolder, writer_alive
from ..storage.state_dir import default_state_dir

CONTROL_DIR = "control"
Action = Literal["pause", "resume", "stop", "summarize", "inject", "say", "pin", "unpin"]
MAX_TEXT = 4000
"""Characters of a note or a focus a command may carry."""
MAX_SAY = 10_000
"""Characters of a person's answer (`say`); the turn's own limit (its tokens) is checked when it
is applied."""
MAX_FILE_BYTES = 64 * 1024
"""A command file larger than this is not read (the largest real one is about 25 KB: 4,000
characters that JSON escapes as \\uXXXX)."""
MAX_PER_POLL = 100
"""Files looked at per poll: a flood of files delays the debate's next step by one bounded poll."""
_CLAIMED = ".claimed-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class ControlCommand(Model):
    id: str = Field(default_factory=lambda: f"cmd-{secrets.token_hex(4)}", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    action: Action
    agent: str | None = Field(None, max_length=200)
    """summarize: the agent (id, name or role; `all`); say: the person's seat (None: the only one)."""
    text: str | None = Field(None, max_length=MAX_SAY)
    """summarize: the focus; inject: the note; say: the person's answer; pin, unpin: the item."""
    step: int | None = Field(None, ge=1, le=10**9)
    """summarize: fold everything before this turn (or round), keep the rest verbatim (`--from`)."""
    ts: float = Field(default_factory=time.time, ge=0, allow_inf_nan=False)
    """When it was sent (set by `send`, after it saw a live writer)."""

    @model_validator(mode="after")
    def _text_fits(self) -> ControlCommand:
        if self.action != "say" and self.text is not None and len(self.text) > MAX_TEXT:
            raise ValueError(f"{self.action}: at most {MAX_TEXT} characters")
        return self

    @property
    def filename(self) -> str:
        return f"{self.ts:017.6f}-{self.id}.json"  # sorts in the order sent


def control_dir(folder: DebateFolder) -> Path:
    return folder.path / CONTROL_DIR


def _open_inbox(folder: DebateFolder, *, create: bool) -> int:
    """A descriptor of the control folder, never through a link, only when it is this user's own;
    OSError otherwise (with a reason a person can read)."""
    path = control_dir(folder)
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):  # a file or a symbolic link where the folder should be
            raise OSError(exc.errno, "it is not a folder (a link or a file is there)") from None
        raise
    if os.fstat(fd).st_uid != os.geteuid():
        os.close(fd)
        raise OSError(errno.EPERM, "it belongs to another user")
    return fd


def send(folder: DebateFolder, command: ControlCommand) -> None:
    """Hand a command to the process running the debate; InputError when none runs it or the
    command cannot be written. `command.ts` is set here, once a live writer is seen."""
    if not writer_alive(folder):
        raise InputError(f"debate {folder.id} is not running in any process: nothing to {command.action}"
                         f"{_how_to_continue(folder)}")
    # Stamped after the check: a writer that took the lock before it will not take it for stale.
    command.ts = time.time()
    data = command.model_dump_json().encode("utf-8")
    if len(data) > MAX_FILE_BYTES:  # pragma: no cover - the model's limits keep it far below
        raise InputError(f"the command is too large ({len(data)} bytes)")
    tmp = f".{command.id}.tmp"
    try:
        dfd = _open_inbox(folder, create=True)
    except OSError as exc:
        raise InputError(f"cannot send the command to debate {folder.id}: {control_dir(folder)}: "
                         f"{exc.strerror or exc}") from None
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=dfd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, command.filename, src_dir_fd=dfd, dst_dir_fd=dfd)
    except OSError as exc:
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        raise InputError(f"cannot send the command to debate {folder.id}: {exc.strerror or exc}") from None
    finally:
        os.close(dfd)


def _how_to_continue(folder: DebateFolder) -> str:
    """`(continue it with …)` unless the log's last event says the debate completed."""
    try:
        with open(folder.events_path, "rb") as fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - MAX_FILE_BYTES))
            last = fh.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
        event = parse_event(last)
        if isinstance(event, DebateCompleted) and event.status == "completed":
            return " (it has completed)"
    except (OSError, ValueError):
        pass
    root = folder.path.parent
    flag = "" if root.resolve() == default_state_dir().resolve() else f" --state-dir {root}"
    return f" (continue it with `moot resume {folder.id}{flag}`)"


def withdraw(folder: DebateFolder, command: ControlCommand) -> bool:
    """Take back a command the debate has not claimed yet: True when it is gone for good, False
    when the debate claimed it first (its outcome will be in the event log)."""
    try:
        dfd = _open_inbox(folder, create=False)
    except OSError:
        return False
    try:
        gone = f".withdrawn-{command.id}"
        try:
            os.rename(command.filename, gone, src_dir_fd=dfd, dst_dir_fd=dfd)
        except OSError:
            return False
        try:
            os.unlink(gone, dir_fd=dfd)
        except OSError:
            pass
        return True
    finally:
        os.close(dfd)


Effect = Literal["taken", "in_effect", "refused"]


def effect_of(command: ControlCommand, event: Event, *, taken: bool) -> Effect | None:
    """What `event` (read after sending `command`) says of it: `taken` — recorded, acting at the
    next call boundary (pause: until no call is in flight; stop: until the debate ends);
    `in_effect`; `refused` (a warning carrying its id); None — nothing about it."""
    if getattr(event, "command_id", None) == command.id:
        if isinstance(event, Warning_):
            return "refused"
        if isinstance(event, ControlChanged) and event.action in ("pause", "stop") and not event.effective:
            return "taken"
        return "in_effect"
    if taken and command.action == "pause" and isinstance(event, ControlChanged) and event.effective:
        return "in_effect"
    if taken and command.action == "stop" and is_terminal(event):
        return "in_effect"
    return None


Apply = Callable[[ControlCommand], None]
Warn = Callable[[str, str | None], None]
"""(message, command id or None): records a warning event."""


class Inbox:
    """In the process that runs the debate: applies the commands others send, in the order sent.

    `since` is when this process took the debate's lock: a command stamped earlier was sent to a
    process that is gone, and is dropped with a warning. `ready` says whether the debate takes
    commands now (between its start/resume event and its end): until then files wait, so no
    event is logged before the debate's first or after its last."""

    POLL_S = 0.1

    def __init__(self, folder: DebateFolder, apply: Apply, warn: Warn, *, since: float,
                 ready: Callable[[], bool] = lambda: True) -> None:
        self.folder = folder
        self.apply = apply
        self.warn = warn
        self.since = since
        self.ready = ready
        self._noted: set[str] = set()
        """Problems already reported (a folder that cannot be read, a file that cannot be removed):
        said once, not every poll."""

    def drain(self) -> int:
        """Apply every command waiting now (up to MAX_PER_POLL files); the number applied."""
        if not self.ready():
            return 0
        try:
            dfd = _open_inbox(self.folder, create=False)
        except FileNotFoundError:
            return 0  # nobody has sent a command yet
        except OSError as exc:
            self._once("dir", f"commands from other processes are not read: {control_dir(self.folder)}: "
                              f"{exc.strerror or exc}")
            return 0
        self._noted.discard("dir")
        junk: list[str] = []
        done = 0
        try:
            names = sorted(n for n in os.listdir(dfd) if n.endswith(".json") and not n.startswith("."))
            for name in names[:MAX_PER_POLL]:
                if name in self._noted:
                    continue
                raw = self._claim(dfd, name, junk)
                if raw is not None:
                    done += self._take(name, raw, junk)
        finally:
            os.close(dfd)
        if junk:
            shown = "; ".join(junk[:5]) + (f"; and {len(junk) - 5} more" if len(junk) > 5 else "")
            self.warn(f"ignored {len(junk)} file{'s' if len(junk) > 1 else ''} in {CONTROL_DIR}/ that "
                      f"{'are not commands' if len(junk) > 1 else 'is not a command'}: {shown}", None)
        return done

    def _claim(self, dfd: int, name: str, junk: list[str]) -> bytes | None:
        """The bytes of file `name` once this process owns it (renamed away, so its sender can no
        longer withdraw it and no poll sees it twice); None when it is gone or is not a command."""
        label = one_line_safe(name, 80)
        try:
            info = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._reject(dfd, name, f"{label} ({exc.strerror})", junk)
            return None
        if not stat.S_ISREG(info.st_mode):
            kind = ("a symbolic link" if stat.S_ISLNK(info.st_mode) else "a folder" if stat.S_ISDIR(info.st_mode)
                    else "a FIFO" if stat.S_ISFIFO(info.st_mode) else "not a regular file")
            self._reject(dfd, name, f"{label} ({kind}; not followed or opened)", junk)
            return None
        claimed = f"{_CLAIMED}{secrets.token_hex(8)}"
        try:
            os.rename(name, claimed, src_dir_fd=dfd, dst_dir_fd=dfd)
        except FileNotFoundError:
            return None  # withdrawn by its sender a moment ago
        except OSError as exc:
            self._reject(dfd, name, f"{label} ({exc.strerror})", junk)
            return None
        try:
            fd = os.open(claimed, _FILE_FLAGS, dir_fd=dfd)
            try:
                info = os.fstat(fd)  # what was opened, not what was named: swapped files are caught here
                if not stat.S_ISREG(info.st_mode):
                    why = "not a regular file"
                elif info.st_uid != os.geteuid():
                    why = "written by another user"
                elif info.st_size > MAX_FILE_BYTES:
                    why = f"{info.st_size} bytes; the limit is {MAX_FILE_BYTES}"
                else:
                    why = ""
                raw = b"" if why else os.read(fd, MAX_FILE_BYTES + 1)
            finally:
                os.close(fd)
        except OSError as exc:
            why = exc.strerror or str(exc)
        try:
            os.unlink(claimed, dir_fd=dfd)
        except OSError:
            pass
        if why or len(raw) > MAX_FILE_BYTES:
            junk.append(f"{label} ({why or 'it grew past the limit'})")
            return None
        return raw

    def _reject(self, dfd: int, name: str, what: str, junk: list[str]) -> None:
        junk.append(what)
        try:
            os.unlink(name, dir_fd=dfd)  # removes a link itself, never its target
        except OSError:
            self._noted.add(name)  # a folder, say: reported once, then left alone

    def _take(self, name: str, raw: bytes, junk: list[str]) -> int:
        try:
            command = ControlCommand.model_validate_json(raw)
        except (ValidationError, ValueError):
            junk.append(f"{one_line_safe(name, 80)} (not a moot command)")
            return 0
        what = f"command {command.id} ({describe_command(command)})"
        if command.ts < self.since:
            sent = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(command.ts))
            self.warn(f"{what} was sent at {sent}, before this process took the debate; dropped, not replayed",
                      command.id)
            return 0
        try:
            self.apply(command)
        except Exception as exc:  # noqa: BLE001 - a command that fails is a warning, never the debate's end
            why = str(exc) if isinstance(exc, (KeyError, ValueError)) else f"{type(exc).__name__}: {exc}"
            self.warn(f"{what} from another process refused: {one_line_safe(why, 300)}", command.id)
            return 0
        return 1

    def sweep(self) -> None:
        """Remove files a writer that died left claimed (they were being applied when it died)."""
        try:
            dfd = _open_inbox(self.folder, create=False)
        except OSError:
            return  # none yet, or drain() says why
        try:
            for name in os.listdir(dfd):
                if name.startswith(_CLAIMED):
                    try:
                        os.unlink(name, dir_fd=dfd)
                    except OSError:
                        pass
        finally:
            os.close(dfd)

    def _once(self, key: str, message: str) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self.warn(message, None)

    async def run(self) -> None:
        self.sweep()
        while True:
            try:
                self.drain()
            except OSError as exc:  # the folder vanished mid-listing, say: try again next poll
                self._once("poll", f"commands from other processes could not be read: {exc.strerror or exc}")
            await asyncio.sleep(self.POLL_S)


def describe_command(command: ControlCommand) -> str:
    if command.action == "summarize":
        focus = f" ({one_line_safe(command.text, 80)})" if command.text else ""
        since = f" from {command.step}" if command.step else ""
        return f"summarize {one_line_safe(command.agent or 'all', 40)}{since}{focus}"
    if command.action in ("pin", "unpin"):
        return f"{command.action} {one_line_safe(command.text or '', 80)}"
    if command.action == "say":
        return f"say as {one_line_safe(command.agent, 40)}" if command.agent else "say"
    return "inject a note" if command.action == "inject" else command.action

"""The folder that holds every debate: new ids, opening one by id or prefix, starting ones, listing."""

from __future__ import annotations

import os
import secrets
import shutil
import time
from pathlib import Path

from ..errors import StoreError
from ..events import DebateStarted
from ..models.provider_kinds import any_scripted
from ..models.state import DebateState
from ..safety.sanitize import one_line_safe
from .files import require_real_folder
from .folder import EVENTS_FILE, PENDING_SUFFIX, DebateFolder, writer_alive
from .log import read_events

STALE_PENDING_S = 60.0
"""A temporary folder without a first event is removed once its lock is free and it is this old
(between creating the folder and taking its lock a starting process holds no lock)."""


def new_debate_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def default_state_dir() -> Path:
    return Path(os.environ.get("MOOT_STATE_DIR") or "debates")


class StateDir:
    """The folder that holds every debate."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_state_dir()

    def create(self, debate_id: str | None = None) -> DebateFolder:
        """A new debate's folder, pending: under its temporary name until its first event is on
        disk (`DebateFolder.publish`, done by the event log writer)."""
        debate_id = debate_id or new_debate_id()
        if not debate_id or "/" in debate_id or debate_id.startswith("."):
            raise StoreError(f"invalid debate id {debate_id!r}")
        final = self.root / debate_id
        path = self._pending_path(debate_id)
        if final.exists() or final.is_symlink():
            raise StoreError(f"debate {debate_id} already exists in {self.root}")
        if path.is_dir() and not path.is_symlink() and not (path / EVENTS_FILE).exists() \
                and not writer_alive(DebateFolder(path, pending=True)):
            # A run killed before its first event reached the disk left its pending folder: nothing
            # was recorded there and nobody holds it, so the id is free again (a rerun makes it anew).
            shutil.rmtree(path, ignore_errors=True)
        try:
            path.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise StoreError(f"debate {debate_id} already exists in {self.root}") from None
        except PermissionError:
            raise StoreError(f"cannot write to state dir {self.root}: permission denied") from None
        except OSError as exc:
            raise StoreError(f"cannot create {path}: {exc.strerror}") from None
        if not os.access(path, os.W_OK):
            shutil.rmtree(path, ignore_errors=True)
            raise StoreError(f"cannot write to state dir {self.root}: permission denied")
        return DebateFolder(path, pending=True)

    def _pending_path(self, debate_id: str) -> Path:
        return self.root / f".{debate_id}{PENDING_SUFFIX}"

    def open(self, debate_id: str) -> DebateFolder:
        if not debate_id or "/" in debate_id or debate_id.startswith("."):
            raise StoreError(f"invalid debate id {debate_id!r}")
        path = self.root / debate_id
        pending = self._pending_path(debate_id)
        if not path.is_dir() and pending.is_dir():
            require_real_folder(pending)
        if not path.is_dir() and pending.is_dir() and self.settle(pending) is None:
            if writer_alive(DebateFolder(pending, pending=True)):
                raise StoreError(f"debate {debate_id} is being written by another moot process (it is starting)")
            raise StoreError(f"debate {debate_id} stopped before its first event was saved: there is nothing to "
                             "resume")
        if not path.is_dir():
            matches = [p for p in self.debates() if p.id.startswith(debate_id)]
            if len(matches) == 1:
                require_real_folder(matches[0].path)
                return matches[0]
            hint = " (ambiguous prefix)" if matches else ""
            raise StoreError(f"no debate {debate_id!r} in {self.root}{hint}; try `moot list`")
        require_real_folder(path)  # a linked folder is refused before anything reads or writes through it
        return DebateFolder(path)

    def debates(self) -> list[DebateFolder]:
        """The debates in the state dir (temporary folders of debates being started are not)."""
        if not self.root.is_dir():
            return []
        found = [DebateFolder(p) for p in self.root.iterdir()
                 if not p.name.startswith(".") and p.is_dir() and (p / EVENTS_FILE).exists()]
        return sorted(found, key=lambda f: f.id)

    def pending(self) -> list[Path]:
        """Temporary folders of debates being started (or whose start was cut short)."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir()
                      if p.name.startswith(".") and p.name.endswith(PENDING_SUFFIX) and p.is_dir())

    def clean_pending(self) -> None:
        """Settle every temporary folder whose process is gone (see `settle`)."""
        for path in self.pending():
            self.settle(path)

    def settle(self, path: Path) -> DebateFolder | None:
        """A temporary folder whose writer is gone: published when its first event reached the
        disk (a resumable debate), removed when it is stale and holds no event (nothing was
        recorded). None while a live process holds its lock (or it is too young to judge)."""
        folder = DebateFolder(path, pending=True)
        try:
            young = time.time() - os.lstat(path).st_mtime <= STALE_PENDING_S
        except OSError:
            return None
        if young and not folder.events_path.exists():
            return None  # a process may be between creating it and taking its lock
        lock = folder.lock()
        try:
            lock.acquire()
        except StoreError:
            return None  # being started right now (or unreadable: leave it alone)
        try:
            try:
                first = next(read_events(folder.events_path), None)
            except StoreError:
                first = None
            if isinstance(first, DebateStarted):
                folder.publish()
                return folder
            if not young:
                folder.discard()
            return None
        except (OSError, StoreError):
            return None
        finally:
            lock.release()


def shown_status(folder: DebateFolder, status: str) -> str:
    """The status `moot list` and `moot show` give: "running" only while a process runs the debate;
    one whose process was killed mid-way is "unfinished" (resumable), though its log says running."""
    return "unfinished" if status == "running" and not writer_alive(folder) else status


def summarize_folder(folder: DebateFolder) -> dict[str, object]:
    """One row of `moot list`, cheap enough for hundreds of debates: read the snapshot
    when present, else fold the log."""
    try:
        state = folder.load()
    except StoreError as exc:
        return {"id": folder.id, "status": "unreadable", "problem": str(exc), "rounds": 0,
                "created_at": folder.modified_at(), "providers": []}
    people = [*state.agents, *([state.judge] if state.judge else [])]
    providers = sorted({a.provider for a in people})
    return {
        "id": folder.id,
        "status": shown_status(folder, state.status),
        # The first line, without a markdown heading's marks (as the TUI header shows it).
        "problem": one_line_safe((state.problem.strip().splitlines() or [""])[0].lstrip("#").strip(), 80),
        "rounds": f"{state.round_count}/{state.total_rounds}",
        "steps": "turns" if state.protocol == "conversation" else "rounds",
        "protocol": state.protocol,
        "created": time.strftime("%Y-%m-%d %H:%M", time.localtime(state.made_at)),
        "created_at": state.made_at,
        "providers": providers,
        "demo": any_scripted(providers),
        "forked_from": fork_label(state),
    }


def fork_label(state: DebateState) -> str:
    """`⑂ <parent>@round 2` for a fork (`moot fork`), else empty; terminal-safe."""
    origin = state.forked_from
    if origin is None:
        return ""
    return f"⑂ {one_line_safe(origin.debate, 80)}@{one_line_safe(origin.at.replace(':', ' '), 80)}"


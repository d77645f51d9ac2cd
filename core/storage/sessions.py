"""The saved debates as rows (the TUI's sessions screen), quick to list however many there are.

Summarizing a debate means loading its state (snapshot plus the log after it): about 2 ms for a
small demo debate, far more for a long one. The rows are kept in a small cache in the state dir,
`.sessions.json`, each with the size and modification time of the files it was read from, so a
debate is loaded again only when its files changed (a running debate, a resumed one). The cache
is only a shortcut: a missing, corrupt, foreign or unwritable one is rebuilt or skipped, never an
error, and what it says is shown through the same escaping as anything else read from disk.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import Field, ValidationError

from ..errors import StoreError
from ..models.base import Model
from ..models.provider_kinds import any_scripted
from ..safety.sanitize import one_line_safe
from .files import read_regular, write_atomic
from .folder import EVENTS_FILE, STATE_FILE, DebateFolder
from .state_dir import StateDir, shown_status

CACHE_FILE = ".sessions.json"
CACHE_VERSION = 1
MAX_CACHE_BYTES = 64 << 20
"""A cache larger than this is not read (about 200,000 rows): it is rebuilt instead."""


class SessionRow(Model):
    """One saved debate, as the sessions screen lists it."""

    id: str
    created_at: float = 0.0
    problem: str = ""
    """The problem's first line, without a heading's marks."""
    protocol: str = ""
    status: str = "unreadable"
    """As the log says it; `shown` asks whether a process still runs a `running` one."""
    done: int = 0
    """Rounds (or turns) started."""
    total: int = 0
    unit: Literal["rounds", "turns"] = "rounds"
    tokens: int = 0
    cost_usd: float = 0.0
    providers: list[str] = Field(default_factory=list)
    error: str = ""
    """Why the debate could not be read (status `unreadable`)."""
    forked_from: str = ""
    """A fork's parent debate (`moot fork`), else empty."""
    fork_at: str = ""
    """Where it was forked, as `round 2`."""

    @property
    def demo(self) -> bool:
        return any_scripted(self.providers)

    def shown(self, folder: DebateFolder) -> SessionRow:
        """The row with the status `moot list` gives (a killed debate is `unfinished`, not `running`)."""
        status = shown_status(folder, self.status)
        return self if status == self.status else self.model_copy(update={"status": status})


Signature = tuple[int, int, int, int]
"""(log size, log mtime ns, snapshot size, snapshot mtime ns): a row is valid while these hold."""


class _Entry(Model):
    sig: Signature
    row: SessionRow


class _Cache(Model):
    version: int
    rows: dict[str, _Entry] = Field(default_factory=dict)


def signature(folder: DebateFolder) -> Signature | None:
    """What the row of `folder` depends on; None when its log cannot be looked at."""
    try:
        log = os.lstat(folder.path / EVENTS_FILE)
    except OSError:
        return None
    try:
        snap = os.lstat(folder.path / STATE_FILE)
        snapshot = (snap.st_size, snap.st_mtime_ns)
    except OSError:
        snapshot = (-1, -1)
    if not stat.S_ISREG(log.st_mode):
        return None
    return (log.st_size, log.st_mtime_ns, *snapshot)


def read_row(folder: DebateFolder) -> SessionRow:
    """Load the debate and summarize it (an unreadable one is a row saying why)."""
    try:
        state = folder.load()
    except StoreError as exc:
        return SessionRow(id=folder.id, created_at=folder.modified_at(), error=one_line_safe(str(exc), 300))
    people = [*state.agents, *([state.judge] if state.judge else [])]
    first = (state.problem.strip().splitlines() or [""])[0].lstrip("#").strip()
    return SessionRow(
        id=folder.id, created_at=state.made_at, problem=one_line_safe(first, 200), protocol=state.protocol,
        status=state.status, done=state.round_count, total=state.total_rounds,
        unit="turns" if state.protocol == "conversation" else "rounds",
        tokens=state.totals.total_tokens, cost_usd=state.totals.cost_usd,
        providers=sorted({p.provider for p in people}),
        forked_from=one_line_safe(state.forked_from.debate, 80) if state.forked_from else "",
        fork_at=one_line_safe(state.forked_from.at.replace(":", " "), 80) if state.forked_from else "",
    )


class SessionList:
    """Rows for every debate of a state dir, from the cache where the files did not change."""

    def __init__(self, state_dir: StateDir) -> None:
        self.state_dir = state_dir
        self.path = state_dir.root / CACHE_FILE
        self.loaded = 0
        """Debates loaded (not taken from the cache) by the last `rows` call."""

    def _read_cache(self) -> dict[str, _Entry]:
        try:
            if os.lstat(self.path).st_size > MAX_CACHE_BYTES:
                return {}
            cache = _Cache.model_validate_json(read_regular(self.path))
        except (OSError, StoreError, ValidationError, ValueError, RecursionError):
            return {}
        return cache.rows if cache.version == CACHE_VERSION else {}

    def _write_cache(self, rows: dict[str, _Entry]) -> None:
        try:
            write_atomic(self.path, _Cache(version=CACHE_VERSION, rows=rows).model_dump_json().encode())
        except (OSError, StoreError):
            pass  # a state dir we may read but not write (someone else's debates): no cache

    def rows(self, folders: Iterable[DebateFolder] | None = None,
             progress: Callable[[int, int], None] | None = None) -> list[tuple[DebateFolder, SessionRow]]:
        """Every debate with its row (status as shown), in the state dir's order; `progress(done,
        total)` is told after each debate that had to be loaded."""
        folders = list(self.state_dir.debates() if folders is None else folders)
        cached = self._read_cache()
        fresh: dict[str, _Entry] = {}
        out: list[tuple[DebateFolder, SessionRow]] = []
        self.loaded = 0
        for folder in folders:
            sig = signature(folder)
            entry = cached.get(folder.id)
            if sig is not None and entry is not None and entry.sig == sig and entry.row.id == folder.id:
                row = entry.row
            else:
                row = read_row(folder)
                self.loaded += 1
                if progress is not None:
                    progress(len(out) + 1, len(folders))
            if sig is not None and row.status != "unreadable":
                fresh[folder.id] = _Entry(sig=sig, row=row)
            out.append((folder, row.shown(folder)))
        if fresh.keys() != cached.keys() or self.loaded:
            self._write_cache(fresh)
        return out

"""Where, in a debate's event log, each line a turn's views may read sits: so that `moot context
--turn` reads those lines only, not the whole log (a 100,000-turn log is 300 MB).

One row per line that `turn_reader` or `log_index.gather` would look at: a call started or
continued (by turn), a contribution (by id, a message also by turn), a summary (by id), a pin
change. A row is the line's byte offset and length; the consumers parse the lines it names and
keep the same ones as a pass over the whole log would. The rows come from the same cheap look at
a line's bytes as those passes take (its event type's marker, then the id or turn where moot
writes it; a line not laid out that way is parsed, or filed under every turn it names), so the
lines named are always a superset of the lines such a pass keeps.

It is a cache beside the log (`lines.sqlite`), built from the log by the first reader that needs
it and extended from where it stops by the next ones; the log's writer knows nothing of it. Why
its own SQLite file rather than the search index or the writer: the search index is fed events,
not lines (it never knows an offset), lags the log by design and has its own rebuild; making the
log's writer keep offsets would put a second file on the hot path of every debate for the sake of
one command, and a reader-built index is still needed for logs written before it or copied. SQLite
gives lookups by id and by turn without loading the index, and a transaction that adds rows and
moves the covered offset together, so a kill mid-build leaves the index as it was.

Never trusted blindly: it records how many bytes of the log it covers (always up to a line's end)
and the log's first and last covered bytes. A log that grew (a resume, a running debate) is
indexed from there on; a torn last line is not covered until it is whole. An index whose log is
shorter than that, or whose bytes there differ (another log: a fork writes its own, with its own
first line, and starts without one), is emptied and built again, and so is one SQLite cannot read
or that is not laid out as this code lays it out. One that cannot be written (a read-only folder,
another reader building it) or read is not used: the log is then read line by line, as before.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from ..events import CallContinued, ContributionAdded, SummaryAdded
from ..storage.files import open_regular
from .log_index import CONTRIBUTION_RE, SUMMARY_RE, parse_line

if TYPE_CHECKING:
    import sqlite3

    from .log_index import Needs

INDEX_FILE = "lines.sqlite"
SCHEMA = 1
"""`PRAGMA user_version` of an index this code reads; any other is built again."""
STARTED, CONTINUED, MESSAGE, CONTRIBUTION, SUMMARY, PIN = range(1, 7)
FINGERPRINT = 256
"""Bytes of the log kept from its start and from the end of what the index covers."""
CHUNK = 1 << 20
"""Bytes of the log read at a time while indexing."""
BATCH = 20_000
"""Rows inserted at a time while indexing (memory stays flat however long the log)."""
PARAMS = 500
"""Values bound in one query (under SQLite's oldest limit of 999)."""
_MARK = re.compile(rb'"type":"(call_started|call_continued|contribution_added|summary_added|pin_changed)"')
"""The event types whose lines a view may read, found in a whole chunk of the log at once (the
lines of the others are never looked at one by one)."""
_STARTED = re.compile(rb'"type":"call_started","view":\{"call_id":"(?:[^"\\]|\\.)*","agent_id":"(?:[^"\\]|\\.)*",'
                      rb'"round":(\d+),"phase":"')
_CALL_ROUND = re.compile(rb'"round":(\d+),"phase":"')
_CONTINUED = re.compile(rb'"type":"call_continued","call_id":"(?:[^"\\]|\\.)*","agent_id":"(?:[^"\\]|\\.)*",'
                        rb'"round":(-?\d+),')

_LEAVE_BE = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_READONLY", "SQLITE_FULL", "SQLITE_CANTOPEN", "SQLITE_PERM",
             "SQLITE_IOERR", "SQLITE_NOMEM", "SQLITE_INTERRUPT")
"""SQLite's errors that say nothing about the file's contents: the index is then not used, and
never deleted (another reader may be building it)."""


class IndexLost(Exception):
    """The index could not be read after it was opened: read the log line by line instead."""


Row = tuple[int, int, bytes | None, int, int]
"""(kind, turn, id, offset, length)."""


def rows_of(mark: bytes, data: bytes, start: int, end: int, offset: int) -> list[Row]:
    """The rows of the line `data[start:end]` (at `offset` in the log, its newline at `end`) for
    one event type it names (`mark`)."""
    n = end + 1 - start
    if mark == b"call_started":
        m = _STARTED.search(data, start, end)  # the view's own turn, where moot writes it
        rounds = {int(m.group(1))} if m else {int(x) for x in _CALL_ROUND.findall(data, start, end)}
        return [(STARTED, r, None, offset, n) for r in rounds]
    if mark == b"call_continued":
        m = _CONTINUED.search(data, start, end)
        if m is not None:
            return [(CONTINUED, int(m.group(1)), None, offset, n)]
        if isinstance(event := parse_line(data[start:end]), CallContinued):
            return [(CONTINUED, event.round, None, offset, n)]
    elif mark == b"contribution_added":
        m = CONTRIBUTION_RE.search(data, start, end)
        if m is not None:
            return [(MESSAGE if m.group(2) == b"message" else CONTRIBUTION, int(m.group(3)), m.group(1), offset, n)]
        if isinstance(event := parse_line(data[start:end]), ContributionAdded):
            c = event.contribution
            return [(MESSAGE if c.type == "message" else CONTRIBUTION, c.round, c.id.encode(), offset, n)]
    elif mark == b"summary_added":
        m = SUMMARY_RE.search(data, start, end)
        if m is not None:
            return [(SUMMARY, 0, m.group(1), offset, n)]
        if isinstance(event := parse_line(data[start:end]), SummaryAdded):
            return [(SUMMARY, 0, event.summary.id.encode(), offset, n)]
    elif mark == b"pin_changed":
        return [(PIN, 0, None, offset, n)]
    return []


class LineIndex:
    """The offsets of the lines a turn's views may read; `open` builds or extends it first."""

    def __init__(self, db: sqlite3.Connection, events_fd: int) -> None:
        self._db = db
        self._fd = events_fd

    @classmethod
    def open(cls, folder_path: Path, events_path: Path) -> LineIndex | None:
        """The index of `events_path`, covering every whole line it holds now; None when it cannot
        be had (the caller reads the log line by line)."""
        import sqlite3

        path = folder_path / INDEX_FILE
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            mode = None
        except OSError:
            return None
        if mode is not None and not stat.S_ISREG(mode):
            return None  # a link or anything else there is left alone, never written through
        try:
            fd = open_regular(events_path)
        except Exception:
            return None
        db: sqlite3.Connection | None = None
        try:
            try:
                db = cls._connect(path)
                _catch_up(db, fd)
            except sqlite3.DatabaseError as exc:
                if db is not None:
                    db.close()
                    db = None
                if (exc.sqlite_errorname or "").startswith(_LEAVE_BE):
                    raise  # busy (another reader builds it), read-only, out of room: not a damaged file
                os.unlink(path)  # a file SQLite cannot read, or not laid out as this code lays it out
                db = cls._connect(path)
                _catch_up(db, fd)
            return cls(db, fd)
        except (sqlite3.Error, OSError, OverflowError):  # (a turn past SQLite's integers, in a log moot did not write)
            if db is not None:
                db.close()
            os.close(fd)
            return None
        except BaseException:  # interrupted mid-build: nothing left open, and the interruption goes on
            if db is not None:
                db.close()
            os.close(fd)
            raise

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        import sqlite3

        return sqlite3.connect(path, timeout=5.0, isolation_level=None)

    def _spans(self, sql: str, params: Sequence[int | bytes] = ()) -> list[tuple[int, int]]:
        import sqlite3

        try:
            spans = [(int(off), int(n)) for off, n in self._db.execute(sql, params).fetchall()]
        except (sqlite3.Error, ValueError, TypeError):
            raise IndexLost from None
        if any(off < 0 or n < 1 for off, n in spans):
            raise IndexLost
        return spans

    def close(self) -> None:
        self._db.close()
        os.close(self._fd)

    def __enter__(self) -> LineIndex:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def call_lines(self, turn: int) -> Iterator[bytes]:
        """Lines that may start or continue a call the fold files under `turn` (a turn-0 call under turn 1)."""
        where = "round <= 1" if turn == 1 else "round = ?"
        params = () if turn == 1 else (turn,)
        return self._read(self._spans(f"SELECT off, len FROM lines WHERE kind IN ({STARTED}, {CONTINUED}) AND {where}",
                                      params))

    def needed_lines(self, needs: Needs) -> Iterator[bytes]:
        """Lines that may hold what `needs` names: contributions by id, the messages of its turns,
        its summaries and, when it names pins, every pin change."""
        spans: list[tuple[int, int]] = []
        q = self._spans
        for part in _chunks(sorted(i.encode() for i in needs.ids)):
            spans += q(f"SELECT off, len FROM lines WHERE key IN ({_marks(part)}) AND kind IN ({MESSAGE}, "
                       f"{CONTRIBUTION})", part)
        for turns in _chunks(sorted(needs.turns)):
            spans += q(f"SELECT off, len FROM lines WHERE kind = {MESSAGE} AND round IN ({_marks(turns)})", turns)
        for part in _chunks(sorted(s.encode() for s in needs.summaries)):
            spans += q(f"SELECT off, len FROM lines WHERE key IN ({_marks(part)}) AND kind = {SUMMARY}", part)
        if needs.pins:
            spans += q(f"SELECT off, len FROM lines WHERE kind = {PIN}")
        return self._read(spans)

    def _read(self, spans: Iterable[tuple[int, int]]) -> Iterator[bytes]:
        """The lines at `spans`, in the log's order (the order a pass over it would meet them)."""
        for off, n in sorted(set(spans)):
            yield os.pread(self._fd, n, off)


def _catch_up(db: sqlite3.Connection, fd: int) -> None:
    """Make the index cover every whole line of the log: extended from where it stops when the
    log still holds what it covered, built again from the start otherwise."""
    size = os.fstat(fd).st_size
    start = _valid_start(db, fd, size)
    if start and _whole_end(fd, start, size) == start:
        return  # nothing new (or only the start of a line still being written)
    db.execute("BEGIN IMMEDIATE")
    try:
        start = _valid_start(db, fd, size)  # (another reader may have extended it meanwhile)
        if start == 0:
            db.execute("DROP TABLE IF EXISTS lines")
            db.execute("DROP TABLE IF EXISTS meta")
            db.execute("CREATE TABLE meta (covered INTEGER NOT NULL, head BLOB NOT NULL, tail BLOB NOT NULL)")
            db.execute("CREATE TABLE lines (kind INTEGER NOT NULL, round INTEGER NOT NULL, key BLOB, "
                       "off INTEGER NOT NULL, len INTEGER NOT NULL)")
            db.execute(f"PRAGMA user_version = {SCHEMA}")
        covered = _index_lines(db, fd, start, size)
        # (made after a first build's rows, which is quicker than keeping them sorted row by row)
        db.execute("CREATE INDEX IF NOT EXISTS by_turn ON lines (kind, round)")
        db.execute("CREATE INDEX IF NOT EXISTS by_key ON lines (key)")
        if covered > start:
            db.execute("DELETE FROM meta")
            db.execute("INSERT INTO meta VALUES (?, ?, ?)",
                       (covered, os.pread(fd, FINGERPRINT, 0), _tail(fd, covered)))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _valid_start(db: sqlite3.Connection, fd: int, size: int) -> int:
    """Where indexing goes on: the bytes the index covers when the log still holds them, else 0
    (built again from the start)."""
    if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA:
        return 0  # a new file, or one an older moot wrote
    row = db.execute("SELECT covered, head, tail FROM meta").fetchone()
    if row is None:
        return 0
    covered, head, tail = row
    if not (isinstance(covered, int) and 0 < covered <= size):
        return 0  # a shorter log than it covered: not the log it was built from
    if os.pread(fd, FINGERPRINT, 0) != head or _tail(fd, covered) != tail:
        return 0
    db.execute("SELECT kind, round, key, off, len FROM lines LIMIT 1")  # (its table is there as this code made it)
    return covered


def _tail(fd: int, covered: int) -> bytes:
    start = max(0, covered - FINGERPRINT)
    return os.pread(fd, covered - start, start)


def _whole_end(fd: int, start: int, size: int) -> int:
    """The end of the last whole line of the log between `start` and `size`."""
    pos, step = size, 512  # (a log moot wrote ends with its newline: one small read)
    while pos > start:
        at = max(start, pos - step)
        nl = os.pread(fd, pos - at, at).rfind(b"\n")
        if nl >= 0:
            return at + nl + 1
        pos, step = at, min(step * 2, CHUNK)
    return start


def _index_lines(db: sqlite3.Connection, fd: int, start: int, size: int) -> int:
    """Add the rows of the whole lines from `start` on; returns the offset after the last."""
    end = _whole_end(fd, start, size)
    rows: list[Row] = []
    base, rest = start, b""  # `rest`: the start of a line the last chunk cut, at `base`
    while base + len(rest) < end:
        at = base + len(rest)
        data = rest + os.pread(fd, min(CHUNK, end - at), at)
        whole = data.rfind(b"\n") + 1
        for m in _MARK.finditer(data, 0, whole):
            first = data.rfind(b"\n", 0, m.start()) + 1
            rows += rows_of(m.group(1), data, first, data.index(b"\n", m.end()), base + first)
        base, rest = base + whole, data[whole:]
        if len(rows) >= BATCH:
            db.executemany("INSERT INTO lines VALUES (?, ?, ?, ?, ?)", rows)
            rows = []
    db.executemany("INSERT INTO lines VALUES (?, ?, ?, ?, ?)", rows)
    return base


def _chunks(values: list[bytes] | list[int]) -> Iterator[list[bytes] | list[int]]:
    for i in range(0, len(values), PARAMS):
        yield values[i:i + PARAMS]


def _marks(values: list[bytes] | list[int]) -> str:
    return ",".join("?" * len(values))

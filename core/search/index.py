"""One full-text index per debate: SQLite FTS5 with BM25 ranking, derived from the event log.

Three tables: `docs`, the debate's own texts (below); `passages`, the reference files the
user gave it (`--ref`) cut into numbered line ranges, for the retrieval tier of views on
servers without function calling (`index_references`, `passages`); and `dropped`, each fact a
summary dropped under the id of the item it came from, which the recall tier prefers when the
debate returns to it (`dropped_postings`).

The log (`events.jsonl`) is the truth; the index (`search.sqlite` beside it) is a cache of
the texts worth finding again — contributions and messages, summaries, moderator notes —
that can always be rebuilt from the log:

- live, the debate's process adds each text as its event is emitted (`add_event`), so a view
  built right after an event can already recall it;
- on open, `catch_up` reads only the part of the log past the last event the index holds
  (found by a binary search over the log's sequence numbers), so a resume after a kill -9
  mid-write re-indexes what the log has and the index lacks, and a deleted index is rebuilt;
- the running debate's texts are written in batches, one SQLite transaction a batch (`hold`,
  `flush`): an index is never half-written, a page many events change is written once a batch,
  and since the index is derived it runs with `synchronous=OFF` (a kill or a power cut may lose
  its tail, which the next catch-up restores; a file SQLite cannot read is deleted and rebuilt).

Appending costs the same at turn 10,000 as at turn 10 (FTS5 merges its segments
incrementally). Queries come from people and from models: `match_expression` turns any text
into a safe OR of quoted terms, so FTS5's own syntax is never interpreted.

Over 400 lines: both tables (a debate's texts and its reference passages) share one SQLite
file, its schema, its rebuild from the log and its query syntax, so they are kept in one module.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..storage.files import refusal, require_real_folder
from .log_scan import events_after, last_logged_seq

if TYPE_CHECKING:
    from ..events import Event

INDEX_FILE = "search.sqlite"
SCHEMA_VERSION = "4"
"""2: each text keeps its event's sequence number, so an index ahead of a cut log is trimmed. The
`passages` table (reference files) is created when missing. 3: `doc_rows` finds a document's row
by its id (an FTS5 column marked UNINDEXED is searched by reading the whole table: 170 ms a lookup
at 100,000 texts, and recall looks up every archived item it brings back). 4: the `dropped` table
(what each summary lost). An older index is started again from the log."""
PAGE_SIZE = 1024
"""SQLite's page size for a new index (its default is 4,096)."""
WAL_PAGES = 4096
"""Pages the WAL grows to before they are copied into the index (SQLite's default is 1,000): a
page that many commits change is copied once a checkpoint, so fewer checkpoints write less."""
MAX_QUERY_TERMS = 48
"""A query is cut to its first distinct terms: a 10 KB query is still one quick lookup."""
MAX_TERM_CHARS = 64
PASSAGE_LINES = 30
"""A reference passage is at most this many lines (cut at a blank line when one is near)."""

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset(
    "a an and are as at be been but by can could did do does for from had has have he her his how i if in into is "
    "it its let may me more most my no not of on or our out over she should so some such than that the their them "
    "then there these they this those to too up us was we were what when where which while who why will with "
    "would you your".split()
)


def stop_words() -> frozenset[str]:
    """The words no query looks for on their own (unless nothing else is left)."""
    return _STOP


@dataclass(frozen=True)
class Hit:
    """One text found: where it is in the debate, how well it matched, and the words around the match."""

    doc_id: str
    """The contribution's, summary's or note's id."""
    kind: str
    """A contribution type (`proposal`, `critique`, `refinement`, `message`, `answer`, …), `summary` or `note`."""
    agent_id: str
    step: int
    """The round, or a conversation's turn."""
    score: float
    """BM25, higher is better."""
    excerpt: str
    """The passage around the best match, matched terms between `[` and `]`."""


@dataclass(frozen=True)
class Passage:
    """Lines of a reference file that matched a query."""

    path: str
    first_line: int
    last_line: int
    text: str
    score: float
    """BM25, higher is better."""


def line_ranges(text: str, size: int = PASSAGE_LINES) -> Iterator[tuple[int, int, str]]:
    """(first line, last line, text) pieces of a file, at most `size` lines each, cut at a blank
    line in the last third of a piece when there is one (so paragraphs and functions stay whole)."""
    lines = text.splitlines()
    start = 0
    while start < len(lines):
        end = min(len(lines), start + size)
        if end < len(lines):
            for cut in range(end - 1, start + (2 * size) // 3, -1):
                if not lines[cut].strip():
                    end = cut + 1
                    break
        piece = "\n".join(lines[start:end])
        if piece.strip():
            yield start + 1, end, piece
        start = end


def match_expression(text: str) -> str | None:
    """A safe FTS5 query for any text: its distinct words (stop words left out, unless nothing
    else is left), each quoted, joined by OR. None when the text has no word at all."""
    words: list[str] = []
    seen: set[str] = set()
    for w in _WORD.findall(text.lower()):
        w = w[:MAX_TERM_CHARS].replace('"', "")
        if w and w not in seen:
            seen.add(w)
            words.append(w)
    content = [w for w in words if w not in _STOP and not (len(w) == 1 and w.isalpha())] or words
    content = content[:MAX_QUERY_TERMS]
    if not content:
        return None
    return " OR ".join(f'"{w}"' for w in content)


def _texts_of(event: Event) -> Iterator[tuple[str, str, str, int, str]]:
    """(doc id, kind, agent id, step, text) for every text of an event worth finding again."""
    # The event models are imported when there is something to index, not to search (`moot search`
    # starts faster without pydantic).
    from ..events import ContributionAdded, NoteInjected, SummaryAdded

    match event:
        case ContributionAdded(contribution=c) if c.content.strip():
            yield c.id, c.type, c.agent_id, c.round, c.content
        case SummaryAdded(summary=s) if s.summary.strip():
            yield s.id, "summary", s.agent_id, s.round, s.summary
        case NoteInjected(note=n) if n.text.strip():
            yield n.id, "note", "", n.after_round, n.text
        case _:
            return


def _dropped_of(event: Event) -> Iterator[tuple[str, str, int]]:
    """(item id, fact, step) for every fact a summary dropped (the item id is "" for a fact an older
    block held, lost at a consolidation: its step is the block's first)."""
    from ..events import SummaryAdded

    if isinstance(event, SummaryAdded):
        for fact in event.summary.dropped_facts or []:
            if fact.text.strip():
                yield fact.item_id or "", fact.text, fact.turn


def open_index(folder: Path) -> SearchIndex:
    """A debate folder's index (created when missing). Like every file of a debate it is opened
    only as a regular file: a link or anything else there is a StoreError, and nothing is changed."""
    require_real_folder(folder)
    path = folder / INDEX_FILE
    for suffix in ("", "-wal", "-shm"):
        part = Path(f"{path}{suffix}")
        try:
            mode = os.lstat(part).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            raise refusal(part, "is a symbolic link")
        if not stat.S_ISREG(mode):
            raise refusal(part, "is not a regular file")
    return SearchIndex(path)


class SearchIndex:
    """A debate's index, open on its SQLite file."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        self._db = self._connect_readonly(path) if readonly else self._connect(path)

    @staticmethod
    def _connect_readonly(path: Path) -> sqlite3.Connection:
        """An index another process keeps current (a running debate's): read, never changed."""
        db = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        version = db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
        if version is None or version[0] != SCHEMA_VERSION:
            db.close()
            raise sqlite3.DatabaseError(f"index schema {version[0] if version else 'unknown'}")
        return db

    @classmethod
    def for_folder(cls, folder: Path) -> SearchIndex:
        return cls(folder / INDEX_FILE)

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        for attempt in (1, 2):
            try:
                db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
                # Small pages: each commit writes every page it changed, whole, to the WAL, and a
                # debate's commits are small (a few texts). Takes effect only on a new file.
                db.execute(f"PRAGMA page_size={PAGE_SIZE}")
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
                db.execute("PRAGMA synchronous=OFF")
                db.executescript(
                    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                    "CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5("
                    " body, doc_id UNINDEXED, kind UNINDEXED, agent_id UNINDEXED, step UNINDEXED,"
                    " seq UNINDEXED, tokenize='porter unicode61');"
                    "CREATE TABLE IF NOT EXISTS doc_rows(doc_id TEXT PRIMARY KEY, row INTEGER NOT NULL) WITHOUT ROWID;"
                    "CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5("
                    " body, path UNINDEXED, first_line UNINDEXED, last_line UNINDEXED,"
                    " tokenize='porter unicode61');"
                    "CREATE VIRTUAL TABLE IF NOT EXISTS dropped USING fts5("
                    " body, doc_id UNINDEXED, step UNINDEXED, seq UNINDEXED, tokenize='porter unicode61');"
                )
                version = db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
                if version is None:
                    db.execute("INSERT INTO meta VALUES ('version', ?)", (SCHEMA_VERSION,))
                elif version[0] != SCHEMA_VERSION:
                    raise sqlite3.DatabaseError(f"index schema {version[0]}")
                return db
            except sqlite3.DatabaseError:
                if attempt == 2:
                    raise
                # Not an index we can read (torn by a power cut, an older schema, a foreign file):
                # it is only a cache of the log, so start it again.
                for suffix in ("", "-wal", "-shm"):
                    try:
                        os.unlink(f"{path}{suffix}")
                    except FileNotFoundError:
                        pass
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.flush()
        self._db.close()

    # ------------------------------------------------------------------ writing

    @property
    def last_seq(self) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key='last_seq'").fetchone()
        return int(row[0]) if row else 0

    def add_event(self, event: Event) -> None:
        """Index one event's texts (once: an event at or before `last_seq` is skipped)."""
        self.add_events([event])

    def add_events(self, events: Iterable[Event | int], *, hold: bool = False) -> int:
        """Index events in one transaction (an int stands for a logged event with no text: only
        its sequence number counts); returns how many texts were added. Safe beside another
        process catching up the same index: what is already held is read inside the transaction.

        `hold`: leave the transaction open for more events (`flush` commits it). This connection's
        own queries see what it holds; other processes see the last commit. A page that several
        events change is then written once per flush instead of once per event."""
        batch = list(events)
        db = self._db
        held = db.in_transaction
        if not held:
            db.execute("BEGIN IMMEDIATE")
        try:
            last = newest = self.last_seq
            rows: list[tuple[str, str, str, str, int, int]] = []
            lost: list[tuple[str, str, int, int]] = []
            for event in batch:
                seq = event if isinstance(event, int) else event.seq
                if seq and seq <= last:
                    continue
                if not isinstance(event, int):
                    rows += [(text, doc_id, kind, agent, step, seq)
                             for doc_id, kind, agent, step, text in _texts_of(event)]
                    lost += [(text, doc_id, step, seq) for doc_id, text, step in _dropped_of(event)]
                newest = max(newest, seq)
            if newest == last and not rows and not lost:
                if not held and not hold:
                    db.execute("ROLLBACK")
                return 0
            top = db.execute("SELECT rowid FROM docs ORDER BY rowid DESC LIMIT 1").fetchone()
            first = (int(top[0]) if top else 0) + 1
            db.executemany("INSERT INTO docs(rowid, body, doc_id, kind, agent_id, step, seq) VALUES (?,?,?,?,?,?,?)",
                           [(first + i, *row) for i, row in enumerate(rows)])
            # A document's first row is the one kept (as `LIMIT 1` over the table in rowid order did).
            db.executemany("INSERT OR IGNORE INTO doc_rows VALUES (?, ?)",
                           [(row[1], first + i) for i, row in enumerate(rows)])
            if lost:
                db.executemany("INSERT INTO dropped(body, doc_id, step, seq) VALUES (?,?,?,?)", lost)
                db.execute("INSERT OR REPLACE INTO meta VALUES ('dropped_seq', ?)", (str(max(r[3] for r in lost)),))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('last_seq', ?)", (str(newest),))
            if not hold:
                db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return len(rows)

    @property
    def holding(self) -> bool:
        """Whether texts added with `hold` wait for a `flush`."""
        return self._db.in_transaction

    def flush(self) -> None:
        """Commit what `add_events(…, hold=True)` holds (nothing when it holds nothing)."""
        if self._db.in_transaction:
            self._db.execute("COMMIT")

    def trim_after(self, seq: int) -> int:
        """Forget the texts of events after `seq` (the log was cut there: a kill before the log
        writer caught up with the index); returns how many were removed."""
        self.flush()
        if self.last_seq <= seq:
            return 0
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            first = None
            # Texts are added in sequence order: walk back from the newest to the first one to keep.
            for rowid, row_seq in db.execute("SELECT rowid, seq FROM docs ORDER BY rowid DESC"):
                if int(row_seq) <= seq:
                    break
                first = rowid
            removed = 0
            if first is not None:
                removed = db.execute("DELETE FROM docs WHERE rowid >= ?", (first,)).rowcount
                db.execute("DELETE FROM doc_rows WHERE row >= ?", (first,))
            db.execute("DELETE FROM dropped WHERE CAST(seq AS INTEGER) > ?", (seq,))  # a few rows a summary
            top = db.execute("SELECT max(CAST(seq AS INTEGER)) FROM dropped").fetchone()
            db.execute("INSERT OR REPLACE INTO meta VALUES ('dropped_seq', ?)", (str(top[0] or 0),))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('last_seq', ?)", (str(seq),))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return max(0, removed)

    def sync(self, events_path: Path, log_seq: int | None = None) -> int:
        """Make the index hold exactly what the log holds: trim what a cut log lost (`log_seq`,
        default: read from the log's end), then catch up; returns how many texts were added."""
        self.trim_after(last_logged_seq(events_path) if log_seq is None else log_seq)
        return self.catch_up(events_path)

    def catch_up(self, events_path: Path, batch: int = 500) -> int:
        """Index what the log holds past `last_seq`; returns how many texts were added."""
        added = 0
        pending: list[Event | int] = []
        for event in events_after(events_path, self.last_seq):
            pending.append(event)
            if len(pending) >= batch:
                added += self.add_events(pending)
                pending = []
        return added + self.add_events(pending)

    # ------------------------------------------------------------------ reading

    def search(self, query: str, *, limit: int = 10, kinds: Sequence[str] = (), agent_id: str | None = None,
               before_step: int | None = None, exclude: Iterable[str] = (), excerpt_tokens: int = 24,
               marks: tuple[str, str] = ("[", "]")) -> list[Hit]:
        """The best matches for `query`, best first. `before_step` keeps only texts from earlier
        rounds or turns; `exclude` leaves out ids (what a view already holds verbatim); `marks`
        surround the matched terms in excerpts."""
        expression = match_expression(query)
        if expression is None or limit <= 0:
            return []
        where = ["docs MATCH ?"]
        args: list[object] = [expression]
        if kinds:
            where.append(f"kind IN ({','.join('?' * len(kinds))})")
            args += list(kinds)
        if agent_id is not None:
            where.append("agent_id = ?")
            args.append(agent_id)
        if before_step is not None:
            where.append("CAST(step AS INTEGER) < ?")
            args.append(before_step)
        skip = set(exclude)
        sql = (f"SELECT doc_id, kind, agent_id, step, bm25(docs), "
               f"snippet(docs, 0, ?, ?, '…', {max(4, min(excerpt_tokens, 64))}) "
               f"FROM docs WHERE {' AND '.join(where)} ORDER BY bm25(docs), rowid LIMIT ?")
        args = [*marks, *args]
        args.append(limit + len(skip))
        hits: list[Hit] = []
        for doc_id, kind, agent, step, rank, excerpt in self._db.execute(sql, args):
            if doc_id in skip:
                continue
            hits.append(Hit(doc_id, kind, agent, int(step), -float(rank), excerpt))
            if len(hits) >= limit:
                break
        return hits

    def index_references(self, fingerprint: str, files: Iterable[tuple[str, str]]) -> int:
        """Hold these reference files' passages (path, text), replacing any others, unless the
        index already holds the set with this `fingerprint`; returns how many passages were added."""
        self.flush()
        db = self._db
        row = db.execute("SELECT value FROM meta WHERE key='references'").fetchone()
        if row is not None and row[0] == fingerprint:
            return 0
        added = 0

        def rows() -> Iterator[tuple[str, str, int, int]]:  # one passage at a time: memory stays flat
            nonlocal added
            for path, text in files:
                for first, last, piece in line_ranges(text):
                    added += 1
                    yield piece, path, first, last

        db.execute("BEGIN")
        try:
            db.execute("DELETE FROM passages")
            db.executemany("INSERT INTO passages(body, path, first_line, last_line) VALUES (?,?,?,?)", rows())
            db.execute("INSERT OR REPLACE INTO meta VALUES ('references', ?)", (fingerprint,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return added

    def passages(self, query: str, *, limit: int = 10) -> list[Passage]:
        """The reference passages that best match `query` (any text), best first."""
        expression = match_expression(query)
        if expression is None or limit <= 0:
            return []
        sql = ("SELECT path, first_line, last_line, body, bm25(passages) FROM passages WHERE passages MATCH ? "
               "ORDER BY bm25(passages), rowid LIMIT ?")
        return [Passage(str(p), int(a), int(b), str(body), -float(rank))
                for p, a, b, body, rank in self._db.execute(sql, (expression, limit))]

    def postings(self, term: str, *, kinds: Sequence[str], max_step: int, limit: int) -> list[tuple[str, int]]:
        """(doc id, step) of the first `limit` texts of these kinds, at step `max_step` or before,
        that hold one word (as FTS5 stems it), oldest first. Bounded by `limit` however common the
        word: the recall tier reads the postings of rare words only (`moot.core.search.recall`)."""
        word = term.replace('"', "")[:MAX_TERM_CHARS]
        if not word.strip() or not kinds or limit <= 0:
            return []
        sql = (f"SELECT doc_id, step FROM docs WHERE docs MATCH ? AND kind IN ({','.join('?' * len(kinds))}) "
               "AND CAST(step AS INTEGER) <= ? LIMIT ?")
        try:
            rows = self._db.execute(sql, (f'"{word}"', *kinds, max_step, limit)).fetchall()
        except sqlite3.OperationalError:
            return []  # a word FTS5 cannot take as a phrase (nothing left after its tokenizer)
        return [(str(d), int(st)) for d, st in rows]

    def dropped_version(self) -> int:
        """The sequence number of the newest event whose dropped facts the index holds: the
        `dropped` table is the same whenever this is (rows are only added in order, or trimmed)."""
        row = self._db.execute("SELECT value FROM meta WHERE key='dropped_seq'").fetchone()
        return int(row[0]) if row else 0

    def dropped_postings(self, term: str, *, max_step: int, limit: int) -> list[tuple[str, int, str]]:
        """(item id, step, fact) of the first `limit` facts summaries dropped, of items at step
        `max_step` or before, that hold one word (as FTS5 stems it). The item id is "" for a fact a
        consolidation dropped (it came from an older block)."""
        word = term.replace('"', "")[:MAX_TERM_CHARS]
        if not word.strip() or limit <= 0:
            return []
        sql = "SELECT doc_id, step, body FROM dropped WHERE dropped MATCH ? AND CAST(step AS INTEGER) <= ? LIMIT ?"
        try:
            rows = self._db.execute(sql, (f'"{word}"', max_step, limit)).fetchall()
        except sqlite3.OperationalError:
            return []
        return [(str(d), int(st), str(body)) for d, st, body in rows]

    def seq_of(self, doc_id: str) -> int | None:
        """The sequence number of the event that holds one document (where it is in the log)."""
        row = self._doc_column("seq", doc_id)
        return int(row) if row is not None else None

    def text(self, doc_id: str) -> str | None:
        """The whole indexed text of one document."""
        row = self._doc_column("body", doc_id)
        return str(row) if row is not None else None

    def _doc_column(self, column: Literal["seq", "body"], doc_id: str) -> int | str | None:
        """One column of a document's row, found through `doc_rows` (by primary key, then rowid)."""
        found = self._db.execute("SELECT row FROM doc_rows WHERE doc_id = ?", (doc_id,)).fetchone()
        if found is None:
            return None
        row = self._db.execute(f"SELECT {column} FROM docs WHERE rowid = ?", (found[0],)).fetchone()
        return row[0] if row else None

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM docs").fetchone()[0])


def dump_hits(hits: Sequence[Hit]) -> str:
    return json.dumps([h.__dict__ for h in hits], ensure_ascii=False)

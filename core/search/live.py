"""The running debate's search index: fed each text as its event is emitted, synced with the log on open.

A listener on the event bus (`EventBus.listen`), so a view built right after an event can
already recall its text. The log writer runs behind the bus, so the index may be a few
events ahead of the log when the process is killed: on open, `SearchIndex.sync` trims what
the log does not have and catches up what it lacks (a deleted index is rebuilt whole).

An index that lacks much of the log at resume (deleted, unreadable, far behind) is caught up
in the background instead (`rebuild`): the debate's first request does not wait for it, recall
finds only what it holds so far, and the texts emitted meanwhile wait in memory until it is done.

A new debate's folder has a temporary name until its first event is on disk; the index is
opened only once it has its real one (SQLite keeps paths), and texts emitted before that
wait in memory. An index that cannot be written (disk full, a file SQLite cannot open) is
never a reason to stop the debate: one warning, and its views recall nothing from then on
(`moot resume` rebuilds the index).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence

from ..errors import StoreError
from ..events import CallStarted, ContributionAdded, Event, NoteInjected, SummaryAdded
from ..storage.folder import DebateFolder
from .index import INDEX_FILE, SearchIndex, open_index
from .rebuild import BACKGROUND_AFTER, START_AFTER_S, Rebuild

FLUSH_EVERY = 64
"""Texts held in one transaction at most: a page that many texts change is written once a batch,
not once a text (a debate's index wrote ~14× its own size a turn at one transaction a text)."""
FLUSH_AFTER_S = 1.0
"""...and for at most this long, so `moot search` from another shell is never far behind."""


class LiveIndex:
    """The index of the debate this process runs (see the module doc)."""

    def __init__(self, folder: DebateFolder, warn: Callable[[str], None] | None = None,
                 progress: Callable[[int, int, int], None] | None = None) -> None:
        """`progress(done, total, texts)`: how far a rebuild in the background is (None: an index
        that lacks much of the log is caught up on open, before anything else)."""
        self.folder = folder
        self.warn = warn
        self.progress = progress
        self.rebuild: Rebuild | None = None
        """The catch-up running (or about to) in the background; None once it is done."""
        self._start_timer: asyncio.TimerHandle | None = None
        self.index: SearchIndex | None = None
        self.failed: str | None = None
        self._waiting: list[Event] = []
        self._unsaid: str | None = None
        self._held = 0
        self._timer: asyncio.TimerHandle | None = None

    def open(self, log_seq: int) -> None:
        """Open a published folder's index and make it hold exactly what the log holds (`log_seq`:
        the sequence number of the log's last event)."""
        self.index = open_index(self.folder.path)  # a linked index file: refused, like any file of the folder
        try:
            self.index.trim_after(log_seq)
            start = self.index.last_seq
            if self.progress is not None and log_seq - start > BACKGROUND_AFTER:
                self.rebuild = Rebuild(self.index.path, self.folder.events_path, start, log_seq,
                                       self._rebuilding, self._rebuilt)
            else:
                self.index.catch_up(self.folder.events_path)
        except (sqlite3.Error, OSError) as exc:
            self._fail(exc)

    def begin(self) -> None:
        """The debate is running (on its event loop): a rebuild waiting to start starts at its first
        request, or a moment from now."""
        if self.rebuild is not None and not self.rebuild.started and self._start_timer is None:
            self._start_timer = asyncio.get_running_loop().call_later(START_AFTER_S, self._start_rebuild)

    def _start_rebuild(self) -> None:
        self._start_timer = None
        if self.rebuild is not None:
            self.rebuild.begin()

    def _rebuilding(self, done: int, total: int, texts: int) -> None:
        if self.progress is not None:
            self.progress(done, total, texts)

    def _rebuilt(self, texts: int, error: BaseException | None) -> None:
        """The rebuild ended (on the event loop): the texts emitted meanwhile are added now."""
        rebuild, self.rebuild = self.rebuild, None
        if error is not None:
            self._fail(error)
            return
        waiting, self._waiting = self._waiting, []
        if self.index is not None and self.failed is None:
            try:
                self.index.add_events(waiting)
            except (sqlite3.Error, OSError) as exc:
                self._fail(exc)
                return
        if rebuild is not None:
            self._rebuilding(rebuild.total, rebuild.total, texts)

    async def settle(self) -> None:
        """The debate has ended: a rebuild still running stops after the batch it writes (the
        index keeps every batch written, and whoever opens it next catches up the rest)."""
        if self._start_timer is not None:
            self._start_timer.cancel()
            self._start_timer = None
        self.progress = None
        if self.rebuild is not None:
            self.rebuild.stop()
            await self.rebuild.wait()

    def on_event(self, event: Event) -> None:
        if isinstance(event, CallStarted) and self.rebuild is not None:
            self._start_rebuild()  # the first request is on its way: the rebuild no longer holds it
        self._say()  # a failure on open is said once the debate's events are written
        self._index(event)
        self._say()

    def _say(self) -> None:
        if self._unsaid is not None:
            message, self._unsaid = self._unsaid, None
            if self.warn is not None:
                self.warn(message)

    def _index(self, event: Event) -> None:
        match event:
            case ContributionAdded() | SummaryAdded() | NoteInjected():
                pass
            case _:
                return  # no text: the next catch-up skips it by its sequence number
        if self.failed is not None:
            return
        if self.rebuild is not None:  # indexed after the log's older texts, once they are in
            self._waiting.append(event)
            return
        if self.index is None:
            if self.folder.pending:
                self._waiting.append(event)
                return
            try:
                self.index = open_index(self.folder.path)
            except (sqlite3.Error, OSError, StoreError) as exc:
                self._fail(exc)
                return
        try:
            waiting, self._waiting = self._waiting, []
            self.index.add_events([*waiting, event], hold=True)
        except (sqlite3.Error, OSError) as exc:
            self._fail(exc)
            return
        self._held += 1 + len(waiting)
        if self._held >= FLUSH_EVERY:
            self.flush()
        elif self._timer is None:
            try:
                self._timer = asyncio.get_running_loop().call_later(FLUSH_AFTER_S, self.flush)
            except RuntimeError:  # no event loop (a tool or test feeding events by hand): now
                self.flush()

    def flush(self) -> None:
        """Commit the texts held since the last flush, so other processes (`moot search`) see them."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._held = 0
        if self.index is None:
            return
        try:
            self.index.flush()
        except sqlite3.Error as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        self.failed = str(exc) or type(exc).__name__
        if self.index is not None:
            try:
                self.index.close()
            except sqlite3.Error:
                pass
        self.index = None
        self._unsaid = (f"the search index ({INDEX_FILE}) cannot be written ({self.failed}); views recall "
                        "nothing for the rest of this run, and `moot resume` rebuilds it")

    def postings(self, term: str, *, kinds: Sequence[str], max_step: int, limit: int) -> list[tuple[str, int]]:
        if self.index is None:
            return []
        try:
            return self.index.postings(term, kinds=kinds, max_step=max_step, limit=limit)
        except sqlite3.Error as exc:
            self._fail(exc)
            return []

    def dropped_version(self) -> int:
        if self.index is None:
            return 0
        try:
            return self.index.dropped_version()
        except sqlite3.Error as exc:
            self._fail(exc)
            return 0

    def dropped_postings(self, term: str, *, max_step: int, limit: int) -> list[tuple[str, int, str]]:
        if self.index is None:
            return []
        try:
            return self.index.dropped_postings(term, max_step=max_step, limit=limit)
        except sqlite3.Error as exc:
            self._fail(exc)
            return []

    def seq_of(self, doc_id: str) -> int | None:
        if self.index is None:
            return None
        try:
            return self.index.seq_of(doc_id)
        except sqlite3.Error as exc:
            self._fail(exc)
            return None

    def close(self) -> None:
        if self._start_timer is not None:
            self._start_timer.cancel()
            self._start_timer = None
        if self.rebuild is not None:
            self.rebuild.stop()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.index is not None:
            try:
                self.index.close()
            except sqlite3.Error as exc:
                self._fail(exc)
            self.index = None

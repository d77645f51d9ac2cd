"""Contributions a long debate's state let go of (`storage.archive`), read back by id when a view
needs one: the recall tier brings old messages back verbatim.

The search index knows which event holds each text (its sequence number); a binary search over
the log's byte offsets finds that line, and only it is parsed. The last few read are kept, as
the same old items tend to come back turn after turn. No search index (it failed, or this run
has none): nothing is read back, as the recall tier then finds nothing either.

The log's writer runs behind the engine (far behind a zero-delay demo), so the state can let go
of a step, and the index know its texts, before their events are on disk. A view must not depend
on that timing (views are reproducible), so the contributions emitted since the last event the
writer has written (`written`) are held here until it has: as many as wait in the writer's
bounded queue anyway.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from ..events import ContributionAdded, Event, parse_event
from ..models.state import Contribution
from .live import LiveIndex
from .log_scan import line_with_seq

KEEP = 256
"""Contributions read back and kept (the recall tier asks for at most 16 a call)."""


class ArchivedContributions:
    """`lookup(id)`: the contribution as the log holds it, or None."""

    def __init__(self, search: LiveIndex, events_path: Callable[[], Path],
                 written: Callable[[], int] | None = None) -> None:
        """`written`: the sequence number of the last event the log's writer has written (None: no
        writer behind this run, nothing is held back; feed `on_event` every event otherwise)."""
        self.search = search
        self.events_path = events_path
        self.written = written
        self._kept: OrderedDict[str, Contribution] = OrderedDict()
        self._unwritten: OrderedDict[str, tuple[int, Contribution]] = OrderedDict()
        """Contributions emitted that the writer has not written yet, in sequence order: id → (seq, it)."""

    def on_event(self, event: Event) -> None:
        """A listener on the debate's bus: holds each contribution until the writer has written it."""
        if self.written is None:
            return
        if isinstance(event, ContributionAdded):
            self._unwritten[event.contribution.id] = (event.seq, event.contribution)
        self._forget_written()

    def _forget_written(self) -> None:
        if not self._unwritten or self.written is None:
            return
        written = self.written()
        while self._unwritten and next(iter(self._unwritten.values()))[0] <= written:
            self._unwritten.popitem(last=False)

    def __call__(self, cid: str) -> Contribution | None:
        if cid in self._kept:
            self._kept.move_to_end(cid)
            return self._kept[cid]
        self._forget_written()
        held = self._unwritten.get(cid)
        if held is not None:  # not in the log yet (the writer is behind): as it will be written
            return held[1]
        found = self._read(cid)
        if found is not None:  # (none: not in the log, or unreadable; asked again next time)
            self._kept[cid] = found
            if len(self._kept) > KEEP:
                self._kept.popitem(last=False)
        return found

    def _read(self, cid: str) -> Contribution | None:
        seq = self.search.seq_of(cid)
        line = line_with_seq(self.events_path(), seq) if seq is not None else None
        if line is None:
            return None
        try:
            event = parse_event(line)
        except (ValidationError, ValueError, RecursionError):
            return None
        if isinstance(event, ContributionAdded) and event.contribution.id == cid:
            return event.contribution
        return None

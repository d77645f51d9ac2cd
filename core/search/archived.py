"""Contributions a long debate's state let go of (`storage.archive`), read back by id when a view
needs one: the recall tier brings old messages back verbatim.

The search index knows which event holds each text (its sequence number); a binary search over
the log's byte offsets finds that line, and only it is parsed. The last few read are kept, as
the same old items tend to come back turn after turn. No search index (it failed, or this run
has none): nothing is read back, as the recall tier then finds nothing either.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from ..events import ContributionAdded, parse_event
from ..models.state import Contribution
from .live import LiveIndex
from .log_scan import line_with_seq

KEEP = 256
"""Contributions read back and kept (the recall tier asks for at most 16 a call)."""


class ArchivedContributions:
    """`lookup(id)`: the contribution as the log holds it, or None."""

    def __init__(self, search: LiveIndex, events_path: Callable[[], Path]) -> None:
        self.search = search
        self.events_path = events_path
        self._kept: OrderedDict[str, Contribution] = OrderedDict()

    def __call__(self, cid: str) -> Contribution | None:
        if cid in self._kept:
            self._kept.move_to_end(cid)
            return self._kept[cid]
        found = self._read(cid)
        if found is not None:  # (none: maybe not in the log yet; asked again next time)
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

"""Reading the event log from where an index stopped, without reading what came before.

The log's lines are in sequence order, so the first event after a given sequence number is
found by a binary search over byte offsets; only the lines that may hold text are parsed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from ..events import Event


def _seq_at(fh: BinaryIO, offset: int) -> tuple[int, int] | None:
    """(seq, offset of that line) of the first whole line starting at or after `offset`."""
    fh.seek(offset)
    if offset:
        fh.readline()  # the rest of a line begun before `offset`
    while True:
        start = fh.tell()
        line = fh.readline()
        if not line:
            return None
        if not line.endswith(b"\n"):
            return None  # a torn last line
        m = re.search(rb'"seq":(\d+)', line)
        if m:
            return int(m.group(1)), start


def last_logged_seq(path: Path) -> int:
    """The sequence number of the log's last whole event (0 for an empty or missing log), read
    from its end."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return 0
    with fh:
        end = os.fstat(fh.fileno()).st_size
        step = 64 * 1024
        while end > 0:
            start = max(0, end - step)
            fh.seek(start)
            block = fh.read(end - start)
            lines = block.split(b"\n")
            whole = lines[1:-1] if start else lines[:-1]  # the first may be cut, the last is torn or empty
            for line in reversed(whole):
                m = re.search(rb'"seq":(\d+)', line)
                if m:
                    return int(m.group(1))
            if start == 0:
                return 0
            end = start + len(lines[0])  # go on before the partial first line
            step *= 2
        return 0


def _seek_before(fh: BinaryIO, seq: int) -> None:
    """Put `fh` at the start of a line at most 64 KiB before the first event numbered `seq` or
    more, by a binary search over byte offsets (the log's lines are in sequence order)."""
    lo, hi = 0, os.fstat(fh.fileno()).st_size
    while hi - lo > 64 * 1024:
        mid = (lo + hi) // 2
        found = _seq_at(fh, mid)
        if found is None or found[0] >= seq:
            hi = mid
        else:
            lo = mid
    fh.seek(lo)
    if lo:
        fh.readline()


def line_with_seq(path: Path, seq: int) -> bytes | None:
    """The log line of event `seq`, found by a binary search over byte offsets (None if absent)."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return None
    with fh:
        _seek_before(fh, seq)
        for line in fh:
            m = re.search(rb'"seq":(\d+)', line)
            if m and int(m.group(1)) >= seq:
                return line if int(m.group(1)) == seq and line.endswith(b"\n") else None
        return None


def events_after(path: Path, seq: int) -> Iterator[Event | int]:
    """The log's events with a sequence number above `seq`, found by a binary search over the
    log's byte offsets (lines are in sequence order), then read to the end."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below, after the generator is exhausted
    except FileNotFoundError:
        return
    with fh:
        _seek_before(fh, seq + 1)
        for line in fh:
            if not line.endswith(b"\n"):
                break
            m = re.search(rb'"seq":(\d+)', line)
            if m and int(m.group(1)) <= seq:
                continue  # held already (the search lands up to 64 KiB before the first new line)
            if not _may_hold_text(line):
                if m:
                    yield int(m.group(1))
                continue
            from ..events import parse_event  # only for a new line with text: a current index imports no pydantic

            try:
                event = parse_event(line)
            except (ValueError, RecursionError):
                continue
            if event.seq > seq:
                yield event


_TEXT_TYPES = (b'"type":"contribution_added"', b'"type":"summary_added"', b'"type":"note_injected"')


def _may_hold_text(line: bytes) -> bool:
    return any(t in line for t in _TEXT_TYPES)

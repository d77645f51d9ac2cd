"""Reading an event log: one event per line, a torn last line skipped, anything else named."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from ..errors import StoreError
from ..events import Event, parse_event
from .files import open_regular


def read_events(path: Path) -> Iterator[Event]:
    """Events of a log, in order. A torn last line (a crash mid-append) is skipped;
    a bad line anywhere else is corruption and raises StoreError naming the line."""
    for _, event in numbered_events(path):
        yield event


def numbered_events(path: Path, start: int = 0) -> Iterator[tuple[int, Event]]:
    """(line number, event) from byte `start` on (line numbers then count from there).

    Read line by line: memory holds one event, however long the log."""
    try:
        fh = os.fdopen(open_regular(path), "rb")
    except FileNotFoundError:
        raise StoreError(f"no event log at {path}") from None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None
    with fh:
        try:
            fh.seek(start)
            for i, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    event = parse_event(line)
                except (ValidationError, ValueError, RecursionError):
                    if not line.endswith(b"\n"):  # the last line, its append cut short
                        return
                    raise StoreError(f"{path}: line {i} is not a moot event (the log is corrupt)") from None
                yield i, event
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror}") from None

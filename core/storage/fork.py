"""Copying a debate's history up to a point into a new folder: the disk side of `moot fork`.

A fork's log is its parent's log up to the fork point, line for line (so every view, summary
and contribution before that point is the parent's, byte for byte), with its first event
rewritten to carry the fork's configuration and `forked_from`. Phases overlap (see
`protocols.schedule`): a round-1 refinement may still run after round 2's first summary
began. So the cut is not a plain prefix: past the first event of the fork point, the events
of work that comes before the point (by round and phase) are still copied, those of the point
and after are left out, and a resume redoes exactly those.

The parent is only read, one line at a time (memory does not grow with its length), and only
what its log holds: a running parent's torn last line is skipped. The fork is written inside a
pending folder (`.<id>.tmp`) under a temporary file name, synced, renamed to `events.jsonl` and
then the folder is published: a kill at any moment leaves either nothing that `moot list` shows
(a pending folder with no log, removed later) or a complete, resumable fork.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..errors import InputError, StoreError
from ..events import (
    CallContinued,
    CallFailed,
    CallStarted,
    ContributionAdded,
    ConvergenceScored,
    DebateStarted,
    Event,
    PhaseCompleted,
    PhaseStarted,
    RoundStarted,
    SeatAnswered,
    SummaryAdded,
    ToolCalled,
    ToolReturned,
    dump_event,
    parse_event,
)
from .files import fsync_dir, open_regular, write_all
from .folder import EVENTS_FILE, DebateFolder

LAST = 1 << 30
"""The rank of work that always comes after any fork point (the synthesis)."""

PHASE_RANK: dict[str, int] = {"clarify": 0, "summarize": 1, "proposal": 2, "answer": 2, "turn": 2, "critique": 3,
                              "rank": 4, "refinement": 5, "score": 6, "synthesis": LAST}
"""The order of a round's phases: work of an earlier phase comes before a fork at a later one."""

KIND_PHASE: dict[str, str] = {"proposal": "proposal", "critique": "critique", "refinement": "refinement",
                              "answer": "answer", "message": "turn", "ranking": "rank"}

Key = tuple[int, int]

_POINT = re.compile(r"(round|turn):([1-9][0-9]{0,5})(?::([a-z]+))?|summary:([A-Za-z0-9_.-]{1,80})")


@dataclass(frozen=True)
class ForkPoint:
    """Where to fork: the start of a round (or of a phase of it), of a turn, or just before a summary."""

    kind: str
    """`round`, `turn` or `summary`."""
    number: int = 0
    phase: str | None = None
    summary_id: str = ""

    @property
    def label(self) -> str:
        if self.kind == "summary":
            return f"summary:{self.summary_id}"
        return f"{self.kind}:{self.number}" + (f":{self.phase}" if self.phase else "")

    @property
    def shown(self) -> str:
        """As `moot show` says it: `round 2`, `round 2 critique`, `turn 40`, `summary S`."""
        return self.label.replace(":", " ")


def parse_point(text: str) -> ForkPoint:
    """`round:N`, `round:N:PHASE`, `turn:N` or `summary:S`; InputError (exit 2) for anything else."""
    m = _POINT.fullmatch(text.strip())
    if m is None:
        raise InputError(f"--at {text!r}: expected round:N, round:N:PHASE, turn:N or summary:ID")
    if m.group(4) is not None:
        return ForkPoint("summary", summary_id=m.group(4))
    kind, number, phase = m.group(1), int(m.group(2)), m.group(3)
    if phase is not None and (kind != "round" or phase not in PHASE_RANK or phase == "synthesis"):
        raise InputError(f"--at {text!r}: a phase follows a round (round:N:PHASE, PHASE one of "
                         f"{', '.join(p for p in PHASE_RANK if p != 'synthesis')})")
    return ForkPoint(kind, number, phase)


def _key(round_no: int, phase: str) -> Key:
    rank = PHASE_RANK.get(phase, LAST)
    return (LAST, LAST) if rank == LAST else (round_no, rank)


def _lines(path: Path) -> Iterator[tuple[bytes, Event]]:
    """(raw line, event) of a log, in order; a torn last line (a writer mid-append) ends it."""
    try:
        fh = os.fdopen(open_regular(path), "rb")
    except FileNotFoundError:
        raise StoreError(f"no event log at {path}") from None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None
    with fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            if not line.endswith(b"\n"):
                return
            try:
                yield line, parse_event(line)
            except (ValidationError, ValueError, RecursionError):
                raise StoreError(f"{path}: line {i} is not a moot event (the log is corrupt)") from None


@dataclass
class Cut:
    seq: int
    """The first event of the fork point: it and everything of the point and after stay out."""
    key: Key
    reached: int
    """The last step the parent's log reached (said when the point is not in it)."""


def find_cut(path: Path, point: ForkPoint) -> Cut:
    """Where in the parent's log the fork point begins; InputError naming what the log has when it has no such point."""
    reached = 0
    summary_calls: dict[tuple[str, int], int] = {}
    for _, event in _lines(path):
        match event:
            case RoundStarted(round=number):
                reached = max(reached, number)
                if point.kind in ("round", "turn") and point.phase is None and number == point.number:
                    return Cut(event.seq, (number, -1), reached)
            case PhaseStarted(round=number, phase=phase):
                if point.kind == "round" and point.phase == phase and number == point.number:
                    return Cut(event.seq, _key(number, phase), reached)
            case CallStarted(view=view) if view.phase == "summarize":
                summary_calls.setdefault((view.agent_id, view.round), event.seq)
            case SummaryAdded(summary=s) if point.kind == "summary" and s.id == point.summary_id:
                seq = summary_calls.get((s.agent_id, s.round), event.seq)
                return Cut(seq, _key(s.round, "summarize"), reached)
            case SummaryAdded(summary=s):
                summary_calls.pop((s.agent_id, s.round), None)
            case _:
                pass
    if point.kind == "summary":
        raise InputError(f"--at {point.label}: the debate has no summary with that id (`moot show --json` lists them)")
    unit = "turn" if point.kind == "turn" else "round"
    what = f"{unit} {point.number}" + (f" {point.phase} phase" if point.phase else "")
    raise InputError(f"--at {point.label}: the debate's log has no {what} (it reached {unit} {reached})")


class _Keep:
    """Which events past the cut belong to work before the fork point (copied) and which do not."""

    def __init__(self, key: Key) -> None:
        self.key = key
        self.calls: set[str] = set()
        self.past = False

    def started(self, call_id: str) -> None:
        self.calls.add(call_id)

    def __call__(self, event: Event) -> bool:
        match event:
            case CallStarted(view=view):
                keep = _key(view.round, view.phase) < self.key
                if keep:
                    self.calls.add(view.call_id)
                return keep
            case CallContinued(call_id=cid) | CallFailed(call_id=cid) | ToolCalled(call_id=cid) \
                    | ToolReturned(call_id=cid):
                return cid in self.calls
            case ContributionAdded(contribution=c):
                if c.metadata.call_id is not None:
                    return c.metadata.call_id in self.calls
                return _key(c.round, KIND_PHASE.get(c.type, "synthesis")) < self.key
            case SummaryAdded(summary=s):
                return _key(s.round, "summarize") < self.key
            case PhaseCompleted(round=number, phase=phase) | SeatAnswered(round=number, phase=phase):
                return _key(number, phase) < self.key
            case ConvergenceScored(score=score):
                return _key(score.round, "score") < self.key
            case _:
                return False  # a new step, a command, a note, the end: all of the fork point or after


@dataclass
class Copied:
    seq: int
    """The last event copied (what the fork's own events follow)."""
    lines: int
    bytes: int


def copy_history(parent: Path, fork: DebateFolder, cut: Cut, start: Callable[[DebateStarted], DebateStarted],
                 tail: Callable[[int], list[Event]], before_publish: Callable[[], None] | None = None) -> Copied:
    """Write the fork's log into the pending `fork` folder and publish it. `start` rewrites the
    parent's first event (the fork's configuration); `tail(seq)` gives events to append after
    the copy (a moderator note), numbered from `seq + 1`; `before_publish` adds derived files."""
    assert fork.pending
    part = fork.path / f".{EVENTS_FILE}.part"
    fd = open_regular(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    keep = _Keep(cut.key)
    last = lines = size = 0
    buf: list[bytes] = []

    def put(data: bytes) -> None:
        nonlocal lines, size
        buf.append(data)
        lines += 1
        size += len(data)
        if len(buf) >= 256:
            write_all(fd, b"".join(buf))
            buf.clear()

    try:
        for line, event in _lines(parent):
            before = event.seq < cut.seq
            if not lines and not isinstance(event, DebateStarted):
                raise StoreError(f"{parent}: the log does not open with the debate's first event (it is corrupt)")
            if isinstance(event, DebateStarted) and before:
                first = start(event)
                put((dump_event(first) + "\n").encode("utf-8"))
            elif before:
                if isinstance(event, CallStarted):
                    keep.started(event.view.call_id)
                put(line)
            elif not keep(event):
                continue
            else:
                put(line)
            last = max(last, event.seq)
        for extra in tail(last):
            last += 1
            extra.seq = last
            put((dump_event(extra) + "\n").encode("utf-8"))
        write_all(fd, b"".join(buf))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(part, fork.events_path)
    fsync_dir(fork.path)
    if before_publish is not None:
        before_publish()
    fork.publish()
    return Copied(last, lines, size)

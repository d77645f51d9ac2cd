"""An index holding just what some recorded calls' views read, gathered from the event log.

Rebuilding a call's messages (`view.render_tiers`) looks items up by id (its verbatim history,
the contributions its task quotes, its recall tier), by span of turns (a conversation's window)
its summary by id and its pins by key — nothing else. So for a handful of calls out of a 10,000-turn debate
(`moot context --turn`, the HTML report's latest calls per agent) one pass over the log, line by
line, keeps only those: memory holds the answer, never the debate. A line is parsed only when a
cheap look at its bytes says it may be wanted (an id, a turn); one whose layout is not the one
moot writes is parsed to be sure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from ..events import ContributionAdded, Event, PinChanged, SummaryAdded, parse_event
from ..models.state import DebateState, ViewRecord
from ..storage.files import open_regular
from .index import DebateIndex

CONTRIBUTION_RE = re.compile(rb'"contribution":\{"id":"([^"\\]*)","agent_id":"(?:[^"\\]|\\.)*","role":"(?:[^"\\]|\\.)*",'
                             rb'"type":"([a-z_]+)","round":(\d+),')
SUMMARY_RE = re.compile(rb'"summary":\{"id":"([^"\\]*)"')


@dataclass
class Needs:
    """What a set of views reads: contributions by id, every message of some turns, summaries."""

    ids: set[str] = field(default_factory=set)
    turns: set[int] = field(default_factory=set)
    summaries: set[str] = field(default_factory=set)
    pins: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, records: Iterable[ViewRecord]) -> Needs:
        needs = cls()
        for r in records:
            if r.history_turns is not None:
                needs.turns.update(range(r.history_turns[0], r.history_turns[1] + 1))
            needs.ids.update(r.contribution_ids, r.task_contribution_ids)
            own = r.task_params.get("own_answer_id")  # `adaptive` quotes its own answer by this alone
            if isinstance(own, str):
                needs.ids.add(own)
            if r.recall is not None:
                needs.ids.update(r.recall.ids)  # this call's block and the ones it held (layout 3)
            if r.summary_id:
                needs.summaries.add(r.summary_id)
            needs.pins.update(r.pinned)
        return needs

    def met_by(self, index: DebateIndex) -> bool:
        """Did the log hold all of it? (Else a view would be rebuilt from less than it read.)"""
        messages = {c.round for c in index.contributions.values() if c.type == "message"}
        return (self.turns <= messages and self.ids <= index.contributions.keys()
                and self.summaries <= index.summaries.keys() and self.pins <= index.pins.keys())


def bare_index(state: DebateState) -> DebateIndex:
    """An index with the debate's people, prompts and layout and none of its items."""
    return DebateIndex(state.model_copy(update={"rounds": [], "archived_rounds": 0, "judge_summary": None}))


def gather(events_path: Path, index: DebateIndex, needs: Needs, lines: Iterable[bytes] | None = None) -> None:
    """Add to `index` the contributions and summaries of the log that `needs` names. `lines`: the
    only lines of the log that may hold them, in the log's order (`line_index`); else every line."""
    if not (needs.ids or needs.turns or needs.summaries or needs.pins):
        return
    ids = {i.encode() for i in needs.ids}
    summaries = {s.encode() for s in needs.summaries}
    source: AbstractContextManager[Iterable[bytes]] = (
        nullcontext(lines) if lines is not None else os.fdopen(open_regular(events_path), "rb"))
    with source as fh:
        for line in fh:
            if b'"type":"contribution_added"' in line:
                m = CONTRIBUTION_RE.search(line)
                if m is not None and not (m.group(1) in ids
                                          or (m.group(2) == b"message" and int(m.group(3)) in needs.turns)):
                    continue
                event = parse_line(line)
                if isinstance(event, ContributionAdded):
                    c = event.contribution
                    if c.id in needs.ids or (c.type == "message" and c.round in needs.turns):
                        index.add_contribution(c)
            elif b'"type":"summary_added"' in line:
                m = SUMMARY_RE.search(line)
                if m is not None and m.group(1) not in summaries:
                    continue
                event = parse_line(line)
                if isinstance(event, SummaryAdded) and event.summary.id in needs.summaries:
                    index.summaries[event.summary.id] = event.summary
            elif needs.pins and b'"type":"pin_changed"' in line:
                event = parse_line(line)
                if isinstance(event, PinChanged) and event.pin.key in needs.pins:
                    index.pins[event.pin.key] = event.pin  # its text never changes: any of its events will do


def parse_line(line: bytes) -> Event | None:
    """The event of a log line; None for one that is not (a torn last line; the fold names
    anything else as corrupt)."""
    try:
        return parse_event(line)
    except (ValidationError, ValueError, RecursionError):
        return None


def index_for_records(events_path: Path, state: DebateState, records: Iterable[ViewRecord]) -> DebateIndex:
    """An index that rebuilds `records`' views exactly as one of the whole debate would."""
    index = bare_index(state)
    gather(events_path, index, Needs.of(records))
    return index

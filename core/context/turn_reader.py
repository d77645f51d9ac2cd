"""What one conversation turn's views need, read straight from the event log.

`moot context ID --turn T` must answer quickly on a 10,000-turn debate. Folding the whole
state costs time proportional to the debate; the log is append-only and every line is
one event, so the calls of turn T, the summary they carried and the messages in their
windows (and a call's tool-loop steps) can be found by searching the bytes and parsing only
those lines. The same `render_messages` then rebuilds the views, so what is shown is what was
sent.
"""

from __future__ import annotations

import re

from pydantic import ValidationError

from ..agents import require_agent
from .index import DebateIndex
from ..errors import InspectError
from ..events import CallContinued, CallStarted, ContributionAdded, DebateStarted, SummaryAdded, parse_event
from ..models.state import ViewRecord
from ..storage.folder import DebateFolder

_MESSAGE = re.compile(rb'"type":"message","round":(\d+),')


def _line_at(data: bytes, pos: int) -> bytes:
    start = data.rfind(b"\n", 0, pos) + 1
    end = data.find(b"\n", pos)
    return data[start: end if end != -1 else len(data)]


class TurnReader:
    """Views of one turn, from the log alone; None from `read` means "fold the state instead"."""

    def __init__(self, folder: DebateFolder) -> None:
        self.folder = folder
        self.data = folder.events_path.read_bytes()

    def _event_with(self, needle: bytes, kind: bytes) -> list[bytes]:
        out = []
        pos = self.data.find(needle)
        while pos != -1:
            line = _line_at(self.data, pos)
            if kind in line:
                out.append(line)
            pos = self.data.find(needle, pos + len(needle))
        return out

    def read(self, turn: int, agent: str | None, phase: str | None) -> tuple[list[ViewRecord], DebateIndex] | None:
        first = self.data.split(b"\n", 1)[0]
        try:
            started = parse_event(first)
        except (ValidationError, ValueError):
            return None
        if not isinstance(started, DebateStarted):
            return None
        if started.protocol != "conversation":
            raise InspectError(f"debate {self.folder.id} is a {started.protocol} debate: use --round, not --turn")
        agent_id = None
        if agent:
            agent_id = require_agent(agent, started.agents, started.judge, where=f" in debate {self.folder.id}").id
        records: dict[str, ViewRecord] = {}
        for line in self._event_with(b'"round":%d,"phase":"' % turn, b'"type":"call_started"'):
            event = parse_event(line)
            if isinstance(event, CallStarted):
                records[event.view.call_id] = event.view  # a call redone after a resume: the last one
        if not records:
            raise InspectError(f"no calls recorded at turn {turn} of debate {self.folder.id} "
                               f"({started.total_rounds} turns)")
        chosen = [r for r in records.values() if (agent_id is None or r.agent_id == agent_id)
                  and (phase is None or r.phase == phase)]
        if agent_id is not None and not chosen:
            raise InspectError.not_at_turn(agent_id, turn, [(r.agent_id, r.phase) for r in records.values()])
        for r in chosen:  # a call's tool loop: its steps, as the folded state adds them
            for line in self._event_with(b'"call_id":"%s"' % r.call_id.encode(), b'"type":"call_continued"'):
                event = parse_event(line)
                if isinstance(event, CallContinued) and event.call_id == r.call_id:
                    if len(r.tool_steps) <= event.step.index:
                        r.tool_steps.append(event.step)
                    r.tokens, r.tools = event.tokens, list(event.tools)
        index = DebateIndex()
        index.on_event(started)
        turns: set[int] = set()
        ids: set[str] = set()
        summaries: set[str] = set()
        for r in chosen:
            if r.history_turns is not None:
                turns.update(range(r.history_turns[0], r.history_turns[1] + 1))
            ids.update(r.contribution_ids, r.task_contribution_ids)
            if r.recall is not None:
                ids.update(r.recall.ids)
            if r.summary_id:
                summaries.add(r.summary_id)
        for m in _MESSAGE.finditer(self.data):
            if int(m.group(1)) in turns:
                event = parse_event(_line_at(self.data, m.start()))
                if isinstance(event, ContributionAdded):
                    index.add_contribution(event.contribution)
        for cid in ids - index.contributions.keys():
            for line in self._event_with(b'"id":"%s"' % cid.encode(), b'"type":"contribution_added"'):
                event = parse_event(line)
                if isinstance(event, ContributionAdded):
                    index.add_contribution(event.contribution)
        for sid in summaries:
            for line in self._event_with(b'"id":"%s"' % sid.encode(), b'"type":"summary_added"'):
                event = parse_event(line)
                if isinstance(event, SummaryAdded):
                    index.summaries[event.summary.id] = event.summary
        if not turns <= {c.round for c in index.contributions.values() if c.type == "message"}:
            return None  # something the views name is not in the log as expected
        if not summaries <= index.summaries.keys() or not ids <= index.contributions.keys():
            return None
        return chosen, index

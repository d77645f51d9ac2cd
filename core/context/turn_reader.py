"""What one conversation turn's views need, read straight from the event log.

`moot context ID --turn T` must answer quickly, and in little memory, on a 10,000-turn debate.
Folding the whole state costs time and memory in proportion to the debate; the log is
append-only and every line is one event, so the calls of turn T (and a call's tool-loop steps)
are found by looking at each line's bytes and parsing only those, then the summary they carried
and the messages in their windows are gathered in a second pass (`log_index`). Both look only at
the lines the debate's line index names (`line_index`: a cache of offsets beside the log, built
or extended first), so a turn of a 100,000-turn debate is read in a few reads, not 300 MB; where
that index cannot be had, both read the whole log a line at a time. Memory holds what the views
show, never the log. The same `render_messages` then rebuilds the views, so what is shown is
what was sent.

The calls are those the folded state files under the turn, as `apply` does: a call recorded
at step 0 (a clarifying question, asked before turn 1) belongs to turn 1, and a call made again
after a resume replaces the first, in the place of the last.

`read` gives None — "fold the whole state instead" — only for a log moot did not write as it
does: a first line that is not a `debate_started` event, or a view naming a contribution, a
summary or a turn's message the log does not hold. Then the fold either finds them after all
or names what is wrong with the log in one line; a log moot wrote never comes to that.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from ..agents import require_agent
from ..errors import InspectError
from ..events import CallContinued, CallStarted, DebateStarted
from ..models.state import ViewRecord
from ..storage.files import open_regular
from ..storage.folder import DebateFolder
from .index import DebateIndex
from .line_index import IndexLost, LineIndex
from .log_index import Needs, gather, parse_line


class TurnReader:
    """Views of one turn, from the log alone; None from `read` means "fold the state instead"."""

    def __init__(self, folder: DebateFolder) -> None:
        self.folder = folder

    def _lines(self) -> Iterator[bytes]:
        with os.fdopen(open_regular(self.folder.events_path), "rb") as fh:
            yield from fh

    def _started(self) -> DebateStarted | None:
        with os.fdopen(open_regular(self.folder.events_path), "rb") as fh:
            started = parse_line(fh.readline())
        return started if isinstance(started, DebateStarted) else None

    def _records(self, turn: int, lines: Iterable[bytes]) -> dict[str, ViewRecord]:
        """The calls the fold files under `turn`, with their tool-loop steps, in its order, from
        `lines` (the log's, or those of it the line index names)."""
        steps = [turn, 0] if turn == 1 else [turn]
        needles = [b'"round":%d,"phase":"' % n for n in steps]
        records: dict[str, ViewRecord] = {}
        for line in lines:
            if b'"type":"call_started"' in line and any(n in line for n in needles):
                event = parse_line(line)
                if isinstance(event, CallStarted) and max(1, event.view.round) == turn and (
                        event.view.phase != "synthesis" or event.view.round):
                    records.pop(event.view.call_id, None)  # made again after a resume: the last one
                    records[event.view.call_id] = event.view
            elif records and b'"type":"call_continued"' in line:
                event = parse_line(line)
                if isinstance(event, CallContinued) and max(1, event.round) == turn:
                    record = records.get(event.call_id)
                    if record is not None:  # a call's tool loop: its steps, as the folded state adds them
                        if len(record.tool_steps) <= event.step.index:
                            record.tool_steps.append(event.step)
                        record.tokens, record.tools = event.tokens, list(event.tools)
        return records

    def read(self, turn: int, agent: str | None, phase: str | None) -> tuple[list[ViewRecord], DebateIndex] | None:
        started = self._started()
        if started is None:
            return None
        if started.protocol != "conversation":
            raise InspectError(f"debate {self.folder.id} is a {started.protocol} debate: use --round, not --turn")
        agent_id = None
        if agent:
            agent_id = require_agent(agent, started.agents, started.judge, where=f" in debate {self.folder.id}").id
        lines = LineIndex.open(self.folder.path, self.folder.events_path)
        if lines is not None:
            with lines:
                try:
                    return self._views(turn, started, agent_id, phase, lines)
                except IndexLost:
                    pass  # (it could not be read after all: the log line by line, as without one)
        return self._views(turn, started, agent_id, phase, None)

    def _views(self, turn: int, started: DebateStarted, agent_id: str | None, phase: str | None,
               lines: LineIndex | None) -> tuple[list[ViewRecord], DebateIndex] | None:
        records = self._records(turn, self._lines() if lines is None else lines.call_lines(turn))
        if not records:
            raise InspectError(f"no calls recorded at turn {turn} of debate {self.folder.id} "
                               f"({started.total_rounds} turns)")
        chosen = [r for r in records.values() if (agent_id is None or r.agent_id == agent_id)
                  and (phase is None or r.phase == phase)]
        if agent_id is not None and not chosen:
            raise InspectError.not_at_turn(agent_id, turn, [(r.agent_id, r.phase) for r in records.values()])
        index = DebateIndex()
        index.on_event(started)
        needs = Needs.of(chosen)
        gather(self.folder.events_path, index, needs, None if lines is None else lines.needed_lines(needs))
        return (chosen, index) if needs.met_by(index) else None


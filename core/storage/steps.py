"""A debate's steps read back from its event log, one at a time: what reports, `moot show` and a
view that reaches back past what the state holds (see `archive`) read, in bounded memory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..events import RoundStarted
from ..models.state import Contribution, Round
from .archive import archive_steps
from .log import numbered_events
from .state import apply, new_state


def read_steps(events_path: Path) -> Iterator[Round]:
    """Every step of the debate in `events_path`, in order, folded from the log and given one at
    a time: memory holds two steps, however long the debate."""
    state = new_state(events_path.parent.name)
    for _, event in numbered_events(events_path):
        apply(state, event, bounded=False)
        if isinstance(event, RoundStarted):
            # A step's events all come before the step after next begins.
            yield from archive_steps(state, event.round - 2)
    yield from archive_steps(state, state.round_count)


def contributions_of(events_path: Path, through: int) -> Iterator[Contribution]:
    """The contributions of steps 1..`through`, read from the log (for a view that reaches back
    past what the state holds: a summary redone whole)."""
    for step in read_steps(events_path):
        if step.number > through:
            return
        yield from step.contributions

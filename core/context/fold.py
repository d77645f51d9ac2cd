"""One fold of the event stream into a debate's state and its index.

The engine and the live TUI both keep a state and an index current as events arrive; they
must change them the same way, in the same order, or what a screen shows drifts from what the
engine builds views from. Both go through `Fold.apply`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..events import Event, Token
from ..models.state import DebateState
from ..storage.state import apply
from .index import DebateIndex


class Fold:
    """A debate's state and index, moved forward one event at a time."""

    def __init__(self, state: DebateState, index: DebateIndex | None = None,
                 on_archive: Callable[[], None] | None = None) -> None:
        """`on_archive`: called after older steps were let go (what else holds them forgets them)."""
        self.state = state
        self.index = index if index is not None else DebateIndex(state)
        self.on_archive = on_archive

    def apply(self, event: Event) -> None:
        """The event applied to the state, then to the index; when the state let older steps go
        (they are in the log), the index lets them go too."""
        if isinstance(event, Token):
            return  # streamed text changes neither the state nor the index
        archived = self.state.archived_rounds
        apply(self.state, event)
        self.index.on_event(event)
        if self.state.archived_rounds != archived:
            self.index.archive(self.state.archived_rounds)
            if self.on_archive is not None:
                self.on_archive()

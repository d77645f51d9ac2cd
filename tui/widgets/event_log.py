"""The event log: phases, contributions, summarizations, warnings and errors, newest last."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import RichLog

from ...core.events import DebateStarted, Event
from ...core.observe.describe import LineKind, describe
from ...core.safety.sanitize import terminal_safe
from ..format import clock_time
from .scroll_range import ScrollRangeOnly

STYLES: dict[LineKind | str, tuple[str, str]] = {
    "phase": ("", "bold"),
    "summary": ("accent", ""),
    "manual": ("accent", "bold"),
    "warning": ("warning", ""),
    "error": ("error", "bold"),
    "done": ("success", "bold"),
    "control": ("primary", ""),
}
"""kind → (theme colour, text style); colours follow the theme in use when the line is written."""


class EventLog(RichLog, ScrollRangeOnly):
    """A bounded log (the oldest lines go first), one line per notable event; a new line
    changes the scroll range, not the layout of the screen (`ScrollRangeOnly`)."""

    MAX_LINES = 1000

    def __init__(self, **kwargs: Any) -> None:
        # min_width: RichLog renders at least 78 cells wide by default, wider than an 80-column
        # terminal leaves it (a horizontal scrollbar would take one of its few lines).
        super().__init__(max_lines=self.MAX_LINES, wrap=True, markup=False, highlight=False, min_width=20, **kwargs)
        self.start_ts: float | None = None

    def add_event(self, event: Event) -> None:
        if isinstance(event, DebateStarted) or self.start_ts is None:
            self.start_ts = event.ts
        line = describe(event)
        if line is not None:
            self.add_line(line.text, line.kind, event.ts)

    def add_line(self, text: str, kind: str = "info", ts: float | None = None) -> None:
        offset = clock_time(ts - self.start_ts) if ts is not None and self.start_ts is not None else "--:--"
        line = Text(f"{offset} ", style="dim")
        line.append(terminal_safe(text), style=self._style(kind))
        self.write(line)

    def _style(self, kind: str) -> str:
        colour, style = STYLES.get(kind, ("", ""))
        value = getattr(self.app.current_theme, colour, None) if colour else None
        return f"{style} {value}".strip() if value else style

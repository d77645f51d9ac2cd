"""The debate screen's geometry: how many columns and rows of agent panes fit a terminal.

A grid of agent panes, or, when they cannot all show text, one pane beside the roster of
agents (the focus layout). Pure functions of the size, so a test can ask them directly; the
panes part (`debate_panes.py`) applies them.
"""

from __future__ import annotations

import math

MIN_PANE_WIDTH = 38
MIN_PANE_HEIGHT = 8
GRID_CHROME = 13
"""Rows that are not panes: header, event log (8), feedback, command line, footer, a spare."""
FOCUS_CHROME = 8
"""The same in the focus layout, whose event log is 4 rows."""
SHORT_HEIGHT = 34
"""Below this the event log keeps 3 lines instead of 7."""
NARROW_WIDTH = 120
"""Below this the header drops the model (each pane names its own)."""
TINY_WIDTH = 100
"""Below this the header drops the elapsed time too, and the roster is narrower."""


def grid_shape(n: int, width: int, height: int) -> tuple[int, int]:
    """(columns, rows) for n panes: cells near a 2.6:1 shape, few empty cells, none too narrow."""
    if n <= 0:
        return 1, 1
    max_cols = max(1, min(n, width // MIN_PANE_WIDTH))
    best: tuple[float, int] = (math.inf, 1)
    for cols in range(1, max_cols + 1):
        rows = math.ceil(n / cols)
        pane_w, pane_h = width / cols, max(1.0, height / rows)
        score = abs(math.log((pane_w / pane_h) / 2.6)) + 0.3 * (cols * rows - n)
        if pane_h < MIN_PANE_HEIGHT:
            score += 2.0
        best = min(best, (score, cols))
    cols = best[1]
    return cols, math.ceil(n / cols)


def needs_focus_layout(n: int, width: int, height: int) -> bool:
    """True when n panes cannot all show text: one pane is shown with the roster beside it."""
    if n <= 1:
        return False
    cols, rows = grid_shape(n, width, height)
    return height / rows < MIN_PANE_HEIGHT or width / cols < MIN_PANE_WIDTH

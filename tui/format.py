"""Small text helpers shared by the widgets (numbers, times, labels, the solution)."""

from __future__ import annotations

from ..core.models.state import Solution
from ..core.observe.describe import PHASE_LABELS, k, usd
from ..core.observe.printer import solution_markdown

__all__ = ["PHASE_LABELS", "clock_time", "contribution_title", "first_line", "k", "solution_markdown",
           "solution_title", "usd"]


def dom_id(prefix: str, agent_id: str) -> str:
    """A widget id for an agent: agent ids may hold `.`, which Textual ids may not."""
    return f"{prefix}-{agent_id.replace('.', '_')}"


def clock_time(seconds: float) -> str:
    """mm:ss, or h:mm:ss past an hour."""
    s = max(0, int(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def first_line(text: str, limit: int = 120) -> str:
    for line in text.strip().splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def contribution_title(kind: str, round_no: int, target: str | None = None) -> str:
    arrow = f" → {target}" if target else ""
    return f"R{round_no} {kind}{arrow}"


def solution_title(solution: Solution) -> str:
    if solution.tally is not None and solution.confidence is None:  # a vote, a single answer: no judge
        return f"Final answer · {solution.tally.summary()}"
    conf = f"{solution.confidence}/100" if solution.confidence is not None else "n/a"
    return f"Final solution · confidence {conf}"

"""The bench dashboard's plot: accuracy against tokens per question, one numbered point per
protocol (its number is the one beside its name in the protocols table and the legend), the
points on the Pareto front in bold red: the protocols no other beats on both accuracy and tokens."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from ...core.safety.sanitize import one_line_safe

FRONT_STYLE = "bold red"


def plot_text(names: Sequence[str], points: Sequence[tuple[float, float] | None], front: set[int],
              width: int = 40, height: int = 7) -> Text:
    """`points`: (tokens per question, accuracy 0–1) of each protocol in table order (marked 1, 2, …;
    None: nothing finished yet), `names` theirs (a legend right of the plot); `front`: the indices on
    the Pareto front. A y axis of accuracy, an x axis from 0 to the most tokens per question."""
    xmax = max([p[0] for p in points if p is not None] + [1.0])
    grid = [[" "] * width for _ in range(height)]
    styles: dict[tuple[int, int], str] = {}
    for i, point in enumerate(points):
        if point is None:
            continue
        tokens, accuracy = point
        col = min(width - 1, round((width - 1) * tokens / xmax))
        row = height - 1 - min(height - 1, round((height - 1) * accuracy))
        mark = str(i + 1) if i < 9 else "+"
        grid[row][col] = mark if grid[row][col] == " " else "*"  # two protocols in one cell
        if i in front:
            styles[(row, col)] = FRONT_STYLE
    out = Text()
    for r, cells in enumerate(grid):
        label = "100%" if r == 0 else "  0%" if r == height - 1 else " 50%" if r == (height - 1) // 2 else "    "
        out.append(f"{label} │")
        for c, ch in enumerate(cells):
            out.append(ch, style=styles.get((r, c), ""))
        if r < len(names):
            point = points[r]
            out.append(f"  {r + 1} {one_line_safe(names[r], 20)}", style=FRONT_STYLE if r in front else "")
            if point is not None:
                out.append(f"  {100 * point[1]:.1f}% · {point[0]:,.0f} tokens/q", style="dim")
        out.append("\n")
    axis = f"{xmax:,.0f} tokens/q"
    out.append("     └" + "─" * width + "\n")
    out.append("      0" + axis.rjust(width - 1) + "\n")
    out.append("      ")
    out.append("red", style=FRONT_STYLE)
    out.append(": the Pareto front (no other protocol is as accurate for fewer tokens)", style="dim")
    return out


class BenchPlot(Static):
    """The plot, redrawn by the dashboard as questions finish."""

    text = Text()
    """What the plot shows now."""

    def show(self, names: Sequence[str], points: Sequence[tuple[float, float] | None], front: set[int]) -> None:
        self.text = plot_text(names, points, front)
        self.update(self.text)

"""Small text helpers shared by the widgets (numbers, times, labels, the solution)."""

from __future__ import annotations

from core.models import Solution

PHASE_LABELS = {
    "summarize": "summarization",
    "proposal": "proposals",
    "critique": "critiques",
    "refinement": "refinements",
    "synthesis": "synthesis",
    "clarify": "clarifications",
    "score": "convergence check",
}


def k(n: int | float) -> str:
    """Compact token counts: 812, 5.2k, 7k, 1.3M."""
    n = int(n)
    if abs(n) < 1000:
        return str(n)
    if abs(n) < 1_000_000:
        v = n / 1000
        return f"{v:.0f}k" if v >= 100 or v == int(v) else f"{v:.1f}k"
    v = n / 1_000_000
    return f"{v:.1f}M"


def usd(amount: float) -> str:
    """Dollars: $0.0123 below a dollar, $0.05 for whole cents, $12.34 from a dollar up."""
    cents = amount * 100
    if amount >= 1 or abs(cents - round(cents)) < 1e-9:
        return f"${amount:.2f}"
    return f"${amount:.4f}"


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
    conf = f"{solution.confidence}/100" if solution.confidence is not None else "n/a"
    return f"Final solution · confidence {conf}"


def solution_markdown(solution: Solution) -> str:
    parts = [solution.description.strip()]
    for title, items in (("Trade-offs", solution.tradeoffs), ("Recommendations", solution.recommendations),
                         ("Unresolved", solution.unresolved)):
        if items:
            parts += ["", f"### {title}", ""] + [f"- {x}" for x in items]
    return "\n".join(parts) + "\n"

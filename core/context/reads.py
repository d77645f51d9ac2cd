"""What an agent read with tools, as part of its perspective history and of its summaries.

A contribution keeps one seed-002 extract per tool result its call read (`Contribution.reads`).
In the agent's own history items they follow the text, so an LLM summary reads them like the
rest; and every summary opens with the extracts of what it covers (the rule-based part, first,
whatever the method), merged with those of the summary it rolls forward, newest kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..models.state import Contribution

READS_HEAD = "Sources read with tools:"
MAX_READS_IN_ITEM = 8
MAX_READS_IN_SUMMARY = 10


def reads_note(c: Contribution) -> str:
    """The lines an item's text is followed by in its author's history (empty: it read nothing)."""
    if not c.reads:
        return ""
    shown = c.reads[-MAX_READS_IN_ITEM:]
    more = len(c.reads) - len(shown)
    lines = [f"- {r}" for r in shown] + ([f"- … and {more} earlier"] if more else [])
    return "\n\n" + READS_HEAD + "\n" + "\n".join(lines)


def _previous_reads(summary: str) -> list[str]:
    if not summary.startswith(READS_HEAD):
        return []
    block = summary.split("\n\n", 1)[0]
    return [line[2:] for line in block.splitlines()[1:] if line.startswith("- ")]


def _without_reads(summary: str) -> str:
    return summary.split("\n\n", 1)[1] if summary.startswith(READS_HEAD) and "\n\n" in summary else summary


def with_reads(text: str, items: Sequence[Contribution], previous: str | None, max_chars: int) -> str:
    """`text` opened by the extracts of what the covered items (and the previous summary) read,
    taking at most a quarter of `max_chars`; `text` as it is when nothing was read."""
    reads = _previous_reads(previous or "")
    for c in items:
        reads += [r for r in c.reads if r not in reads]
    body = _without_reads(text)
    if not reads:
        return body
    lines: list[str] = []
    room = max_chars // 4 - len(READS_HEAD) - 1
    for r in reversed(reads[-MAX_READS_IN_SUMMARY:]):
        if room - len(r) - 3 < 0:
            break
        lines.insert(0, f"- {r}")
        room -= len(r) + 3
    if not lines:
        return body
    return READS_HEAD + "\n" + "\n".join(lines) + "\n\n" + body

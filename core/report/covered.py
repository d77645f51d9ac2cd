"""What a summary stands in for, in words, for a report read a step at a time.

A perspective summary covers a prefix of its agent's perspective (its own items and the
critiques aimed at it, in the index's canonical order) up to `covered_through`. Written out
while the steps stream past, the perspectives seen so far are enough: a summary made in step
`r` covers nothing after step `r`, and every item ordered before what it covers belongs to a
step no later than that one. So only each item's key, id and label are kept, never its text.
"""

from __future__ import annotations

from bisect import bisect_right

from ..context.index import DebateIndex, Key
from ..models.state import Contribution, DebateState, Summary


class Covered:
    """Perspectives as the steps go by, and `text(summary)` for the report."""

    def __init__(self, state: DebateState, keys: DebateIndex) -> None:
        self.keys = keys
        """Orders items as the debate's index does (it needs only the people, not the items)."""
        self._items: dict[str, tuple[list[Key], list[str], list[str]]] = {}
        self._seen: set[str] = set()
        # A conversation's summaries cover turns (scope "conversation"), save the judge's summary
        # of the end: only the judge's perspective can be asked for there (kept, though it holds
        # nothing in a conversation), so memory does not grow with its turns.
        self._only = state.judge.id if state.protocol == "conversation" and state.judge else None

    def add(self, contributions: list[Contribution]) -> None:
        for c in contributions:
            owner = c.target_agent_id if c.type == "critique" else c.agent_id
            if not owner or c.id in self._seen or (self._only is not None and owner != self._only):
                continue
            self._seen.add(c.id)
            keys, ids, labels = self._items.setdefault(owner, ([], [], []))
            key = self.keys.key(c)
            i = len(keys) if not keys or key >= keys[-1] else bisect_right(keys, key)
            by = f" from {c.agent_id}" if c.type == "critique" else ""
            keys.insert(i, key)
            ids.insert(i, c.id)
            labels.insert(i, f"r{c.round} {c.type}{by}")

    def text(self, s: Summary) -> str:
        """What `s` stands in for: the items of the perspective (or the turns) it covers."""
        if s.scope == "conversation":
            return f"turns 1–{s.covered_count}" if s.covered_count else "nothing yet"
        _, ids, labels = self._items.get(s.agent_id, ([], [], []))
        if s.covered_through not in ids:
            return f"{s.covered_count} items" if s.covered_count else "nothing yet"
        n = ids.index(s.covered_through) + 1
        shown = ", ".join(labels[max(0, n - 12): n])
        more = f"{n - 12} older, " if n > 12 else ""
        return f"{n} items: {more}{shown}"

"""`recall(query)`: the recall tier as a tool a model calls itself (OpenAI function calling).

The tier recalls what the latest messages point at; a model that wants something else back —
a name it half remembers, a number from long ago — asks for it. The tool searches the same
texts the tier may bring back, and more: everything the calling agent could have read before
this call (a conversation's earlier messages; an agent's own perspective history in `rounds`
and `simultaneous`) that its view does not hold verbatim. Answers are the matching items
verbatim (a passage around the match for a long one), labelled with turn or round and speaker,
capped in tokens. Like every tool answer it never raises: a bad argument is one line the model
can read and correct.

It depends only on the call's inputs (`moot.core.search.recall`): asked twice, it answers the
same. `RECALL` is the tool as declared (a `moot.core.tools.registry.Tool`, like the reference
tools); `RecallTool.tool()` binds it to one call: the call engine builds a `RecallTool` per call
with tools whose view a summary stands in for part of, and `Grounding.toolbox` offers it beside
the reference tools (`moot.core.engine.grounding`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from .. import tokens
from ..context.index import DebateIndex
from ..context.recall_tier import MIN_PASSAGE_CHARS, item_block, passage
from ..models.state import Contribution, ViewRecord
from ..search.recall import SCAN, Postings, RecallScope, query_words, rank
from ..tools.extracts import recall_facts
from ..tools.registry import Tool, ToolOutput
from ..tools.signature import Bounds


# The declaration: the model sees this name, docstring and signature; `RecallTool.run` answers.
def recall(query: str, limit: Annotated[int, Bounds(1, 8)] = 4) -> None:
    """Search this debate's earlier messages that are no longer in your context (the summary
    stands in for them) for a name, a number or a few words; returns each match verbatim
    with its turn or round and speaker.

    Args:
        query: a name, a number or a few distinctive words
        limit: at most this many matches (1-8, default 4)
    """


RECALL = Tool.declare(recall, recall_facts)
"""The tool as offered; `RecallTool.tool()` is it bound to one call's search."""
RECALL_NAME = RECALL.name
RECALL_DESCRIPTION = RECALL.description
RECALL_PARAMETERS: dict[str, Any] = RECALL.parameters
RESULT_TOKENS = 1500
MAX_QUERY_CHARS = 4000
PERSPECTIVE = ("proposal", "critique", "refinement", "answer")


class RecallTool:
    """`recall(query)` for one call of one agent (see the module doc)."""

    def __init__(self, search: Postings, index: DebateIndex, owner: str, model: str, scope: RecallScope,
                 in_view: Sequence[str] = (), result_tokens: int = RESULT_TOKENS,
                 label: Callable[[Contribution], str] | None = None) -> None:
        self.search = search
        self.index = index
        self.owner = owner
        self.model = model
        self.scope = scope
        self.in_view = list(in_view)
        self.result_tokens = result_tokens
        self.label = label or self._label

    @classmethod
    def for_view(cls, search: Postings, index: DebateIndex, record: ViewRecord,
                 history: Sequence[Contribution] = ()) -> RecallTool:
        """The tool for the call `record` describes: what its agent could have read before it."""
        from ..context.view import history_ids

        in_view = [*history_ids(record, index), *(c.id for c in history), *record.task_contribution_ids]
        if record.phase == "turn":
            before = record.round - 1
            scope = RecallScope(("message",), before, max(0, before))
        else:
            own = index.perspective_items(record.agent_id, (record.round, 0))
            scope = RecallScope(PERSPECTIVE, record.round - 1, len(own), frozenset(c.id for c in own))
        return cls(search, index, record.agent_id, record.model, scope, in_view)

    def _label(self, c: Contribution) -> str:
        from ..context.view import item_label

        return item_label(c, self.owner, self.index)

    async def __call__(self, name: str, arguments: Mapping[str, Any]) -> ToolOutput:
        return self.run(arguments)

    def tool(self) -> Tool:
        """`recall` run by this call's search."""
        return RECALL.bound(self)

    def run(self, arguments: Mapping[str, Any]) -> ToolOutput:
        query = arguments.get("query")
        limit = arguments.get("limit", 4)
        if isinstance(limit, str) and limit.strip().isdigit():
            limit = int(limit)  # small models quote numbers
        if not isinstance(query, str) or not query.strip():
            return ToolOutput("error: 'query' must be a non-empty string", False, "no query")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 8:
            return ToolOutput("error: 'limit' must be a whole number from 1 to 8", False, "bad limit")
        words = query_words([query[:MAX_QUERY_CHARS]])
        if not words:
            return ToolOutput(f"nothing to search for in {query[:80]!r}: give a name, a number or a few words",
                                False, "no words")
        ranking = rank(self.search, words, self.scope, exclude=self.in_view, rare=SCAN, share=1.0)
        blocks: list[str] = []
        unread = 0  # found by the index, but not read back from the log (a damaged log)
        left = self.result_tokens
        for found in ranking.found:
            if len(blocks) >= limit or left < 64:
                break
            c = self.index.contributions.get(found.doc_id)
            if c is None:
                unread += 1
                continue
            block = item_block(c, None, self.label(c))
            n = tokens.count_text(block, self.model)
            if n > left or n > self.result_tokens // 2 and len(c.content) > MIN_PASSAGE_CHARS:
                block = item_block(c, passage(c.content, found.terms, max(MIN_PASSAGE_CHARS, min(left, 400) * 4)),
                                   self.label(c))
                n = tokens.count_text(block, self.model)
                if n > left:
                    continue
            blocks.append(block)
            left -= n
        lost = (f" ({unread} more matched but could not be read back from the debate's log)" if unread else "")
        if not blocks:
            return ToolOutput(f"no earlier message out of your context matches {query[:80]!r}{lost}", True,
                                f"no match{lost}")
        head = f"{len(blocks)} earlier message{'s' if len(blocks) != 1 else ''} (verbatim, best match first){lost}:"
        return ToolOutput("\n\n".join([head, *blocks]), True,
                            f"{len(blocks)} match{'es' if len(blocks) != 1 else ''} for {query[:40]!r}{lost}")

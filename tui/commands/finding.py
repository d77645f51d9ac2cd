"""`/search TEXT`: the debate's messages, contributions, summaries and notes that hold these words."""

from __future__ import annotations

import sqlite3

from ...core.errors import StoreError
from .base import CommandContext, CommandError, UsageError

LIMIT = 50


def search(ctx: CommandContext, text: str | None = None) -> None:
    """Open the hits of `text` in this debate's search index, best first (enter: the message in the
    messages view). Texts the screen has not shown yet (a replay still playing) are left out."""
    from ...core.search.debates import search_debates
    from ...core.search.index import match_expression

    if not text or match_expression(text) is None:
        raise UsageError("give words to find")
    path = ctx.runtime.debate_path
    if path is None:
        raise CommandError("the debate is not saved yet: nothing to search")
    try:
        results = search_debates([path], text[:10_000], limit=LIMIT)
    except (StoreError, sqlite3.Error, OSError) as exc:
        raise CommandError(f"cannot search this debate: {exc}") from None
    if results.notes:
        raise CommandError(results.notes[0].split(": ", 1)[-1])
    index = ctx.index
    hits = [dh for dh in results.hits if dh.hit.doc_id in index.contributions or dh.hit.doc_id in index.summaries
            or any(n.id == dh.hit.doc_id for n in ctx.state.notes)]
    if not hits:
        raise CommandError(f"no match for {text[:60]!r}")
    ctx.feedback("")
    ctx.open_search_results(text, hits)

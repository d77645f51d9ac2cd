"""The recall tier: old items a view's summary covers, brought back verbatim when the debate returns to them.

A rolling summary has a price: agents forget the specific details of what was said hundreds
of turns ago. The full transcript is on disk and in the debate's search index
(`moot.core.search`); this tier asks it, for each call, which items the summary covers that
share the rare words of what is said now — the latest messages of the verbatim window and the
call's task (`query_texts`) — and puts the best of them, verbatim, after the window (where
a new query each call leaves the window's prefix to the provider's cache; debates of view
layout 1 had them before it, see `moot.core.context.view`):

    system · summary · verbatim window · RECALL · task

In view layout 3 a conversation's block then stays where it was sent: the same speaker's next
views hold it after the messages before its turn, and the window goes on after it (like a
tool's result in an agent's history), while the summary it was recalled beside stands
(`held_blocks`; a new summary changes everything after the system message anyway). Each
request then repeats the speaker's previous one up to its task, recall included, and only the
newest block is new. An item a held block shows counts toward the cap and is not sent again
(`Recaller.choose`), and a view that goes on beside the same summary searches only the words
its latest messages bring that the rest of the window does not hold (`RecallRequest.new_words`:
the others were searched when they came, and what they found is held). Held blocks are part
of the view's budget, not the verbatim window's cap (counted there, they rolled the summary
sooner, and a roll costs every speaker a request with only its system message cached: see
`bench/README.md`); a view that cannot hold them rolls its window as any view that does not fit.

Its size is capped (`RecallRequest.tokens`: about a tenth of the window, which a
conversation takes from its verbatim window's share), whole items first and, for an item
too long for what is left, the passage around its match (at least `MIN_PASSAGE_CHARS`
characters). An item holding a fact a summary dropped (`Summary.dropped_facts`) comes first when the
query returns to that fact (`moot.core.search.recall.rank_dropped`). It never holds an item
already in the view, and it is the first tier to give
way when the view does not fit (see `moot.core.context.view`).

What was recalled is recorded (`ViewRecord.recall`: ids, passages, scores, the words
searched), and `recall_message` rebuilds the block from that record alone, so `moot context`
shows the exact request without searching again. The search depends only on the call's
inputs (`moot.core.search.recall`), so a view is the same whatever the timing of the calls
beside it.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import tokens
from ..models.state import Contribution, HeldItem, HeldRecall, RecalledItem, RecallRecord, ViewRecord
from ..providers.base import Message
from .index import DebateIndex

if TYPE_CHECKING:
    from ..search.recall import Postings, RecallScope

# The search and the facts a summary dropped are imported by the `Recaller`, which chooses a live
# call's tier: rebuilding a recorded view (`moot context`) only renders what was chosen.

QUERY_ITEMS = 2
"""The latest verbatim items whose words (with the task's) make the query."""
MIN_PASSAGE_CHARS = 400
"""A passage of a long item holds at least this many characters around its match."""
MAX_ITEMS = 8
HEADER_MARGIN = 12
"""Tokens of the message's own framing on top of its blocks (role, joints)."""
PASSAGE = "passage"
WORDS_KEPT = 512
"""Items whose words are kept, the most recently asked for: those of the windows, asked for at
every call (a few dozen a reader). One item's words take ~10 KB: at 20,000 the cache was the
largest thing a long debate held (~200 MB)."""
BLOCKS_KEPT = 4096
"""Token counts of recalled blocks kept, the most recently asked for (a few hundred bytes each)."""

Label = Callable[[Contribution], str]


@dataclass(frozen=True)
class RecallRequest:
    """A protocol asks for a recall tier: which items may come back, and how many tokens it has."""

    scope: RecallScope
    tokens: int
    """The cap of this call's new block (the held ones are part of the verbatim window's share)."""
    held: tuple[HeldRecall, ...] = ()
    """The reader's earlier blocks its window still holds (layout 3): kept in place, not recalled again."""
    new_words: bool = False
    """Search only the words the latest messages bring that the rest of the window does not hold
    (layout 3): a word already in the window was searched when it came, and what it recalled is held."""


def header(record: ViewRecord) -> str:
    # A conversation's turn, or a summarize request that continues one (layout 6): its words.
    if record.phase == "turn" or "summarize_conversation" in record.task_key:
        return ("## Recalled from earlier in the conversation (verbatim, oldest first; the summary covers these "
                "turns, and the latest messages return to them)")
    return ("## Recalled from your earlier debate (verbatim, oldest first; your summary covers these items, and "
            "the debate returns to them)")


def item_text(c: Contribution, span: tuple[int, int] | None) -> str:
    """An item's content, or its passage with a mark where it was cut."""
    if span is None:
        return c.content.strip()
    a, b = span
    before = "… " if a > 0 else ""
    after = " …" if b < len(c.content) else ""
    return f"{before}{c.content[a:b].strip()}{after}"


def item_block(c: Contribution, span: tuple[int, int] | None, label: str) -> str:
    return f"### {label}{f' · {PASSAGE}' if span is not None else ''}\n\n{item_text(c, span)}"


def block_message(record: ViewRecord, index: DebateIndex, items: Sequence[RecalledItem | HeldItem],
                  label: Label) -> Message:
    """One recall block: the header, then its items oldest first. The same items make the same
    bytes whether the block is this call's or one a later call of the reader holds (layout 3)."""
    ordered = sorted(items, key=lambda it: (index.key(index.contributions[it.id]), it.id))
    blocks = [item_block(index.contributions[it.id], it.span, label(index.contributions[it.id])) for it in ordered]
    return {"role": "user", "content": "\n\n".join([header(record), *blocks])}


def recall_message(record: ViewRecord, index: DebateIndex, label: Label) -> Message | None:
    """This call's recall block, rebuilt from the record (None when it recalled nothing)."""
    recall = record.recall
    if recall is None or not recall.items:
        return None
    return block_message(record, index, recall.items, label)


def held_blocks(previous: ViewRecord | None, first_turn: int) -> list[HeldRecall]:
    """The recall blocks a reader's next view holds (layout 3): those its previous view held and
    the one it added, each where it was sent, while a message of the window still precedes it
    (a block made at turn t sits after turn t - 1: it rolls out with the messages before it)."""
    if previous is None or previous.recall is None:
        return []
    recall = previous.recall
    blocks = list(recall.held)
    if recall.items:
        blocks.append(HeldRecall(turn=previous.round, items=[HeldItem(id=it.id, span=it.span) for it in recall.items]))
    return [b for b in blocks if b.turn > first_turn]


def query_texts(history: Sequence[Contribution], record: ViewRecord, task: str, template: str) -> list[str]:
    """What a view is about now: its latest verbatim items (newest first), then the words of its
    task that are neither the task template's own nor its parameters (turn numbers, names): the
    quoted material, the moderator's notes."""
    fixed = " ".join([template, *(str(v) for v in record.task_params.values())])
    own = set(re.findall(r"\w+", fixed.lower()))
    variable = " ".join(w for w in re.findall(r"\w+", task) if w.lower() not in own)  # case kept: names first
    return [c.content for c in reversed(history[-QUERY_ITEMS:])] + [variable]


def passage(content: str, terms: Sequence[str], chars: int) -> tuple[int, int]:
    """About `chars` characters of `content` around the first place one of `terms` occurs (the
    rarest first; a word's stem when the word itself is not there), cut at spaces."""
    at = 0
    for term in terms:
        m = None
        for n in range(len(term), min(len(term), 4) - 1, -1):  # "caching" matched "cache": try its stem
            m = re.search(rf"(?<!\w){re.escape(term[:n])}", content, re.IGNORECASE)
            if m:
                break
        if m:
            at = m.start()
            break
    chars = min(len(content), max(MIN_PASSAGE_CHARS + 32, chars))  # the cuts at spaces take a few back
    start = max(0, min(at - chars // 3, len(content) - chars))
    end = min(len(content), start + chars)
    if 0 < start < at:
        space = content.find(" ", start, at)
        start = space + 1 if space != -1 else start
    if end < len(content):
        space = content.rfind(" ", max(start + 1, at + 1), end)
        end = space if space != -1 else end
    return start, end


class Recaller:
    """Chooses a view's recall tier from the debate's search index."""

    def __init__(self, search: Postings, index: DebateIndex, warn: Callable[[str, str], None] | None = None) -> None:
        from ..search.recall import CachedPostings

        self.search = CachedPostings(search)
        self.index = index
        self.warn = warn
        """(agent id, message): an item found that could not be read back (never skipped silently)."""
        self._tokens: OrderedDict[tuple[str, tuple[int, int] | None, str, str], int] = OrderedDict()
        """(item, passage, label, model) → tokens of its block (items never change once written)."""
        self._words: OrderedDict[str, frozenset[str]] = OrderedDict()

    def words(self, c: Contribution) -> frozenset[str]:
        """The words of an item (cached: items never change once written)."""
        found = self._words.get(c.id)
        if found is not None:
            self._words.move_to_end(c.id)
            return found
        from ..search.recall import text_words

        found = self._words[c.id] = text_words(c.content)
        if len(self._words) > WORDS_KEPT:
            self._words.popitem(last=False)
        return found

    def choose(self, record: ViewRecord, request: RecallRequest, texts: Sequence[str], label: Label,
               exclude: Sequence[str] = (), known: Sequence[Contribution] = ()) -> RecallRecord | None:
        """The items to recall for `record` within `request.tokens` (None when nothing is found).

        The best items for the query, within the cap, as if none were held; those the reader's
        held blocks already show (`request.held`) take their share of the cap and are not sent
        again, so a query that still points where the last one did adds nothing new."""
        from ..search.recall import prefer_dropped, query_words, rank, rank_dropped
        from . import facts

        if request.tokens <= 0 or request.scope.population <= 0:
            return None
        words = every = query_words(texts)
        if known:  # `request.new_words`: the words the rest of the window holds were searched when they came
            said = frozenset().union(*(self.words(c) for c in known))
            words = [w for w in words if w not in said]
        # What a summary dropped and the latest messages return to comes first (the summary cannot
        # say it again), found by all their words: a fact is returned to by words said before too.
        latest = facts.plain(" ".join(texts))
        ranking = prefer_dropped(rank(self.search, words, request.scope, exclude=exclude),
                                 rank_dropped(self.search, every, request.scope,
                                              lambda fact: facts.returns_to(latest, fact), exclude=exclude))
        if not ranking.terms:
            return None
        model = record.model
        left = request.tokens - tokens.count_text(header(record), model) - HEADER_MARGIN
        shown = {it.id: it.span for b in request.held for it in b.items}
        chosen: list[RecalledItem] = []
        unread: list[str] = []
        taken = 0
        for found in ranking.found[: 2 * MAX_ITEMS]:
            if taken >= MAX_ITEMS or left < 48:
                break
            c = self.index.contributions.get(found.doc_id)
            if c is None:  # found by the index, yet neither held nor in the log (a damaged log)
                unread.append(found.doc_id)
                continue
            if not c.content.strip():
                continue
            if c.id in shown:  # already in the view, where an earlier call of the reader recalled it
                left -= self._block_tokens(c, shown[c.id], label(c), model)
                taken += 1
                continue
            span: tuple[int, int] | None = None
            n = self._block_tokens(c, None, label(c), model)
            if n > left:
                span, n = self._fit_passage(c, found.terms, left, label(c), model)
                if span is None:
                    continue
            left -= n
            taken += 1
            chosen.append(RecalledItem(id=c.id, score=found.score, terms=list(found.terms), span=span))
        if unread and self.warn is not None:
            self.warn(record.agent_id, f"{record.agent_id}: the recall tier could not read back {len(unread)} earlier "
                      f"item{'s' if len(unread) != 1 else ''} ({', '.join(unread[:4])}) from the event log; "
                      "this view was built without them")
        return RecallRecord(query=ranking.terms, items=chosen, cap=request.tokens, held=list(request.held))

    def _block_tokens(self, c: Contribution, span: tuple[int, int] | None, label: str, model: str) -> int:
        key = (c.id, span, label, model)
        n = self._tokens.get(key)
        if n is not None:
            self._tokens.move_to_end(key)
            return n
        n = self._tokens[key] = tokens.count_text(item_block(c, span, label), model) + 2
        if len(self._tokens) > BLOCKS_KEPT:
            self._tokens.popitem(last=False)
        return n

    def _fit_passage(self, c: Contribution, terms: Sequence[str], room: int, label: str,
                     model: str) -> tuple[tuple[int, int] | None, int]:
        """The longest passage (at least `MIN_PASSAGE_CHARS`) that fits `room` tokens; (None, 0) if none."""
        if len(c.content) <= MIN_PASSAGE_CHARS:
            return None, 0
        chars = room * 4
        for _ in range(6):
            span = passage(c.content, terms, chars)
            n = self._block_tokens(c, span, label, model)
            if n <= room:
                return span, n
            if chars <= MIN_PASSAGE_CHARS:
                break
            chars = max(MIN_PASSAGE_CHARS, int(chars * room / n * 0.95))
        return None, 0


def give_way(recall: RecallRecord, over: int, model: str, index: DebateIndex, label: Label) -> RecallRecord:
    """The tier less its lowest-scored items, enough to save about `over` tokens (a new record)."""
    items = list(recall.items)
    saved = 0
    while items and saved < over:
        last = items.pop()
        c = index.contributions[last.id]
        saved += tokens.count_text(item_block(c, last.span, label(c)), model) + 2
    if not items:
        saved = over
    return recall.model_copy(update={"items": items, "dropped": recall.dropped + len(recall.items) - len(items)})

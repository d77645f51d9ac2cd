"""Summarizing an agent's perspective history: methods, strategies, caps and overflow.

- methods: `llm` (role prompt on a model), `rule-based` (offline, extractive),
  `hybrid` (rule-based facts, then LLM prose);
- strategies: `fresh` feeds the whole perspective each time (the anchor's way);
  `rolling` feeds the previous summary plus only what aged out since, so the input
  stays bounded however long the debate;
- the summarization request itself must fit its budget: input that would not is
  split into chunks, each summarized, then the partial summaries are reduced
  (recursively);
- a failed LLM summary (provider error, empty, longer than its input) falls back to
  rule-based with a warning; error text never reaches a summary;
- a continuation (view layout 6, `SummaryJob.above`): a conversation's summary asked of the
  speaker whose turn rolls it, as its own turn view with the task after the window, so the
  request repeats that speaker's previous one; made the layout-5 way when it would not fit;
- append-only (a conversation's summary in view layout 4, a rounds agent's perspective in 5,
  `SummaryJob.tier_tokens`): the request still reads the previous summary, but its answer
  summarizes only what aged out and is appended as a new block (`blocks`); when the blocks
  outgrow the tier's cap, the oldest are consolidated into one (`consolidate`), by the same
  method and fallback, its facts read back and kept ahead of its prose (`consolidate.py`).

Over 400 lines: a summary written whole and one written as blocks share their methods, caps,
chunking and fallback, which are one decision kept in one place.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from .. import tokens
from ..clock import SYSTEM_CLOCK, Clock
from ..errors import ContextOverflow, ProviderError
from ..models.state import Contribution, HeldRecall, RecallRecord, Summary, SummaryBlock, SummaryMetadata, ViewRecord, join_blocks
from ..models.terms import SummaryMethod, SummaryStrategy, SummaryTrigger
from ..providers.base import Completion, Message
from .consolidate import consolidate_facts
from .facts import Covered, dropped_facts
from .index import DebateIndex
from .pins import pins_for
from .reads import with_reads
from .rule_based import SourceItem, summarize_rule_based
from .view import ViewBuilder, format_item, history_ids, item_label, render_messages


class CallFn(Protocol):
    """Makes one LLM call for a summarize record: (record, input budget, max_tokens) → completion,
    within `context_tokens` when given (else the agent's window). The caller builds the view from
    the record (so its provenance is recorded like any call's)."""

    def __call__(self, record: ViewRecord, budget: int, max_tokens: int, /,
                 context_tokens: int | None = None) -> Awaitable[Completion]: ...


@dataclass(frozen=True)
class Continuation:
    """Who asks for a conversation's summary, and from which view (layout 6): the speaker whose
    turn rolls it, with its verbatim window and held recall blocks as its turn would read them."""

    agent_id: str
    model: str
    task_key: str
    budget: int
    """The request's input budget on the speaker's model (`context_tokens`, the summary's reserve)."""
    reserve: int
    context_tokens: int | None
    window: list[Contribution]
    """The messages after the summary so far, oldest first: the turns to summarize, then the rest."""
    held: list[HeldRecall] = field(default_factory=list)


class SummaryRejected(Exception):
    pass


@dataclass
class SummaryJob:
    agent_id: str
    role: str
    round: int
    trigger: SummaryTrigger
    items: list[Contribution]
    """What to fold in: the whole perspective (fresh) or what aged out (rolling)."""
    previous: Summary | None
    """The summary being extended (rolling only)."""
    method: SummaryMethod
    strategy: SummaryStrategy
    max_chars: int
    max_tokens: int
    model: str
    budget: int
    """Input-token budget of the summarization request."""
    reserve: int
    system_key: str
    task_key: str
    summary_id: str
    judge: bool = False
    focus: str | None = None
    """What the user asked the summary to focus on (goes into the prompt; kept with the summary)."""
    params: dict[str, object] = field(default_factory=dict)
    scope: Literal["perspective", "conversation"] = "perspective"
    """More template parameters for the summarize prompt (e.g. a conversation's `lens`)."""
    tier_tokens: int = 0
    """Append-only: the cap of all blocks together (`max_tokens` is then one block's); 0: the
    summary is written whole."""
    tier_chars: int = 0
    above: Continuation | None = None
    """Layout 6: ask the speaker whose view this continues (None: the summary's owner, layout 5's way)."""

    @property
    def append(self) -> bool:
        return self.tier_tokens > 0

    @property
    def unit(self) -> Literal["round"] | None:
        """What its blocks count: a perspective's rounds (view layout 5), a conversation's turns."""
        return "round" if self.scope == "perspective" else None


COMPRESSION_LIMIT = 4.0
"""Ordinary prose (and a bulleted summary) compresses about 2–3:1 with zlib; a reply that
loops on itself compresses far more."""
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")


def degenerate(text: str) -> str | None:
    """Why `text` is not a real summary (one sentence repeated, a loop), or None when it is one."""
    data = text.strip().encode("utf-8")
    if len(data) < 160:
        return None
    ratio = len(data) / max(1, len(zlib.compress(data, 9)))
    if ratio > COMPRESSION_LIMIT:
        return f"it repeats itself (it compresses {ratio:.1f}:1)"
    sentences = [m.group(0).strip().lower() for m in _SENTENCE.finditer(text) if len(m.group(0).strip()) > 20]
    if sentences:
        top, n = Counter(sentences).most_common(1)[0]
        if n >= 3 and n * len(top) >= 0.4 * len(text):
            return f"one sentence is repeated {n} times"
    return None


def cap_text(text: str, max_chars: int, max_tokens: int, model: str) -> str:
    """Cut `text` to both caps, at a word boundary, marking the cut with an ellipsis."""
    text = text.strip()
    if len(text) <= max_chars and tokens.count_text(text, model) <= max_tokens:
        return text
    cut = tokens.truncate_to_tokens(text, max(1, max_tokens - 1), model)[: max(1, max_chars - 1)]
    if " " in cut[len(cut) // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip() + "…"


REDUCE_NOTE = ("(Too long to summarize at once, this history was summarized in {n} consecutive parts, oldest "
               "first. Merge their summaries into one: keep what each part says, the latest positions over "
               "superseded ones, and drop only repetition.)")


MAX_BLOCKS = 12
"""An append-only summary consolidates its oldest blocks past this many, however short they are."""
MERGED_SHARE = 2 / 3
"""A consolidated block's cap, as a share of the tier's: it carries the oldest facts, which a
summary rewritten whole would keep in most of its text (`bench/facts.py --conversation`)."""
KEEP_SHARE = 1 / 4
"""A consolidation leaves the newest blocks as they are while they hold at most this share of the
tier (the newest always): it merges as few of the oldest as make room."""
APPEND_NOTE = ("Summarize only the messages after the summary so far: that summary stays as it is, and yours "
               "is added after it as its next part, so do not repeat what it already says.")
"""Appended to an append-only summary's task (as the record's notes)."""
APPEND_NOTE_ROUNDS = ("Summarize only the items after the summary so far: that summary stays as it is, and yours "
                      "is added after it as its next part, so do not repeat what it already says.")
"""The same for a rounds agent's perspective (view layout 5)."""
CONSOLIDATE_NOTE = ("(The oldest parts of the conversation's summary, oldest first, each under the turns it covers. "
                    "Merge them into one summary of those turns: keep the decisions, the numbers behind them and "
                    "the open questions, the latest positions over superseded ones, and drop only repetition.)")
CONSOLIDATE_NOTE_ROUNDS = ("(The oldest parts of the summary of your earlier debate, oldest first, each under the "
                           "rounds it covers. Merge them into one summary of those rounds: keep the decisions, the "
                           "numbers behind them, the critiques and your answers to them and the open questions, the "
                           "latest positions over superseded ones, and drop only repetition.)")


def consolidate_parts(parts: list[str], note: str = CONSOLIDATE_NOTE) -> dict[str, str]:
    """A consolidation's input as the record's inline blocks: the blocks (each under its own
    label) after a note saying what to do with them."""
    blocks = {f"part{i:04d}": p.strip() for i, p in enumerate(parts)}
    if blocks:
        blocks["part0000"] = note + "\n\n" + blocks["part0000"]
    return blocks


def consolidate_rounds(parts: list[str]) -> dict[str, str]:
    """A rounds agent's consolidation (view layout 5): the same, with a note in its words."""
    return consolidate_parts(parts, CONSOLIDATE_NOTE_ROUNDS)


def reduce_parts(parts: list[str]) -> dict[str, str]:
    """The reduce step's input as the record's inline blocks: the partial summaries are the
    history to summarize (their content, each under a heading that says which part of the
    history it covers), after a note saying so. Kept in the record, so the exact request can
    be shown again whatever later versions render."""
    n = len(parts)
    blocks = {f"part{i:04d}": f"### Summary of part {i + 1} of {n} of the history\n\n{p.strip()}"
              for i, p in enumerate(parts)}
    if blocks:
        blocks["part0000"] = REDUCE_NOTE.format(n=n) + "\n\n" + blocks["part0000"]
    return blocks


class Summarizer:
    def __init__(self, index: DebateIndex, builder: ViewBuilder, call: CallFn, new_id: Callable[[str], str],
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self.index = index
        self.builder = builder
        self.call = call
        self.new_id = new_id

    def source_items(self, job: SummaryJob) -> list[SourceItem]:
        return [SourceItem(item_label(c, job.agent_id, self.index), c.content) for c in job.items]

    def rule_based(self, job: SummaryJob, max_chars: int, max_tokens: int) -> str:
        return summarize_rule_based(
            self.source_items(job),
            max_chars=max_chars,
            max_tokens=max_tokens,
            model=job.model,
            previous=job.previous.summary if job.previous and not job.append else None,
        )

    async def run(self, job: SummaryJob) -> tuple[Summary, str | None]:
        """Summarize; returns the summary and the fallback reason (None when none was needed)."""
        started = self.clock.monotonic()
        # What the summary replaces, measured from cached per-item counts: counting the
        # joined text would re-tokenize the whole perspective every round (fresh).
        prev_text = job.previous.summary if job.previous else ""
        meta = SummaryMetadata(
            before_chars=len(prev_text) + sum(len(format_item(c, job.agent_id, self.index)) + 2 for c in job.items),
            before_tokens=tokens.count_text(prev_text, job.model)
            + sum(self.builder.item_tokens(c, job.agent_id, job.model) for c in job.items),
        )
        fallback: str | None = None
        text = ""
        if job.append and not job.items:
            pass  # nothing aged out: the blocks stand as they are
        elif job.method == "rule-based":
            text = self.rule_based(job, job.max_chars, job.max_tokens)
        else:
            facts = ""
            chars, toks = job.max_chars, job.max_tokens
            if job.method == "hybrid":
                facts = self.rule_based(job, job.max_chars // 2, job.max_tokens // 2)
                chars = max(100, job.max_chars - len(facts) - 2)
                toks = max(32, job.max_tokens - tokens.count_text(facts, job.model) - 2)
            # What this text stands in for: an appended block, only what aged out.
            replaced = meta.before_chars - (len(prev_text) if job.append else 0)
            try:
                prose = await self._llm(job, chars, toks, meta)
                text = f"{facts}\n\n{prose}" if facts else prose
                if len(text.strip()) > replaced:
                    raise SummaryRejected("the summary was longer than its input")
                why = degenerate(prose)
                if why:
                    raise SummaryRejected(f"the summary is degenerate: {why}")
            except (ProviderError, SummaryRejected, ContextOverflow) as exc:
                fallback = f"{'LLM summary failed' if isinstance(exc, ProviderError) else 'LLM summary rejected'}: {exc}"
                text = self.rule_based(job, job.max_chars, job.max_tokens)
                meta.requested_method = job.method
            meta.model = meta.model or job.model  # the speaker's, when it was asked (`_ask_continued`)
        # What it read, rule-based and first (a block: what its own messages read).
        text = with_reads(text, job.items, None if job.append else prev_text, job.max_chars)
        text = cap_text(text, job.max_chars, job.max_tokens, job.model)
        blocks: list[SummaryBlock] | None = None
        covered = [Covered(c.id, c.round, c.agent_id, item_label(c, "", self.index), c.content)
                   for c in job.items]
        if job.append:
            blocks, why, merged = await self._append(job, text, meta)
            fallback = "; ".join(w for w in (fallback, why) if w) or None
            text = join_blocks(blocks)
            # A consolidation loses what the blocks it merged held: their facts are checked too.
            covered = [Covered(None, b.first, None, b.label.removeprefix("### "), b.text) for b in merged] + covered
        meta.facts, meta.facts_kept, lost = dropped_facts(covered, text)
        meta.after_chars = len(text)
        meta.after_tokens = tokens.count_text(text, job.model)
        meta.latency_ms = self.clock.elapsed_ms(started)
        meta.tokens_used = meta.prompt_tokens + meta.completion_tokens
        meta.fallback_reason = fallback
        if not job.items and job.previous is not None:
            through, count = job.previous.covered_through, job.previous.covered_count
        else:
            through = job.items[-1].id if job.items else None
            count = len(job.items) + (job.previous.covered_count if job.previous else 0)
        summary = Summary(
            id=job.summary_id,
            agent_id=job.agent_id,
            role=job.role,
            round=job.round,
            summary=text,
            method="rule-based" if fallback else job.method,  # what wrote the text
            strategy=job.strategy,
            trigger=job.trigger,
            covered_through=through,
            covered_count=count,
            focus=job.focus,
            scope=job.scope,
            blocks=blocks,
            dropped_facts=lost,
            metadata=meta,
        )
        return summary, fallback

    # ----------------------------------------------------------------- append-only blocks

    async def _append(self, job: SummaryJob, text: str,
                      meta: SummaryMetadata) -> tuple[list[SummaryBlock], str | None, list[SummaryBlock]]:
        """The previous summary's blocks, unchanged, then the new one; consolidated when they
        outgrow the tier (and why the consolidation fell back, if it did; and the blocks it merged)."""
        previous = job.previous
        old = list(previous.blocks or []) if previous else []
        if previous is not None and not old and previous.summary.strip():  # written whole: one block
            old = [SummaryBlock(first=1, last=previous.round, count=previous.covered_count, made_at=previous.round,
                                text=previous.summary, unit=job.unit)]
        if not job.items:  # a manual roll with nothing new
            if job.focus and old:  # asked to focus: every block becomes one, written with that focus
                merged, why = await self.consolidate(job, old, job.tier_tokens, job.tier_chars, meta)
                return [merged], why, old
            return old, None, []  # the summary stands as it was
        new = SummaryBlock(first=job.items[0].round, last=job.items[-1].round, count=len(job.items),
                           made_at=job.round, text=text, unit=job.unit)
        blocks = [*old, new]
        # The cap counts the blocks' texts, as a summary written whole counts its text alone; their
        # labels (a dozen tokens each) ride on top, and `MAX_BLOCKS` bounds them.
        used = sum(tokens.count_text(b.text, job.model) for b in blocks)
        if len(blocks) < 2 or (used <= job.tier_tokens and len(blocks) <= MAX_BLOCKS):
            return blocks, None, []
        # The oldest blocks into one, as few as leave the newer ones (the newest always) at most
        # `KEEP_SHARE` of the tier: the blocks a consolidation need not touch keep what they hold,
        # and the tier stays about as full as a summary rewritten whole would be.
        sizes = [tokens.count_text(b.text, job.model) for b in blocks]
        keep = len(blocks) - 1
        while keep > 2 and sum(sizes[keep - 1:]) <= job.tier_tokens * KEEP_SHARE:
            keep -= 1
        merging = blocks[:keep]
        room = job.tier_tokens - sum(sizes[keep:])
        cap = min(max(32, int(job.tier_tokens * MERGED_SHARE)), room)
        if cap < 32:  # the tier is too small for two: everything becomes one block
            merged, why = await self.consolidate(job, blocks, job.tier_tokens, job.tier_chars, meta)
            return [merged], why, old
        chars = max(100, min(int(job.tier_chars * MERGED_SHARE), cap * 4))
        merged, why = await self.consolidate(job, merging, cap, chars, meta)
        return [merged, *blocks[keep:]], why, merging

    async def consolidate(self, job: SummaryJob, blocks: list[SummaryBlock], max_tokens: int, max_chars: int,
                          meta: SummaryMetadata) -> tuple[SummaryBlock, str | None]:
        """One block standing in for `blocks` (oldest first): a summary of their summaries, by the
        job's method, rule-based when the LLM's fails; and why it fell back (None: it did not)."""
        why: str | None = None
        parts = [f"{b.label}\n\n{b.text.strip()}" for b in blocks]
        text = ""
        if job.method != "rule-based":
            # The blocks' facts first, read back as the rule-based way does (half the cap at most),
            # then the LLM's prose in what they leave, so the prose is what shrinks: a model merging
            # summaries rewords, and drops what it does not see as the gist.
            facts = consolidate_facts([b.text for b in blocks], max_chars // 2, max_tokens // 2, job.model,
                                      prose=False)
            chars = max(100, max_chars - len(facts) - 2)
            toks = max(32, max_tokens - tokens.count_text(facts, job.model) - 2)
            # The job's answer reserve is one block's: the request keeps its size, and the answer
            # gets the consolidated block's prose cap (at most half of it).
            room = job.budget + job.reserve
            reserve = min(toks, room // 2)
            merge = replace(job, budget=room - reserve, reserve=reserve)
            try:
                make = consolidate_rounds if job.unit == "round" else consolidate_parts
                prose = await self._reduce(merge, parts, chars, toks, meta, depth=0, make=make)
                if len(prose) > sum(len(p) for p in parts):
                    raise SummaryRejected("the consolidated summary was longer than its input")
                loop = degenerate(prose)
                if loop:
                    raise SummaryRejected(f"the consolidated summary is degenerate: {loop}")
                text = f"{facts}\n\n{prose}" if facts else prose
            except (ProviderError, SummaryRejected, ContextOverflow) as exc:
                failed = "failed" if isinstance(exc, ProviderError) else "rejected"
                why = f"LLM consolidation of the summary {failed}: {exc}"
                text = ""
        if not text:  # the blocks' facts read back and kept first, oldest first (`consolidate.py`)
            text = consolidate_facts([b.text for b in blocks], max_chars, max_tokens, job.model)
        text = with_reads(text, [], "\n\n".join(b.text for b in blocks), max_chars)
        text = cap_text(text, max_chars, max_tokens, job.model)
        return SummaryBlock(first=blocks[0].first, last=blocks[-1].last, count=sum(b.count for b in blocks),
                            made_at=job.round, text=text, consolidated=True, unit=job.unit), why

    # ----------------------------------------------------------------- llm + chunking

    def _record(self, job: SummaryJob, ids: list[str], prev: str | None, parts: dict[str, str], max_chars: int) -> ViewRecord:
        note = APPEND_NOTE_ROUNDS if job.unit == "round" else APPEND_NOTE
        notes = {"notes": note} if job.append and ids else {}
        record = ViewRecord(
            call_id=self.new_id("call"),
            agent_id=job.agent_id,
            round=job.round,
            phase="summarize",
            model=job.model,
            system_key=job.system_key,
            task_key=job.task_key,
            task_params={"max_length": max_chars, "owner": job.agent_id, **job.params,
                         **({"focus": job.focus} if job.focus else {})},
            summary_id=prev,
            task_contribution_ids=ids,
            inline={**parts, **notes},
        )
        self.builder.choose_prompts(record, job.budget)  # as the call will: chunks are sized with these prompts
        return record

    def _continued(self, job: SummaryJob, max_chars: int) -> ViewRecord | None:
        """The request as a continuation of the speaker's turn view (layout 6): the view its turn
        would have, the task naming the turns it summarizes; None when there is none to ask or it
        would not fit (the request is then made the owner's way)."""
        above = job.above
        if above is None or not job.items:
            return None
        pinned = pins_for(above.agent_id, "turn", self.index.pins)
        record = ViewRecord(
            call_id=self.new_id("call"), agent_id=above.agent_id, round=job.round, phase="summarize",
            model=above.model, system_key=f"{above.agent_id}/system", task_key=above.task_key,
            task_params={"max_length": max_chars, "owner": above.agent_id, "summary_for": job.agent_id, **job.params,
                         "first": job.items[0].round, "last": job.items[-1].round,
                         **({"focus": job.focus} if job.focus else {})},
            summary_id=job.previous.id if job.previous else None,
            contribution_ids=[c.id for c in above.window if c.id not in pinned],
            recall=RecallRecord(cap=0, held=above.held) if above.held else None, pinned=pinned)
        self.builder.choose_prompts(record, above.budget)
        messages = render_messages(record, self.index)
        return record if tokens.count_messages(messages, above.model) <= above.budget else None

    async def _ask_continued(self, job: SummaryJob, record: ViewRecord, max_chars: int, max_tokens: int,
                             meta: SummaryMetadata) -> str:
        above = job.above
        assert above is not None
        meta.written_by = above.agent_id  # asked, so billed, even if what it wrote is then refused
        completion = await self.call(record, above.budget, max(16, min(max_tokens, above.reserve)),
                                     context_tokens=above.context_tokens)
        meta.model = above.model
        kept = set(history_ids(record, self.index))
        if any(c.id not in kept for c in job.items):  # the engine's window was smaller than foreseen
            raise SummaryRejected("the speaker's view could not hold the turns to summarize")
        return self._took(job, record, completion, max_chars, max_tokens, meta)

    def _room(self, job: SummaryJob, prev: str | None) -> int:
        """Tokens of history one summarization request can hold beside its prompts."""
        empty = self._record(job, [], prev, {}, job.max_chars)
        return job.budget - tokens.count_messages(render_messages(empty, self.index), job.model) - 16

    def _fits(self, job: SummaryJob, record: ViewRecord) -> tuple[bool, list[Message]]:
        messages = render_messages(record, self.index)
        return tokens.count_messages(messages, job.model) <= job.budget, messages

    async def _one(self, job: SummaryJob, record: ViewRecord, max_chars: int, max_tokens: int, meta: SummaryMetadata) -> str:
        out_tokens = max(16, min(max_tokens, job.reserve))
        completion = await self.call(record, job.budget, out_tokens)  # the view shortens quotes if one item is huge
        return self._took(job, record, completion, max_chars, max_tokens, meta)

    def _took(self, job: SummaryJob, record: ViewRecord, completion: Completion, max_chars: int, max_tokens: int,
              meta: SummaryMetadata) -> str:
        meta.prompt_tokens += completion.prompt_tokens
        meta.completion_tokens += completion.completion_tokens
        meta.cached_tokens += completion.cached_tokens
        meta.input_tokens += record.tokens.total
        text = completion.content.strip()
        if not text:
            raise SummaryRejected("the model returned an empty summary")
        return cap_text(text, max_chars, max_tokens, job.model)

    async def _llm(self, job: SummaryJob, max_chars: int, max_tokens: int, meta: SummaryMetadata) -> str:
        continued = self._continued(job, max_chars)
        if continued is not None:
            meta.chunks = 1
            return await self._ask_continued(job, continued, max_chars, max_tokens, meta)
        prev = job.previous.id if job.previous else None
        ids = [c.id for c in job.items]
        whole = self._record(job, ids, prev, {}, max_chars)
        fits, _ = self._fits(job, whole)
        if fits:
            meta.chunks = 1
            return await self._one(job, whole, max_chars, max_tokens, meta)
        # Map: pack items into chunks that each fit (the previous summary rides with the first).
        room = self._room(job, prev)
        if room < 64:
            raise ContextOverflow(f"summarization budget of {job.budget} tokens leaves no room for input")
        chunks: list[list[str]] = [[]]
        used = 0
        for c in job.items:
            n = self.builder.item_tokens(c, job.agent_id, job.model)
            if chunks[-1] and used + n > room:
                chunks.append([])
                used = 0
            chunks[-1].append(c.id)
            used += n
        # Each part keeps at least a third of the room (a part cut at a few dozen tokens says
        # nothing); parts that do not fit one reduce together are reduced in groups.
        part_tokens = min(max_tokens, max(room // max(2, len(chunks)), self._part_floor(job)))
        part_chars = max(100, min(max_chars, part_tokens * 4))
        parts: list[str] = []
        for i, chunk in enumerate(chunks):
            rec = self._record(job, chunk, prev if i == 0 else None, {}, part_chars)
            parts.append(await self._one(job, rec, part_chars, part_tokens, meta))
        meta.chunks = len(chunks)
        return await self._reduce(job, parts, max_chars, max_tokens, meta, depth=0)

    async def _reduce(self, job: SummaryJob, parts: list[str], max_chars: int, max_tokens: int, meta: SummaryMetadata,
                      depth: int, make: Callable[[list[str]], dict[str, str]] = reduce_parts) -> str:
        if depth > 8:
            raise ContextOverflow("chunk-and-reduce did not converge")
        if len(parts) == 1 and depth == 0 and meta.chunks == 1 and make is reduce_parts:
            return parts[0]  # one (huge) item made one chunk: its summary is the summary
        rec = self._record(job, [], None, make(parts), max_chars)
        fits, _ = self._fits(job, rec)
        if fits or len(parts) == 1:
            meta.chunks += 1
            return await self._one(job, rec, max_chars, max_tokens, meta)
        # Reduce consecutive parts in groups that each fit one request (a shallow tree: a
        # deep one keeps a little of every subtree and loses the detail of the newest), then
        # reduce what the groups gave.
        groups: list[list[str]] = [[]]
        for part in parts:
            if groups[-1] and not self._fits(job, self._record(job, [], None, make([*groups[-1], part]),
                                                              max_chars))[0]:
                groups.append([])
            groups[-1].append(part)
        if len(groups) == len(parts):  # no two parts fit together: halve and shrink them
            half = (len(parts) + 1) // 2
            groups = [parts[:half], parts[half:]]
        toks = max(min(max_tokens, self._part_floor(job)), max_tokens // len(groups))
        chars = max(100, min(max_chars, toks * 4))
        merged = [g[0] if len(g) == 1 else await self._reduce(job, g, chars, toks, meta, depth + 1, make)
                  for g in groups]
        return await self._reduce(job, merged, max_chars, max_tokens, meta, depth + 1, make)

    def _part_floor(self, job: SummaryJob) -> int:
        """The fewest tokens a partial summary gets: a fifth of a request's room (five reduce
        in one request), and never under 64."""
        return max(64, self._room(job, None) // 5)

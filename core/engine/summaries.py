"""Making summaries through the call engine, and the user's requests for them.

A protocol decides *when* an agent's (or a conversation's) history is summarized and
*what* goes in; this module makes the summary (LLM, rule-based or hybrid, chunked when
it would not fit, with the rule-based fallback), prices it, warns when it fell back,
and records it as a `summary_added` event. Manual requests (`/summarize AGENT FOCUS`)
wait here until the protocol reaches a boundary where it can honour them.

A summary's caps come from the room of the views that will read it (`reader_cap`), a
safe maximum drawn from the window, not from fixed defaults alone: at a small window the
configured 1,000 tokens would not fit beside the prompts, and a summary dropped from a
view helps no one. The summarization request itself reserves only the summary's cap for
its answer, so it has the most room for input.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import tokens
from ..clock import Clock
from ..config import ResolvedAgent
from ..context.index import DebateIndex
from ..context.pins import pins_for
from ..context.recall_tier import RecallRequest
from ..context.summarize import Continuation, Summarizer, SummaryJob
from ..context.view import ABOVE_KIND, ViewBuilder
from ..events import Event, SummaryAdded, Warning_
from ..models.state import Contribution, HeldRecall, Summary, ViewRecord
from ..models.terms import Phase, SummaryStrategy, SummaryTrigger
from ..providers.base import CallHint, Completion
from ..search.recall import RecallScope
from .calls import CallEngine, CallSpec

SUMMARY_FLOOR = 64
"""Tokens a summary keeps however small the window (below this it says nothing useful)."""
CHARS_PER_TOKEN = 4
"""A summary's character cap follows its token cap at about this many characters a token."""
BLOCKS_PER_TIER = 6
"""An append-only summary's new block gets half of what the earlier blocks leave of the tier's
cap, and at least this share of it, so that a few more append before the oldest are consolidated."""


def block_caps(cap: int, chars: int, previous: Summary | None, model: str) -> tuple[int, int, int, int]:
    """An append-only tier for a summary whose cap written whole would be `cap` tokens and
    `chars` characters, and the new block's caps in it, as (tier tokens, tier characters, block
    tokens, block characters). The tier has the whole summary's cap (views carry no more summary
    than before); the first block has all of it, so it keeps every fact a summary written whole
    would keep, and the blocks after a consolidation get half of what the earlier ones leave (at
    least a `BLOCKS_PER_TIER`th of the tier) until the tier is full again."""
    tier, tier_chars = cap, chars
    used = sum(tokens.count_text(b.text, model) for b in (previous.blocks or [])) if previous else 0
    share = max(1 / BLOCKS_PER_TIER, (1 - used / tier) / 2) if tier and used else 1.0
    return tier, tier_chars, max(SUMMARY_FLOOR, int(tier * share)), max(100, int(tier_chars * share))


class Summaries:
    def __init__(self, *, index: DebateIndex, builder: ViewBuilder, engine: CallEngine,
                 emit: Callable[[Event], Event], new_id: Callable[[str], str], clock: Clock,
                 people: dict[str, ResolvedAgent], problem: str) -> None:
        self.engine = engine
        self.emit = emit
        self.people = people
        self.problem = problem
        self.new_id = new_id
        self.builder = builder
        self.summarizer = Summarizer(index, builder, self._call, new_id, clock)
        self.pending: dict[str, str | None] = {}
        """Agent id (or a conversation's summary owner) → the focus of a manual request not yet made."""
        self.upto: dict[str, int] = {}
        """Agent id → the turn (or round) a pending request folds everything before (`--from`)."""

    def request(self, agent_id: str, focus: str | None = None, from_step: int | None = None) -> None:
        self.pending[agent_id] = focus or self.pending.get(agent_id)
        if from_step is not None:
            self.upto[agent_id] = from_step

    def take_from(self, agent_id: str) -> int | None:
        """The `--from` point of the request `take` just took for `agent_id` (None: the usual split)."""
        return self.upto.pop(agent_id, None)

    def take(self, agent_id: str) -> tuple[bool, str | None]:
        """(requested, focus) for `agent_id`, forgetting the request."""
        if agent_id not in self.pending:
            return False, None
        return True, self.pending.pop(agent_id)

    async def _call(self, record: ViewRecord, budget: int, max_tokens: int,
                    context_tokens: int | None = None) -> Completion:
        agent = self.people[record.agent_id]
        hint = CallHint(phase="summarize", role=agent.role, agent_id=agent.id, round=record.round,
                        problem=self.problem, extra={"max_chars": record.task_params.get("max_length", 2500)})
        # A request that continues a turn view (layout 6) carries that view's window and its held
        # recall blocks: the engine lays them out as it would for the turn, and recalls nothing new.
        index = self.builder.index
        history = [index.contributions[i] for i in record.contribution_ids]
        held = record.recall.held if record.recall is not None else []
        recall = RecallRequest(RecallScope(kinds=("message",), max_step=0, population=0), 0,
                               tuple(held)) if held else None
        result = await self.engine.call(CallSpec(agent=agent, record=record, hint=hint, budget=budget,
                                                 max_tokens=max_tokens, model=record.model, history=history,
                                                 context_tokens=context_tokens, recall=recall))
        return result.completion

    def reader_cap(self, reader: ResolvedAgent, phase: Phase, kind: str, *, share: float,
                   context_tokens: int | None = None, reply: int | None = None,
                   params: dict[str, object] | None = None) -> int:
        """The most tokens a summary may have so that the `phase` view of `reader` that carries it
        keeps `share` of its room for it (the rest for history and quotes): the view's budget with
        its full answer reserve, less its prompts and task."""
        fit = self.engine.fit(reader, context_tokens, reply)
        probe = ViewRecord(call_id="probe", agent_id=reader.id, round=1, phase=phase, model=reader.model,
                           system_key=f"{reader.id}/system", task_key=f"{reader.id}/{kind}",
                           task_params=dict(params or {}),
                           pinned=pins_for(reader.id, phase, self.builder.index.pins))  # pins take room first
        return max(SUMMARY_FLOOR, int(self.builder.room(probe, fit.input_budget) * share))

    def job(self, agent: ResolvedAgent, *, step: int, trigger: SummaryTrigger, items: list[Contribution],
            previous: Summary | None = None, strategy: SummaryStrategy | None = None, focus: str | None = None,
            judge: bool = False, max_chars: int | None = None, max_tokens: int | None = None,
            context_tokens: int | None = None, reserve: int | None = None, task_key: str | None = None,
            params: dict[str, object] | None = None, conversation: bool = False,
            tier_tokens: int = 0, tier_chars: int = 0, writer: ResolvedAgent | None = None,
            window: list[Contribution] | None = None, held: list[HeldRecall] | None = None) -> SummaryJob:
        """A job with the agent's summarization settings, any of them overridden (`tier_tokens`:
        an append-only summary, `max_tokens` and `max_chars` then one block's caps; `writer`: the
        speaker asked for it as a continuation of its turn view, whose window and held recall
        blocks are `window` and `held`, layout 6)."""
        cfg = agent.summarization
        model = cfg.model or agent.model
        # The summarization request must fit the model's real window too; its answer is the
        # summary, so it reserves the summary's cap and no more.
        cap = self.engine.fit(agent, context_tokens, max_tokens or cfg.max_summary_tokens, model).max_tokens
        fit = self.engine.fit(agent, context_tokens, min(cap, reserve or cap), model)
        chars = min(max_chars or cfg.max_length, max(100, cap * CHARS_PER_TOKEN))
        above = None
        # A model named for the summaries (`summarization.model`) is kept: the writer's own is not asked.
        if writer is not None and window and not writer.is_person and cfg.method != "rule-based" and not cfg.model:
            spoken = self.engine.fit(writer, context_tokens, min(cap, reserve or cap))
            above = Continuation(agent_id=writer.id, model=writer.model,
                                 task_key=f"{writer.id}/{ABOVE_KIND}", budget=spoken.input_budget,
                                 reserve=spoken.max_tokens, context_tokens=context_tokens, window=list(window),
                                 held=list(held or []))
        return SummaryJob(
            agent_id=agent.id, role=agent.role, round=step, trigger=trigger, items=items, previous=previous,
            # A person's own history is summarized offline: nothing is asked of them, and their
            # seat never becomes a model call.
            method="rule-based" if agent.is_person else cfg.method, strategy=strategy or cfg.strategy,
            max_chars=chars, max_tokens=min(cap, fit.max_tokens),
            model=model, budget=fit.input_budget, reserve=fit.max_tokens, system_key=f"{agent.id}/system",
            task_key=task_key or f"{agent.id}/summarize", summary_id=self.new_id("sum"), judge=judge,
            focus=focus, params=dict(params or {}), scope="conversation" if conversation else "perspective",
            tier_tokens=max(tier_tokens, cap) if tier_tokens else 0,
            tier_chars=max(tier_chars, chars) if tier_tokens else 0, above=above,
        )

    async def make(self, job: SummaryJob) -> Summary:
        """Summarize, price, warn on fallback, record; the summary."""
        summary, fallback = await self.summarizer.run(job)
        md = summary.metadata
        asked = job.above is not None and md.written_by == job.above.agent_id  # a debater was asked
        agent = self.people[job.above.agent_id if asked and job.above else job.agent_id]
        model = job.above.model if asked and job.above else job.model
        md.cost_usd = self.engine.cost(agent, model, md.prompt_tokens, md.completion_tokens, md.cached_tokens)
        who = "judge" if job.judge else agent.id
        if fallback:
            self.emit(Warning_(message=f"{who}: {fallback}; used a rule-based summary", agent_id=agent.id))
        self.emit(SummaryAdded(summary=summary, judge=job.judge))
        return summary

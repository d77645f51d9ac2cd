"""`moot call --summary`: a recorded call's view with its summary tier replaced, to see what a summary cost.

The view is the recorded one, rebuilt from its record, with one change: the summary message
holds a summary of the same items written another way (`rule-based`, `llm`, `hybrid`, made now
from the covered items alone, so methods compare on equal terms), or, with `none`, the summary
is gone and the items it stood in for come back verbatim in the history, when that still fits
the agent's window.
"""

from __future__ import annotations

from typing import Any, Literal

from . import tokens
from .config import ResolvedAgent
from .context.index import DebateIndex
from .context.summarize import Summarizer, SummaryJob
from .context.view import ViewBuilder, render_messages
from .errors import InputError
from .models.state import DebateState, ViewRecord
from .providers.base import CallHint, ChatRequest, Completion, Message, complete
from .providers.pool import ProviderPool

SummaryChoice = Literal["rule-based", "llm", "hybrid", "none"]


def _record(state: DebateState, call_id: str) -> ViewRecord:
    for rnd in state.rounds:
        for record in rnd.calls:
            if record.call_id == call_id:
                return record
    raise InputError(f"call {call_id} has no record in debate {state.id}")


async def swapped_view(state: DebateState, call: dict[str, Any], choice: SummaryChoice, agent: ResolvedAgent,
                       pool: ProviderPool) -> list[Message]:
    """The call's messages with its summary replaced by `choice`; InputError in one line when the
    view had no summary, or when the full history would not fit (saying by how many tokens)."""
    record = _record(state, call["call_id"])
    index = DebateIndex(state)
    if not record.summary_id or record.summary_id not in index.summaries:
        raise InputError(f"that call's view carried no summary (--summary {choice} has nothing to replace)")
    summary = index.summaries[record.summary_id]
    covered = index.covered_items(summary.agent_id, summary)
    if choice == "none":
        if record.history_turns is not None:
            span = (1, record.history_turns[1])
            bare = record.model_copy(update={"summary_id": None, "history_turns": span})
        else:
            ids = [c.id for c in covered if c.id not in record.contribution_ids]
            bare = record.model_copy(update={"summary_id": None, "contribution_ids": [*ids, *record.contribution_ids]})
        messages = render_messages(bare, index)
        need = tokens.count_messages(messages, agent.model)
        budget = agent.context.input_budget
        if need > budget:
            raise InputError(f"--summary none: the full history does not fit {agent.model}'s window: {need:,} "
                             f"tokens, {need - budget:,} more than a view may hold ({budget:,})")
        return messages
    cfg = agent.summarization
    job = SummaryJob(agent_id=summary.agent_id, role=summary.role, round=summary.round, trigger=summary.trigger,
                     items=covered, previous=None, method=choice, strategy="fresh", max_chars=cfg.max_length,
                     max_tokens=cfg.max_summary_tokens, model=agent.model, budget=agent.context.input_budget,
                     reserve=cfg.max_summary_tokens, system_key=f"{agent.id}/system",
                     task_key=f"{agent.id}/summarize", summary_id=summary.id, scope=summary.scope)
    if job.task_key not in state.prompts and choice != "rule-based":
        raise InputError(f"--summary {choice}: the debate has no summarize prompt for {agent.id}")

    async def summarize_call(rec: ViewRecord, budget: int, max_tokens: int,
                             context_tokens: int | None = None) -> Completion:
        hint = CallHint(phase="summarize", role=agent.role, agent_id=agent.id, round=rec.round,
                        problem=state.problem, extra={"max_chars": rec.task_params.get("max_length", 2500)})
        return await complete(pool.get(agent), ChatRequest(messages=render_messages(rec, index), model=agent.model,
                                                           temperature=agent.config.temperature,
                                                           max_tokens=max_tokens, hint=hint))

    counter = iter(range(1, 1 << 30))
    summarizer = Summarizer(index, ViewBuilder(index), summarize_call, lambda kind: f"{kind}-swap-{next(counter)}")
    made, _ = await summarizer.run(job)
    index.summaries[summary.id] = made
    return render_messages(record, index)

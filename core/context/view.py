"""Building an agent's view for one call, under its token budget, and rebuilding it later.

A view is first chosen as a `ViewRecord` (ids, keys, parameters), then rendered into
messages by `render_messages`. The live call sends exactly what `render_messages`
returns, and `moot context` calls the same function on the stored record, so what
is shown is byte for byte what was sent.

Messages: system prompt · summary of older history (if any) · recent items verbatim
(if any) · the phase's task. In the `rounds` protocol the history is the agent's
perspective; in a `conversation` it is the shared transcript (the system message then
also states the topic). When a view does not fit, the oldest verbatim items give way
first (a marker says so), then quoted material in the task is shortened, then the
summary; a request over budget is never sent. (A conversation rolls its summary
forward instead of dropping anything: see `moot.core.protocols.conversation`.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import tokens
from .index import DebateIndex
from .reads import reads_note
from .tool_messages import references_message, tool_messages
from ..errors import ContextOverflow
from ..models.state import Contribution, Summary, TierTokens, ViewRecord
from ..prompts import render
from ..providers.base import Message

HISTORY_PHASES = frozenset({"proposal", "critique", "refinement", "turn"})
"""Phases whose views carry a summary and verbatim history (the others carry material in the task)."""
TRUNCATION_NOTE = "\n\n[… shortened to fit the context budget]"


def item_label(c: Contribution, owner: str, index: DebateIndex) -> str:
    if c.type == "message":
        you = " (you)" if c.agent_id == owner else ""
        return f"Turn {c.round} · {index.name(c.agent_id)} ({c.role}){you}"
    if c.agent_id == owner:
        return f"Round {c.round} · your {c.type}"
    if c.type == "critique" and c.target_agent_id == owner:
        return f"Round {c.round} · critique from {index.name(c.agent_id)} ({c.role})"
    return f"Round {c.round} · {c.type} by {index.name(c.agent_id)} ({c.role})"


def format_item(c: Contribution, owner: str, index: DebateIndex) -> str:
    reads = reads_note(c) if c.agent_id == owner else ""  # what it read is part of its author's history
    return f"### {item_label(c, owner, index)}\n\n{c.content.strip()}{reads}"


def summary_message(s: Summary, conversation: bool = False) -> str:
    if conversation:
        return (f"## Summary of the conversation so far (turns 1–{s.covered_count}; made at turn {s.round})"
                f"\n\n{s.summary.strip()}")
    return (
        f"## Summary of your earlier debate (made in round {s.round}; "
        f"covers {s.covered_count} items)\n\n{s.summary.strip()}"
    )


def conversation_system(prompt: str, problem: str) -> str:
    """A conversation's system message: the speaker's role prompt, then the topic."""
    return f"{prompt.rstrip()}\n\n## Debate topic\n\n{problem.strip()}"


def history_message(items: list[str], dropped: int, conversation: bool = False) -> str:
    parts = ["## The latest messages (verbatim, oldest first)" if conversation
             else "## Your recent debate history (verbatim, oldest first)"]
    if dropped:
        parts.append(f"[{dropped} older item{'s' if dropped != 1 else ''} omitted to fit the context budget]")
    parts.extend(items)
    return "\n\n".join(parts)


def _quote(text: str, limit: int | None, model: str) -> str:
    if limit is None:
        return text.strip()
    cut = tokens.truncate_to_tokens(text.strip(), limit, model)
    return cut if cut == text.strip() else cut + TRUNCATION_NOTE


def render_task(record: ViewRecord, index: DebateIndex) -> str:
    """The phase's task message, from the record's template key, parameters and ids."""
    p: dict[str, Any] = {"problem": index.problem, **record.task_params}
    limit = p.pop("quote_limit", None)
    transcript = p.pop("transcript", False)
    own = p.pop("own_answer_id", None)
    focus = p.pop("focus", None)
    m = record.model
    ids = record.task_contribution_ids
    phase = record.phase
    if phase == "critique":
        p["target_proposal"] = _quote(index.contributions[ids[0]].content, limit, m)
    elif phase == "refinement":
        p["own_proposal"] = _quote(index.contributions[ids[0]].content, limit, m)
        crits = [index.contributions[i] for i in ids[1:]]
        p["critiques"] = "\n\n".join(
            f"### Critique from {index.name(c.agent_id)} ({c.role})\n\n{_quote(c.content, limit, m)}" for c in crits
        ) or "(no critiques were received)"
    elif phase == "summarize":
        blocks: list[str] = []
        if record.summary_id:
            blocks.append("### Earlier summary\n\n" + index.summaries[record.summary_id].summary.strip())
        owner = record.task_params.get("owner", record.agent_id)
        blocks += [format_item(index.contributions[i], owner, index) for i in ids]
        blocks += [record.inline[k] for k in sorted(record.inline) if k.startswith("part")]
        p["history"] = _quote("\n\n".join(blocks), limit, m)
    elif phase == "answer":
        first = int(p.get("round", 1)) <= 1
        p["own_answer"] = (_brief(record, index, own, limit) if own else
                           "(none: this is the first round)" if first else "(your previous answer was not recorded)")
        p["other_answers"] = "\n\n".join(
            f"### {index.name(index.contributions[i].agent_id)} ({index.contributions[i].role})\n\n"
            f"{_brief(record, index, i, limit)}" for i in ids if i != own
        ) or ("(none: this is the first round)" if first else "(no other answers were recorded)")
    elif phase in ("synthesis", "score") and transcript:
        parts: list[str] = []
        if record.summary_id:
            s = index.summaries[record.summary_id]
            parts.append(f"### Summary of turns 1–{s.covered_count}\n\n{s.summary.strip()}")
        parts += [format_item(index.contributions[i], "", index) for i in ids]
        p["material"] = _quote("\n\n".join(parts), limit, m) if limit else "\n\n".join(parts)
    elif phase in ("synthesis", "score"):
        if record.summary_id and phase == "synthesis":
            material = "### Summary of the final round\n\n" + index.summaries[record.summary_id].summary.strip()
        else:
            material = "\n\n".join(
                f"### {index.name(c.agent_id)} ({c.role}) · round {c.round} {c.type}\n\n{_quote(c.content, limit, m)}"
                for c in (index.contributions[i] for i in ids)
            )
        p["material"] = material
    p.pop("owner", None)
    text = render(index.prompts[record.task_key], **p)
    if focus:
        text += f"\n\n## The user asks this summary to focus on\n\n{focus}"
    notes = record.inline.get("notes")
    if notes:
        text += "\n\n" + notes
    return text


def _brief(record: ViewRecord, index: DebateIndex, cid: str, limit: int | None) -> str:
    """A quoted contribution, or the summary of it the view used instead (`inline["brief:<id>"]`)."""
    text = record.inline.get(f"brief:{cid}")
    return text if text is not None else _quote(index.contributions[cid].content, limit, record.model)


def history_ids(record: ViewRecord, index: DebateIndex) -> list[str]:
    """The verbatim history of a view, oldest first (a conversation's stored as a span of turns)."""
    if record.history_turns is not None:
        return index.turn_ids(*record.history_turns)
    return record.contribution_ids


def render_messages(record: ViewRecord, index: DebateIndex) -> list[Message]:
    """The exact messages of a call, rebuilt from its record."""
    conversation = record.phase == "turn"
    system = index.prompts[record.system_key]
    if conversation:
        system = conversation_system(system, index.problem)
    messages: list[Message] = [{"role": "system", "content": system}]
    if record.summary_id and record.phase in HISTORY_PHASES:
        summary = summary_message(index.summaries[record.summary_id], conversation)
        messages.append({"role": "user", "content": summary})
    ids = history_ids(record, index)
    if ids or record.dropped_ids:
        owner = record.agent_id
        blocks = [format_item(index.contributions[i], owner, index) for i in ids]
        messages.append({"role": "user", "content": history_message(blocks, len(record.dropped_ids), conversation)})
    if (passages := references_message(record)) is not None:
        messages.append(passages)
    messages.append({"role": "user", "content": render_task(record, index)})
    return messages + tool_messages(record)


def tier_tokens(record: ViewRecord, messages: list[Message]) -> TierTokens:
    """Tokens per tier of a view's messages (before any tool step: those are the loop's to count)."""
    m = record.model
    t = TierTokens(system=tokens.count_message(messages[0], m), task=tokens.count_message(messages[-1], m))
    rest = messages[1:-1]
    if references_message(record) is not None and rest:
        t.references = tokens.count_message(rest.pop(), m)
    if record.summary_id and record.phase in HISTORY_PHASES and rest:
        t.summary = tokens.count_message(rest.pop(0), m)
    if rest:
        t.history = tokens.count_message(rest[0], m)
    t.total = t.system + t.summary + t.history + t.references + t.task + tokens.REPLY_PRIMING
    return t


@dataclass
class ViewBuilder:
    """Chooses what goes into a view so that it fits, using cached per-item token counts."""

    index: DebateIndex
    _item_tokens: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def item_tokens(self, c: Contribution, owner: str, model: str) -> int:
        key = (c.id, owner, model)
        n = self._item_tokens.get(key)
        if n is None:
            n = tokens.count_text(format_item(c, owner, self.index), model) + 2  # "\n\n" joints
            self._item_tokens[key] = n
        return n

    def build(self, record: ViewRecord, history: list[Contribution], budget: int) -> list[Message]:
        """Fill `record` (history ids, tokens, budget) so the view fits; return its messages."""
        record.budget = budget
        record.history_turns = None
        m = record.model
        keep: list[Contribution] = list(history)
        record.contribution_ids = [c.id for c in keep]
        messages = render_messages(record, self.index)
        total = tokens.count_messages(messages, m)
        if total > budget and keep:
            fixed_msgs = [messages[0], *([messages[1]] if record.summary_id and record.phase in HISTORY_PHASES else []), messages[-1]]
            room = budget - tokens.count_messages(fixed_msgs, m) - 40  # history header, marker, framing
            chosen: list[Contribution] = []
            for c in reversed(keep):  # newest first
                n = self.item_tokens(c, record.agent_id, m)
                if n > room:
                    break
                room -= n
                chosen.append(c)
            chosen.reverse()
            record.dropped_ids = [c.id for c in keep[: len(keep) - len(chosen)]]
            keep = chosen
            while True:
                record.contribution_ids = [c.id for c in keep]
                messages = render_messages(record, self.index)
                total = tokens.count_messages(messages, m)
                if total <= budget or not keep:
                    break
                record.dropped_ids.append(keep.pop(0).id)
        if total > budget:
            messages, total = self._shrink_task(record, budget)
        record.tokens = tier_tokens(record, messages)
        if record.phase == "turn" and keep and not record.dropped_ids:
            turns = [c.round for c in keep]
            if turns == list(range(turns[0], turns[-1] + 1)):
                record.history_turns, record.contribution_ids = (turns[0], turns[-1]), []
        return messages

    def _shrink_task(self, record: ViewRecord, budget: int) -> tuple[list[Message], int]:
        """Shorten quoted material, then drop the summary; raise when nothing more can give."""
        m = record.model
        quotes = max(1, len(record.task_contribution_ids) + (1 if record.phase == "summarize" else 0))
        for drop_summary in (False, True):
            if drop_summary:
                if not (record.summary_id and record.phase in HISTORY_PHASES):
                    break
                record.inline["dropped_summary"] = record.summary_id
                record.summary_id = None
            record.task_params.pop("quote_limit", None)
            base = render_messages(record, self.index)
            total = tokens.count_messages(base, m)
            if total <= budget:
                return base, total
            limit = 1024
            while limit >= 16:
                record.task_params["quote_limit"] = limit
                messages = render_messages(record, self.index)
                total = tokens.count_messages(messages, m)
                if total <= budget:
                    # grow back toward the budget: the largest limit that still fits
                    step = max(1, (budget - total) // quotes)
                    while step >= 1:
                        record.task_params["quote_limit"] = limit + step
                        trial = render_messages(record, self.index)
                        n = tokens.count_messages(trial, m)
                        if n <= budget:
                            limit, messages, total = limit + step, trial, n
                        else:
                            record.task_params["quote_limit"] = limit
                            step //= 2
                    return messages, total
                limit //= 2
            record.task_params.pop("quote_limit", None)
        raise ContextOverflow(
            f"the {record.phase} view of {record.agent_id} needs more than its {budget}-token budget "
            "even with history dropped; raise context.max_context_tokens"
        )

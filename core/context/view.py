"""Building an agent's view for one call, under its token budget, and rebuilding it later.

A view is first chosen as a `ViewRecord` (ids, keys, parameters), then rendered into
messages by `render_messages`. The live call sends exactly what `render_messages`
returns, and `moot context` calls the same function on the stored record, so what
is shown is byte for byte what was sent.

Messages, most stable first (`render_tiers`): system prompt and topic · summary of older
history (if any) · pinned items (if any: `pinned_message`) · recent items verbatim, oldest
first (if any) · recalled items (if any) ·
retrieved passages of the references (if any: `tool_messages`) · the phase's task, then the
tool loop's steps. In the `rounds` protocol the history is the agent's perspective; in a
`conversation` it is the shared transcript. The recall tier — old items the summary covers,
brought back verbatim when the debate returns to them — is a block of its own (`recall_tier`).

The order is for the provider's prompt cache: a server reuses what it computed for the
start of a request that repeats the start of an earlier one, so each tier sits after the
ones that change less often than it does. Between two calls of one agent the system
message and the topic never change, the summary changes when it is remade, the history
grows at its end (a refinement's history is the one its critiques had, and a summarization
request carries the summary and the history its last view had, then what is new), the
recalled items and retrieved passages follow what is said now (a new query each call), and
only the task is new each time. Recall sits after the history although its items are older: placed before it,
each new recall would make the server recompute the whole verbatim window, the longest
tier (a conversation's share served from cache fell from 46 % to 20 % at an 8,000-token
view, 82 % to 54 % at 32,000: `bench/cache.py`). A new tier goes where its rate of change
puts it.

Layout 3 (and later) keeps a conversation's recall block where it was sent: in the same
speaker's later views it sits after the messages before the turn that recalled it, byte for
byte, and the window goes on after it (`_history_tiers`), for as long as the summary it came
with stands (`ConversationProtocol._held`); items it shows are not sent again. So the next
request repeats the previous one up to its task and only the newest block is new. Layout 2
(`LAYOUT` 2) sent a fresh block each call and none of the earlier ones. Debates recorded in an
earlier layout (1: the problem in every task, a refinement's own proposal quoted instead of
kept in its history, a summarization request's material inside its task, recalled items
before the history; 2: no held blocks) rebuild, and resume, in their own layout
(`DebateIndex.layout`).

Layout 4 (new debates) makes a conversation's summary append-only: a list of blocks, each the
summary of the messages that left the verbatim window at one roll, written once and copied
unchanged into every later summary (`Summary.blocks`); the summary message opens with a line
that never changes, and the oldest blocks are consolidated into one only when they outgrow
the tier's cap. So a roll changes a speaker's request from its newest block on, not from the
end of the system message (`moot.core.protocols.conversation`).

Pins (`/pin`, `pinned = [...]`) are a tier of their own after the summary: what a person
chose to keep verbatim changes only when they pin or unpin, so it sits with the stable prefix,
in the order pinned. A pinned item is not repeated in the verbatim window, and never gives
way: a pin that would not fit beside the rest of the smallest view is refused when asked for.

Layout 5 (new debates) does the same for a rounds agent's perspective summary: each summary
step appends a block for the items since the last one, labelled with the rounds it covers,
under a first line that never changes (`PERSPECTIVE_HEADING`), and consolidates the oldest
blocks only past the cap (`moot.core.protocols.rounds`).

Layout 6 (new debates) asks for a conversation's summary from the speaker whose turn rolls it,
as a continuation of that speaker's own view: its system message, the summary so far, its pins
and its verbatim window (held recall blocks where they were), then a task naming the turns
leaving the window (`continues_turn`). Its previous request repeats through all but the newest
messages, so a provider serves nearly all of the summarize request from its cache, where a
request in the judge's words shared nothing with what came before it. The summary is still the
one shared tier every agent reads; a request that would not fit is made the layout-5 way. A
roll forced by tokens keeps a quarter of the window's cap, not half: fewer rolls, each of which
makes every speaker read the window after the new block afresh (`TOKEN_HYSTERESIS_6`).

A view fits by construction. `ViewBuilder.build` gets the budget the view has with the
full answer reserve, and a `stretch`: how many more tokens it may take from the answer
down to the answer's floor. What gives way, in order, each tier only once the ones
before it are spent (`build` is the one place that knows the order; a new tier goes
into that list):

0. prompts: the compact system prompt and task template (`core/prompts/compact/`) when
   the full ones would take more than `COMPACT_SHARE` of the budget;
1. recall: the recalled items, the least relevant first (the record counts them as dropped);
2. history: the oldest verbatim items (a marker says how many);
3. quotes: quoted material in the task (a critique's target, the critiques received,
   the judge's material) is shortened, down to `QUOTE_FLOOR` tokens each;
4. the answer: the view takes up to `stretch` tokens more, so the caller's reply limit
   shrinks toward its floor (it is computed from what the view left);
5. last resorts: quotes below the floor, then the summary;
6. refusal: `ContextOverflow`, carrying the smallest size the view could have.

Summaries are made to fit before they are used (their caps come from the room the views
that read them have: see `moot.core.engine.summaries`). A conversation rolls its summary
forward instead of dropping anything (see `moot.core.protocols.conversation`).

Over 400 lines: the order in which tiers are laid out and give way is one decision, kept in
one place; what goes into each tier (summaries, recall, passages, tool messages) lives beside it.

Over 400 lines: what a view holds (the renderers, one per tier) and how it is fitted to its budget
(`ViewBuilder`) must agree to the byte, since `moot context` rebuilds every request with the
renderers alone; the tiers that grew their own rules live beside it (`pins.py`,
`recall_tier.py`, `tool_messages.py`). Summary blocks would be the next to move out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .. import tokens
from ..errors import ContextOverflow
from ..models.state import Contribution, Summary, TierTokens, ViewRecord
from ..prompts import COMPACT, placeholder, render
from ..providers.base import Message
from .index import DebateIndex
from .pins import pinned_message, pins_for
from .reads import reads_note
from .recall_tier import block_message, give_way, recall_message
from .tool_messages import references_message, tool_messages

LAYOUT = 6
"""The view layout of new debates (see the module doc); a debate keeps the one it began with."""
HISTORY_PHASES = frozenset({"proposal", "critique", "refinement", "turn"})
"""Phases whose views carry a summary and verbatim history (the others carry material in the task)."""
TRUNCATION_NOTE = "\n\n[… shortened to fit the context budget]"
COMPACT_SHARE = 0.35
"""Use the compact prompts when the full system prompt and task template would take more
than this share of a view's budget (at the default 8,000 tokens they take under a tenth)."""
QUOTE_FLOOR = 96
"""Tokens a quoted text keeps before the answer reserve gives way (shorter, it says little)."""
MIN_QUOTE = 16


class ViewTooLarge(ContextOverflow):
    """Even the smallest form of a view does not fit: `need` is that smallest size (moot's count)."""

    def __init__(self, message: str, need: int) -> None:
        super().__init__(message)
        self.need = need


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


SUMMARY_HEADING = "## Summary of the conversation so far"
PERSPECTIVE_HEADING = "## Summary of your earlier debate"


def summary_message(s: Summary, conversation: bool = False) -> str:
    if s.blocks and s.scope == "perspective":  # layout 5: a rounds agent's, in the same shape
        return (f"{PERSPECTIVE_HEADING}\n\n{s.summary.strip()}\n\n"
                f"(rounds 1–{s.blocks[-1].last}; the later items follow)")
    if s.blocks:  # layout 4: a fixed first line, then the blocks, each under its own label
        return f"{SUMMARY_HEADING}\n\n{s.summary.strip()}\n\n(turns 1–{s.blocks[-1].last}; the latest messages follow)"
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


def continued_heading(conversation: bool) -> str:
    """The heading of the verbatim window's part after a held recall block (layout 3)."""
    return ("## The latest messages, continued (verbatim, oldest first)" if conversation
            else "## Your recent debate history, continued (verbatim, oldest first)")


OWN_PROPOSAL_ABOVE = "(your proposal for this round: in your debate history above)"
CRITIQUE_ABOVE = "(in your debate history above)"
"""What a layout-2 refinement's task says of its own proposal and of each critique its history
carries (quoted once, there)."""


def _quote(text: str, limit: int | None, model: str) -> str:
    if limit is None:
        return text.strip()
    cut = tokens.truncate_to_tokens(text.strip(), limit, model)
    return cut if cut == text.strip() else cut + TRUNCATION_NOTE


def inline_history(record: ViewRecord, index: DebateIndex) -> bool:
    """A summarization request whose history (earlier summary and items) sits inside its task: in
    layout 1, and wherever its template places `{{history}}` (the judge's, a user's own prompt)."""
    return record.phase == "summarize" and (
        index.layout < 2 or placeholder(index.prompts.get(record.task_key, ""), "history"))


def _owner(record: ViewRecord) -> str:
    return str(record.task_params.get("owner", record.agent_id))


ABOVE_KIND = "summarize_conversation_above"
"""The task kind of a summarize request that continues its speaker's turn view (layout 6)."""


def continues_turn(record: ViewRecord) -> bool:
    """A summarize request laid out as its speaker's turn view, its task after the window (layout 6)."""
    return record.phase == "summarize" and record.task_key.removesuffix(COMPACT).endswith("/" + ABOVE_KIND)


def _conversation(record: ViewRecord) -> bool:
    """A conversation's turn, or a roll of a conversation's summary (labels and headings by turn)."""
    return record.phase == "turn" or (record.phase == "summarize" and "summarize_conversation" in record.task_key)


CONFIDENCE_ASK = ("After your answer, say how confident you are that it is right, from 0 to 100, on a line of its "
                  "own: `Confidence: 80`.")
"""Added to an answer's task when the votes are weighed by confidence (`debate.weight`)."""


def render_task(record: ViewRecord, index: DebateIndex) -> str:
    """The phase's task message, from the record's template key, parameters and ids."""
    p: dict[str, Any] = {"problem": index.problem, **record.task_params}
    limit = p.pop("quote_limit", None)
    transcript = p.pop("transcript", False)
    own = p.pop("own_answer_id", None)
    focus = p.pop("focus", None)
    ask_confidence = p.pop("ask_confidence", False)
    m = record.model
    ids = record.task_contribution_ids
    phase = record.phase
    if phase == "critique":
        p["target_proposal"] = _quote(index.contributions[ids[0]].content, limit, m)
    elif phase == "refinement":
        # Layout 2 keeps its own proposal and the critiques in the history (the next summary's
        # request starts the same way): the task points at them; what the history had to drop
        # to fit is quoted here instead.
        above = set(history_ids(record, index)) if index.layout >= 2 else set()
        p["own_proposal"] = OWN_PROPOSAL_ABOVE if ids[0] in above else _quote(index.contributions[ids[0]].content,
                                                                              limit, m)
        crits = [index.contributions[i] for i in ids[1:]]
        p["critiques"] = "\n\n".join(
            f"### Critique from {index.name(c.agent_id)} ({c.role})\n\n"
            + (CRITIQUE_ABOVE if c.id in above else _quote(c.content, limit, m)) for c in crits
        ) or "(no critiques were received)"
    elif phase == "summarize" and inline_history(record, index):
        blocks: list[str] = []
        if record.summary_id:
            blocks.append("### Earlier summary\n\n" + index.summaries[record.summary_id].summary.strip())
        p["history"] = _quote("\n\n".join(blocks + _summarized_blocks(record, index)), limit, m)
    elif phase == "answer":
        first = int(p.get("round", 1)) <= 1
        p["own_answer"] = (_brief(record, index, own, limit) if own else
                           "(none: this is the first round)" if first else "(your previous answer was not recorded)")
        anonymous = p.pop("anonymous", False)  # `adaptive`: answers without their authors' names
        p["other_answers"] = "\n\n".join(
            (f"### Answer {chr(65 + k)}" if anonymous else
             f"### {index.name(index.contributions[i].agent_id)} ({index.contributions[i].role})")
            + f"\n\n{_brief(record, index, i, limit)}" for k, i in enumerate(j for j in ids if j != own)
        ) or ("(none: this is the first round)" if first else "(no other answers were recorded)")
    elif phase == "rank":  # anonymized: "Response A", "Response B"… in the record's order
        p["answers"] = "\n\n".join(f"### Response {chr(65 + k)}\n\n{_quote(index.contributions[i].content, limit, m)}"
                                   for k, i in enumerate(ids))
    elif phase in ("synthesis", "score") and transcript:
        parts: list[str] = []
        if record.summary_id:
            s = index.summaries[record.summary_id]
            parts.append(f"### Summary of turns 1–{s.covered_count}\n\n{s.summary.strip()}")
        parts += [format_item(index.contributions[i], "", index) for i in ids]
        p["material"] = _quote("\n\n".join(parts), limit, m) if limit else "\n\n".join(parts)
    elif phase in ("synthesis", "score"):
        if record.summary_id and phase == "synthesis":
            summary = index.summaries[record.summary_id].summary
            material = "### Summary of the final round\n\n" + _quote(summary, limit, m)
        else:
            material = "\n\n".join(
                f"### {index.name(c.agent_id)} ({c.role}) · round {c.round} {c.type}\n\n{_quote(c.content, limit, m)}"
                for c in (index.contributions[i] for i in ids)
            )
        p["material"] = material
    if phase == "synthesis" and "ranking" in record.inline:  # a council's aggregate ranking
        p["material"] = f"{p['material']}\n\n{record.inline['ranking']}"
    p.pop("owner", None)
    text = render(index.prompts[record.task_key], **p)
    if focus:
        text += f"\n\n## The user asks this summary to focus on\n\n{focus}"
    if ask_confidence:
        text += f"\n\n{CONFIDENCE_ASK}"
    notes = record.inline.get("notes")
    if notes:
        text += "\n\n" + notes
    return text


def _summarized_blocks(record: ViewRecord, index: DebateIndex) -> list[str]:
    """What a summarization request summarizes: its items, labelled for their owner, then the
    partial summaries of a reduce step (`inline["part…"]`)."""
    owner = _owner(record)
    blocks = [format_item(index.contributions[i], owner, index) for i in record.task_contribution_ids]
    return blocks + [record.inline[k] for k in sorted(record.inline) if k.startswith("part")]


def _brief(record: ViewRecord, index: DebateIndex, cid: str, limit: int | None) -> str:
    """A quoted contribution, or the summary of it the view used instead (`inline["brief:<id>"]`)."""
    text = record.inline.get(f"brief:{cid}")
    return text if text is not None else _quote(index.contributions[cid].content, limit, record.model)


def history_ids(record: ViewRecord, index: DebateIndex) -> list[str]:
    """The verbatim history of a view, oldest first (a conversation's stored as a span of turns)."""
    if record.history_turns is not None:
        return index.turn_ids(*record.history_turns)
    return record.contribution_ids


Tier = Literal["system", "summary", "pinned", "recall", "history", "references", "task"]
"""Where a message of a view belongs, in the order views place them: the most stable first."""


def system_text(record: ViewRecord, index: DebateIndex) -> str:
    """The system message a call's view opens with."""
    system = index.prompts[record.system_key]
    if record.phase == "turn" or index.layout >= 2:
        system = conversation_system(system, index.problem)
    return system


def render_tiers(record: ViewRecord, index: DebateIndex) -> list[tuple[Tier, Message]]:
    """The exact messages of a call, rebuilt from its record, each with its tier (see the module
    doc: what changes least between an agent's calls comes first)."""
    conversation = _conversation(record)
    tiers: list[tuple[Tier, Message]] = [("system", {"role": "system", "content": system_text(record, index)})]
    summarize = record.phase == "summarize" and not inline_history(record, index)
    if record.summary_id and (record.phase in HISTORY_PHASES or summarize):
        summary = index.summaries[record.summary_id]
        text = summary_message(summary, conversation if not summarize else summary.scope == "conversation")
        tiers.append(("summary", {"role": "user", "content": text}))
    if record.pinned:
        tiers.append(("pinned", {"role": "user", "content": pinned_message(record.pinned, index.pins)}))
    recalled = recall_message(record, index, lambda c: item_label(c, record.agent_id, index))
    if recalled is not None and index.layout < 2:
        tiers.append(("recall", recalled))
    if summarize and continues_turn(record):
        tiers += _history_tiers(record, index, conversation)
    elif summarize:
        blocks = _summarized_blocks(record, index)
        if blocks:
            limit = record.task_params.get("quote_limit")
            body = _quote("\n\n".join(blocks), limit, record.model)
            tiers.append(("history", {"role": "user", "content": history_message([body], 0, conversation)}))
    else:
        tiers += _history_tiers(record, index, conversation)
    if recalled is not None and index.layout >= 2:
        tiers.append(("recall", recalled))
    if (passages := references_message(record)) is not None:  # retrieved for this call's query
        tiers.append(("references", passages))
    tiers.append(("task", {"role": "user", "content": render_task(record, index)}))
    return tiers


def _history_tiers(record: ViewRecord, index: DebateIndex, conversation: bool) -> list[tuple[Tier, Message]]:
    """The verbatim window, oldest first, with the reader's held recall blocks (layout 3) each
    where it was sent: after the messages before its turn. A block no kept message precedes is
    not shown (it rolled out, or was dropped to fit, with the messages before it)."""
    ids = history_ids(record, index)
    if not ids and not record.dropped_ids:
        return []
    owner = record.agent_id
    items = [index.contributions[i] for i in ids]
    held = sorted((b for b in (record.recall.held if record.recall is not None else [])
                   if items and items[0].round < b.turn), key=lambda b: b.turn)
    out: list[tuple[Tier, Message]] = []
    start = 0
    for block in [*held, None]:
        end = len(items) if block is None else next((k for k in range(start, len(items))
                                                     if items[k].round >= block.turn), len(items))
        part = [format_item(c, owner, index) for c in items[start:end]]
        if not out:
            out.append(("history", {"role": "user", "content": history_message(part, len(record.dropped_ids),
                                                                               conversation)}))
        elif part:
            out.append(("history", {"role": "user", "content": "\n\n".join([continued_heading(conversation), *part])}))
        if block is not None:
            out.append(("recall", block_message(record, index, block.items,
                                                lambda c: item_label(c, record.agent_id, index))))
        start = end
    return out


def render_messages(record: ViewRecord, index: DebateIndex) -> list[Message]:
    """The exact messages of a call, rebuilt from its record."""
    return [m for _, m in render_tiers(record, index)] + tool_messages(record)


def tier_tokens(record: ViewRecord, tiers: list[tuple[Tier, Message]]) -> TierTokens:
    """Tokens per tier of a view's messages (before any tool step: those are the loop's to count)."""
    m = record.model
    t = TierTokens()
    for tier, message in tiers:
        setattr(t, tier, getattr(t, tier) + tokens.count_message(message, m))
    t.total = (t.system + t.summary + t.pinned + t.recall + t.history + t.references + t.task
               + tokens.REPLY_PRIMING)
    return t


@dataclass
class ViewBuilder:
    """Chooses what goes into a view so that it fits, using cached per-item token counts."""

    index: DebateIndex
    _item_tokens: dict[tuple[str, str, str], int] = field(default_factory=dict)
    _prompt_tokens: dict[tuple[str, str], int] = field(default_factory=dict)

    def item_tokens(self, c: Contribution, owner: str, model: str) -> int:
        key = (c.id, owner, model)
        n = self._item_tokens.get(key)
        if n is None:
            n = tokens.count_text(format_item(c, owner, self.index), model) + 2  # "\n\n" joints
            self._item_tokens[key] = n
        return n

    def forget_archived(self) -> None:
        """Drop the counts of items the index let go of (see `DebateIndex.archive`)."""
        held = self.index.contributions
        self._item_tokens = {k: n for k, n in self._item_tokens.items() if k[0] in held}

    def prompt_tokens(self, key: str, model: str) -> int:
        n = self._prompt_tokens.get((key, model))
        if n is None:
            n = tokens.count_text(self.index.prompts.get(key, ""), model)
            self._prompt_tokens[(key, model)] = n
        return n

    def choose_prompts(self, record: ViewRecord, budget: int) -> None:
        """Tier 0: the compact system prompt and task template where the full ones would take
        more than `COMPACT_SHARE` of `budget` (each only when the debate has a compact variant)."""
        system, task = record.system_key.removesuffix(COMPACT), record.task_key.removesuffix(COMPACT)
        full = self.prompt_tokens(system, record.model) + self.prompt_tokens(task, record.model)
        small = full > COMPACT_SHARE * budget
        prompts = self.index.prompts
        record.system_key = system + COMPACT if small and system + COMPACT in prompts else system
        record.task_key = task + COMPACT if small and task + COMPACT in prompts else task

    def room(self, record: ViewRecord, budget: int) -> int:
        """Tokens left in `budget` beside the fixed part of `record`'s view: its prompts (compact
        where `build` would choose them) and its task, without summary, history or quoted material."""
        probe = record.model_copy(update={"summary_id": None, "contribution_ids": [], "dropped_ids": [],
                                          "task_contribution_ids": [], "history_turns": None, "recall": None,
                                          "task_params": dict(record.task_params), "inline": {}})
        self.choose_prompts(probe, budget)
        return budget - self._count(probe)[1]

    def _count(self, record: ViewRecord) -> tuple[list[Message], int]:
        messages = render_messages(record, self.index)
        return messages, tokens.count_messages(messages, record.model)

    def _tiers(self, record: ViewRecord) -> TierTokens:
        return tier_tokens(record, render_tiers(record, self.index))

    def build(self, record: ViewRecord, history: list[Contribution], budget: int, stretch: int = 0) -> list[Message]:
        """Fill `record` (prompts, history ids, quote limit, tokens, budget) so the view fits
        `budget`, or `budget + stretch` once tiers 0–3 are spent (see the module doc); return
        its messages. Raises `ViewTooLarge` when even the smallest view does not fit."""
        record.budget = budget
        record.history_turns = None
        record.dropped_ids = []
        record.task_params.pop("quote_limit", None)
        self.choose_prompts(record, budget)
        m = record.model
        # A summarize request that continues a turn view carries that view's pins (the same prefix).
        record.pinned = pins_for(record.agent_id, "turn" if continues_turn(record) else record.phase, self.index.pins)
        pinned = set(record.pinned)  # kept in their own tier: not twice
        keep: list[Contribution] = [c for c in history if c.id not in pinned]
        record.contribution_ids = [c.id for c in keep]
        messages, total = self._count(record)
        while total > budget and record.recall is not None and record.recall.items:  # tier 1: recalled items
            record.recall = give_way(record.recall, total - budget, m, self.index,
                                     lambda c: item_label(c, record.agent_id, self.index))
            messages, total = self._count(record)
        if total > budget and keep:  # tier 2: the oldest verbatim items
            keep = self._drop_oldest(record, keep, messages, budget)
            messages, total = self._count(record)
        if total > budget:
            fitted = self._shorten_quotes(record, budget, QUOTE_FLOOR)  # tier 3
            if fitted is None and stretch > 0:  # tier 4: the answer gives way
                record.task_params["quote_limit"] = QUOTE_FLOOR
                messages, total = self._count(record)
                if total <= budget + stretch:
                    fitted = messages, total
                    record.budget = budget + stretch
            if fitted is None:  # tier 5
                fitted = self._last_resorts(record, budget + stretch)
                record.budget = budget + stretch
            messages, total = fitted
        record.tokens = self._tiers(record)
        if record.phase == "turn" and keep and not record.dropped_ids:
            turns = [c.round for c in keep]
            if turns == list(range(turns[0], turns[-1] + 1)):
                record.history_turns, record.contribution_ids = (turns[0], turns[-1]), []
        return messages

    def _drop_oldest(self, record: ViewRecord, keep: list[Contribution], messages: list[Message],
                     budget: int) -> list[Contribution]:
        """The newest items that fit beside the rest of the view (their ids in the record, the
        others in `dropped_ids`)."""
        m = record.model
        fixed_msgs = [message for tier, message in render_tiers(record, self.index) if tier != "history"]
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
            if not keep or self._count(record)[1] <= budget:
                return keep
            record.dropped_ids.append(keep.pop(0).id)

    def _shorten_quotes(self, record: ViewRecord, budget: int, floor: int) -> tuple[list[Message], int] | None:
        """The view with the longest quote limit of at least `floor` tokens that fits `budget`
        (no limit when it fits without one); None, and no limit set, when none fits."""
        record.task_params.pop("quote_limit", None)
        messages, total = self._count(record)
        if total <= budget:
            return messages, total
        record.task_params["quote_limit"] = floor
        messages, total = self._count(record)
        if total > budget:
            record.task_params.pop("quote_limit", None)
            return None
        lo, hi = floor, max(floor, budget)  # lo fits; find the largest limit that does
        best = messages, total
        while hi - lo > max(1, lo // 32):
            mid = (lo + hi + 1) // 2
            record.task_params["quote_limit"] = mid
            trial = self._count(record)
            if trial[1] <= budget:
                lo, best = mid, trial
            else:
                hi = mid - 1
        record.task_params["quote_limit"] = lo
        return best

    def _last_resorts(self, record: ViewRecord, budget: int) -> tuple[list[Message], int]:
        """Tier 5: quotes below the floor, then the summary; raise `ViewTooLarge` when nothing
        more can give."""
        fitted = self._shorten_quotes(record, budget, MIN_QUOTE)
        if fitted is None and record.summary_id and record.phase in HISTORY_PHASES:
            record.inline["dropped_summary"] = record.summary_id
            record.summary_id = None
            fitted = self._shorten_quotes(record, budget, MIN_QUOTE)
        if fitted is not None:
            return fitted
        record.task_params["quote_limit"] = MIN_QUOTE
        need = self._count(record)[1]
        record.task_params.pop("quote_limit", None)
        raise ViewTooLarge(f"the {record.phase} view of {record.agent_id} needs {need} tokens even with its "
                           f"history and quotes dropped, more than its {budget}-token budget", need)

"""The state of a debate: its rounds, contributions, summaries, the views its calls saw, its totals.

Folded from the event log (`storage.state`) and saved as the snapshot beside it.

Over 400 lines: every model of a debate's state in one place, because the snapshot, the
log's events and the report all read them together; none of them holds behaviour beyond checks.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from .base import Model
from .terms import (
    JUDGE_ID,
    ContributionType,
    DebateStatus,
    Phase,
    ProtocolName,
    SummaryMethod,
    SummaryStrategy,
    SummaryTrigger,
)
from .tools import ToolsSetup, ToolStep


class CallMetadata(Model):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    model: str = ""
    provider: str = ""
    cost_usd: float = 0.0
    call_id: str | None = None
    attempts: int = 1
    finish_reason: str | None = None
    """How the reply ended, as the server said: `stop`, or `length` when it was cut at max_tokens."""
    usage_estimated: bool = False
    """The server reported no usable usage: the token counts are moot's own (tiktoken)."""
    clipped_at: int | None = None
    """The reply ran far past its token limit and moot stopped reading it at this many bytes:
    the content is what came before (`max_tokens` × 32 bytes + 16 KiB of text)."""
    cached_tokens: int = 0
    """Of `prompt_tokens`, those the provider served from its prompt cache (priced at the cached
    rate); 0 when the server did not say."""
    server_truncated: bool = False
    """The server ended the reply short of its limit because the request filled its window (its
    prompt count ran past what moot budgeted): `finish_reason` is `length`, but not `max_tokens`."""


class Usage(Model):
    """Calls, tokens and cost summed: for the whole debate and per agent (every kind of call)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    summary_tokens: int = 0
    """Of the tokens above, those spent on summarization calls."""
    cached_tokens: int = 0
    """Of `prompt_tokens`, those the provider served from its prompt cache."""
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Contribution(Model):
    id: str
    agent_id: str
    role: str
    type: ContributionType
    round: int
    target_agent_id: str | None = None
    content: str
    metadata: CallMetadata = Field(default_factory=CallMetadata)
    carried_from: str | None = None
    """Set when a proposal reuses an earlier refinement (no LLM call was made)."""
    reads: list[str] = Field(default_factory=list)
    """What the agent read with tools while writing it: one extract per tool result;
    part of its perspective history, so summaries cover it."""
    ts: float = Field(default_factory=time.time)


class SummaryMetadata(Model):
    before_chars: int = 0
    after_chars: int = 0
    before_tokens: int = 0
    after_tokens: int = 0
    latency_ms: int = 0
    tokens_used: int = 0
    """prompt_tokens + completion_tokens of the summarization calls (0 for rule-based)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Of `prompt_tokens`, those the provider served from its prompt cache."""
    cost_usd: float = 0.0
    model: str | None = None
    written_by: str | None = None
    """The agent asked to write it when that is not its owner (view layout 6: a debater asked
    for the shared summary as the continuation of its own view); None: its owner was."""
    fallback_reason: str | None = None
    """Why the configured method did not write this summary (the summary's `method` says what did)."""
    requested_method: SummaryMethod | None = None
    """The configured method, when another one wrote the text (a failed LLM summary's rule-based fallback)."""
    input_tokens: int = 0
    """Tokens fed to the summarizer (all chunks); what `rolling` keeps flat."""
    chunks: int = 1
    facts: int | None = None
    """How many facts (decisions, numbers, open questions) the texts it covers hold (None: a
    summary made before this count)."""
    facts_kept: int | None = None
    """How many of them its text holds (`Summary.dropped_facts` lists the others)."""


FactKind = Literal["decision", "number", "open"]


class DroppedFact(Model):
    """A fact of a text a summary covers that the summary's text no longer holds
    (`moot.core.context.facts`)."""

    kind: FactKind
    text: str
    source: str
    """Where it came from, as a person reads it ("Turn 3 · Ana (architect)", "Turns 1–20 (summarized …)")."""
    item_id: str | None = None
    """The contribution it came from (None: an earlier summary's block, at a consolidation)."""
    turn: int = 0
    """The step (turn or round) of its text (a block's: its first turn)."""
    agent_id: str | None = None


class SummaryBlock(Model):
    """One part of an append-only summary (view layout 4: a conversation's; 5: a rounds agent's
    perspective too): the summary of the items of turns (or rounds) `first`–`last`, written once
    and copied unchanged into every later summary, until the oldest blocks are consolidated into one."""

    first: int
    """The first turn (or round) it covers."""
    last: int
    """The last turn it covers."""
    count: int
    """How many messages it covers."""
    made_at: int
    """The turn at which it was written."""
    text: str
    consolidated: bool = False
    """A summary of older blocks (made when the blocks outgrew the tier's cap)."""
    unit: Literal["round"] | None = None
    """`round`: a rounds agent's perspective block, counted in rounds (None: a conversation's, in turns)."""

    @property
    def label(self) -> str:
        """Its heading in the summary: fixed when it is written, so it never changes a prefix."""
        word = "Round" if self.unit == "round" else "Turn"
        span = f"{word} {self.first}" if self.first == self.last else f"{word}s {self.first}–{self.last}"
        how = "consolidated" if self.consolidated else "summarized"
        return f"### {span} ({how} {'in' if self.unit == 'round' else 'at'} {word.lower()} {self.made_at})"


def join_blocks(blocks: list[SummaryBlock]) -> str:
    """The text of an append-only summary: its blocks in order, each under its label."""
    return "\n\n".join(f"{b.label}\n\n{b.text.strip()}" for b in blocks)


class Summary(Model):
    id: str
    agent_id: str
    role: str
    round: int
    summary: str
    method: SummaryMethod
    strategy: SummaryStrategy
    trigger: SummaryTrigger
    covered_through: str | None = None
    """The newest perspective item this summary stands in for (with all older ones);
    later views show only the items after it verbatim. An id, not a list, so that
    summaries stay small however long the debate."""
    covered_count: int = 0
    focus: str | None = None
    """What the user asked the summary to focus on (`/summarize agent TEXT`)."""
    scope: Literal["perspective", "conversation"] = "perspective"
    """`conversation`: a rolling summary of a conversation's transcript (shared, or one agent's)."""
    blocks: list[SummaryBlock] | None = None
    """View layout 4: the conversation summary as blocks, oldest first (`summary` is their
    `join_blocks`); None for a summary written whole (every earlier layout, and perspectives)."""
    dropped_facts: list[DroppedFact] | None = None
    """The facts of what this summarization covered that its text no longer holds."""
    metadata: SummaryMetadata = Field(default_factory=SummaryMetadata)
    ts: float = Field(default_factory=time.time)

    @property
    def facts_kept_label(self) -> str | None:
        """"7/9 facts kept": how many of the facts of what it covered its text holds (None: not counted)."""
        total, kept = self.metadata.facts, self.metadata.facts_kept
        if total is None or kept is None:
            return None
        return f"{kept}/{total} facts kept"

    @property
    def facts_line(self) -> str | None:
        """"kept 9 of 12 facts; lost: p99 ≤ 200 ms (Turn 3 · Ana (architect)) …", or None when not counted."""
        total, kept = self.metadata.facts, self.metadata.facts_kept
        if total is None or kept is None:
            return None
        lost = self.dropped_facts or []
        line = f"kept {kept} of {total} facts"
        if lost:
            line += "; lost: " + " · ".join(f"{f.text} ({f.source})" for f in lost)
        return line

    @property
    def written_by(self) -> str:
        """What wrote the text, as shown everywhere: the method, and the one it stood in for."""
        asked = self.metadata.requested_method
        return f"{self.method} (fallback from {asked})" if asked and asked != self.method else self.method

    @model_validator(mode="after")
    def _method_that_wrote_it(self) -> Summary:
        """`method` is what produced the text. Debates recorded before that rule kept the configured
        method beside a fallback reason; a fallback has always been the rule-based summary."""
        if self.metadata.fallback_reason and self.method != "rule-based":
            self.metadata.requested_method = self.metadata.requested_method or self.method
            self.method = "rule-based"
        return self


class TierTokens(Model):
    system: int = 0
    summary: int = 0
    recall: int = 0
    """Old items the summary covers, brought back verbatim (the recall tier)."""
    history: int = 0
    task: int = 0
    tools: int = 0
    """Tool definitions and the tool loop's messages (calls and results)."""
    references: int = 0
    """The retrieval tier: reference passages, where tools cannot be called."""
    pinned: int = 0
    """Items a person pinned (and the configured constraints): kept verbatim, never summarized away."""
    total: int = 0
    """Whole request in chat format (tiers plus per-message overhead)."""


class RecalledItem(Model):
    """One item of a view's recall tier, and why it was recalled."""

    id: str
    """The contribution (a conversation's message, an item of the agent's perspective)."""
    score: float
    """The sum of the inverse document frequencies of the rare query words it holds."""
    terms: list[str] = Field(default_factory=list)
    """Those words, the rarest first."""
    span: tuple[int, int] | None = None
    """For a long item, the passage around the match that was sent: character offsets into its
    content (None: the whole item)."""


class HeldItem(Model):
    """An item of a recall block an earlier view placed (its id, and its passage when it was one)."""

    id: str
    span: tuple[int, int] | None = None


class HeldRecall(Model):
    """A recall block an earlier call of the same reader placed in its history (view layout 3):
    it stays where it was sent, before the messages of `turn`, until the window rolls past it."""

    turn: int
    """The turn whose call recalled it: the block sits after the messages before that turn."""
    items: list[HeldItem] = Field(default_factory=list)


class RecallRecord(Model):
    """What a view recalled: enough to rebuild it without searching again."""

    query: list[str] = Field(default_factory=list)
    """The rare words of the latest messages and the task that were searched, rarest first."""
    items: list[RecalledItem] = Field(default_factory=list)
    """Sent, best first (rendered oldest first)."""
    cap: int = 0
    """The tier's token cap."""
    dropped: int = 0
    """Items found and chosen that gave way for the view to fit its budget."""
    held: list[HeldRecall] = Field(default_factory=list)
    """The reader's earlier recall blocks its verbatim window still holds, oldest first (view
    layout 3: each stays in place, so the requests after it share it as a cached prefix)."""

    @property
    def ids(self) -> list[str]:
        """Every item the view holds through recall: the held blocks' and this call's."""
        return [it.id for b in self.held for it in b.items] + [it.id for it in self.items]


class ViewRecord(Model):
    """What one LLM call saw, by reference, so the exact messages can be rebuilt."""

    call_id: str
    agent_id: str
    round: int
    phase: Phase
    target_agent_id: str | None = None
    model: str = ""
    system_key: str = ""
    """Key into DebateState.prompts of the system prompt text."""
    task_key: str = ""
    """Key into DebateState.prompts of the task template."""
    task_params: dict[str, Any] = Field(default_factory=dict)
    summary_id: str | None = None
    contribution_ids: list[str] = Field(default_factory=list)
    """Verbatim history items, oldest first."""
    dropped_ids: list[str] = Field(default_factory=list)
    """History items that did not fit and were replaced by a marker."""
    history_turns: tuple[int, int] | None = None
    """A conversation's verbatim window as the turns `first..last` of the transcript, in place
    of `contribution_ids` (so a 10,000-turn log does not repeat fifty ids a turn)."""
    task_contribution_ids: list[str] = Field(default_factory=list)
    """Contributions quoted inside the task (the critique's target, the critiques received)."""
    recall: RecallRecord | None = None
    """The recall tier: old items brought back verbatim (None: the tier was off or found nothing)."""
    pinned: list[str] = Field(default_factory=list)
    """The pins the view carried, by key into `DebateState.pins`, in the order they were pinned."""
    inline: dict[str, str] = Field(default_factory=dict)
    """Text used in the view that is not a stored contribution (e.g. summarization input)."""
    tokens: TierTokens = Field(default_factory=TierTokens)
    budget: int = 0
    """Tokens (moot's count) the view was built to fit: the window's room divided by `count_ratio`."""
    max_tokens: int = 0
    window: int = 0
    """The context window this call was fitted into (0 in debates recorded before it was kept)."""
    window_source: Literal["configured", "discovered", "learned"] = "configured"
    """Where the window came from: the config, the server (at start) or a refusal."""
    count_ratio: float = 1.0
    """The server's token count over moot's, as known when the view was built."""
    tools: list[str] = Field(default_factory=list)
    """Tools offered to the call (by name); empty when none were."""
    tool_steps: list[ToolStep] = Field(default_factory=list)
    """The tool loop: each model turn that called tools and what came back; the exact messages
    of the call's last request are the view's, then these."""


class Tally(Model):
    """How a final answer was reached without (or beside) the judge: the answers extracted, the votes,
    the tie and how it was broken; for a council, each author's mean rank."""

    answers: dict[str, str | None] = Field(default_factory=dict)
    """Agent id → its extracted answer (None: none could be parsed), in agent order."""
    counts: dict[str, int] = Field(default_factory=dict)
    """Answer → votes, most first."""
    winner: str | None = None
    tied: list[str] = Field(default_factory=list)
    """The answers that shared the most votes when there was a tie (empty otherwise)."""
    rule: str = ""
    """How the winner was chosen, in words (a tie's reproducible break included)."""
    ranks: dict[str, float] = Field(default_factory=dict)
    """Council: author id → mean position in the others' rankings (1 = best), best first."""
    rankings_parsed: int = 0
    """Council: how many rankings could be read."""
    kind: Literal["vote", "council"] = "vote"
    weighting: Literal["plain", "confidence"] = "plain"
    """`confidence`: the winner is the confidence-weighted majority; `plain_winner` the plain one beside it."""
    confidences: dict[str, int | None] = Field(default_factory=dict)
    """`confidence`: agent id → the confidence its answer stated (None: none, it weighed 1)."""
    weighted: dict[str, float] = Field(default_factory=dict)
    """`confidence`: answer → the summed weight behind it, most first."""
    plain_winner: str | None = None

    def summary(self) -> str:
        """One line: the winner and how it was reached, or a council's ranks."""
        if self.kind == "council":
            ranks = ", ".join(f"{a} {r:.2f}" for a, r in self.ranks.items()) or "none read"
            return f"mean ranks (1 = best): {ranks}"
        if self.winner is None:
            return "no answer in the asked form"
        if self.winner.startswith("text#"):  # free-form replies vote by their whole text
            return f"{len(self.counts)} distinct free-form answers · {self.rule}"
        shown = self.winner if len(self.winner) <= 60 else self.winner[:59] + "…"
        return f"answer {shown} · {self.rule}"


class Solution(Model):
    description: str
    confidence: int | None = None
    tradeoffs: list[str] = Field(default_factory=list)
    recommendations: list[str] = Field(default_factory=list)
    unresolved: list[str] = Field(default_factory=list)
    synthesized_by: str = JUDGE_ID
    parsed: bool = True
    """False when the judge's reply was not JSON and was kept as plain text."""
    metadata: CallMetadata = Field(default_factory=CallMetadata)
    tally: Tally | None = None
    """The vote (vote, single, simultaneous by majority) or the council's aggregate ranks."""


class Clarification(Model):
    agent_id: str
    question: str
    answer: str = ""
    """Empty: the user gave no answer."""
    round: int = 1
    """Which clarification round (1 = the first questions)."""


class ForkOrigin(Model):
    """Where a fork's history came from: its parent debate, the point it was forked at
    (`round:2`, `round:2:critique`, `turn:40`, `summary:S`) and the parent's first event left out."""

    debate: str
    at: str
    seq: int
    made_at: float = 0.0
    """When the fork was made (its history keeps its parent's times); 0: not recorded."""


class Pin(Model):
    """An item kept verbatim in every later view of the agents that saw it (`/pin`), or a
    constraint of the problem pinned by the config (`pinned = [...]`). The text is held here,
    so a pin outlives the step it came from (a long debate lets old steps go)."""

    key: str
    """The contribution's id, or `constraint-N` for the config's N-th constraint."""
    label: str
    """How people name it: `turn 12`, `round 2 proposal by architect`, `constraint 1`."""
    heading: str
    """Its heading in the pinned tier of a view."""
    text: str
    agents: list[str] = Field(default_factory=list)
    """Whose views carry it (the agents that saw the item); empty: every debater's."""
    active: bool = True
    """False once unpinned: kept, so the views that carried it still rebuild byte for byte."""


class ModeratorNote(Model):
    id: str
    text: str
    after_round: int
    """Agents see it verbatim from their next call on."""
    ts: float = Field(default_factory=time.time)


class ConvergenceScore(Model):
    round: int
    confidence: int | None = None
    """None: the judge's answer held no usable score ("not parsed"); never counts as converged."""
    reason: str = ""
    raw: str | None = None
    """The judge's answer as given, kept when it could not be parsed (shown by the report)."""


class AdaptiveDecision(Model):
    """What the `adaptive` protocol decided after one step (a draw of answers or a debate round),
    and why: the answers counted, the posterior of the leading one, what the step cost."""

    round: int
    step: Literal["draw", "debate"]
    decision: Literal["stop", "draw", "debate"]
    """`stop`: the majority is the final answer; `draw`: more independent answers; `debate`: a round."""
    reason: str
    counts: dict[str, int] = Field(default_factory=dict)
    """Each distinct answer (normalized) → how many of the agents' current answers give it."""
    unparsed: int = 0
    leader: str | None = None
    posterior: float = 0.0
    """The probability that the leader is the most likely answer (see the protocol's stopping rule)."""
    threshold: float = 0.9
    calls: int = 0
    """Calls this step made (answers recorded in its round)."""
    tokens: int = 0
    """Prompt and completion tokens of those calls."""
    cost_usd: float = 0.0
    debaters: list[str] = Field(default_factory=list)
    """`debate`: the agents that take part in the next round."""


class Round(Model):
    number: int
    contributions: list[Contribution] = Field(default_factory=list)
    summaries: dict[str, Summary] = Field(default_factory=dict)
    """Keyed by agent id (the anchor's layout): the agent's latest summary of the round."""
    replaced_summaries: list[Summary] = Field(default_factory=list)
    """Earlier summaries of the same round (an automatic one, then a manual one), kept
    because calls made in between refer to them."""
    calls: list[ViewRecord] = Field(default_factory=list)
    started_at: float = Field(default_factory=time.time)


class AgentInfo(Model):
    id: str
    name: str
    role: str
    model: str
    provider: str
    temperature: float
    budget: int


class DebateState(Model):
    id: str
    problem: str
    protocol: ProtocolName = "rounds"
    status: DebateStatus = "running"
    current_round: int = 0
    """The current step: a round (rounds, simultaneous) or a turn (conversation)."""
    total_rounds: int = 3
    """Steps in all: rounds, or turns for a conversation."""
    rounds: list[Round] = Field(default_factory=list)
    agents: list[AgentInfo] = Field(default_factory=list)
    judge: AgentInfo | None = None
    final_solution: Solution | None = None
    judge_summary: Summary | None = None
    prompts: dict[str, str] = Field(default_factory=dict)
    """Every prompt text used, by key, so views can be rebuilt byte for byte."""
    view_layout: int = 1
    """How this debate's views lay out their messages (see `moot.core.context.view`): kept for
    life, so a debate resumed by a later version goes on as it began and rebuilds as it was sent."""
    config: dict[str, Any] = Field(default_factory=dict)
    """The effective configuration (no secrets) so later commands can continue the debate."""
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)
    last_seq: int = 0
    """Sequence number of the last event applied; resume replays the log after it."""
    log_offset: int = 0
    """In a snapshot: how many bytes of the event log it covers (loading reads only the rest)."""
    error: str | None = None
    exit_code: int = 0
    """What `moot` exits with for this debate as it stands (0 running or done, 3 provider
    failure, 4 config/budget failure, 130 interrupted): set by the terminal events."""
    totals: Usage = Field(default_factory=Usage)
    agent_totals: dict[str, Usage] = Field(default_factory=dict)
    """Tokens and cost per agent id (the judge included), every kind of call counted."""
    clarifications: list[Clarification] = Field(default_factory=list)
    notes: list[ModeratorNote] = Field(default_factory=list)
    pins: dict[str, Pin] = Field(default_factory=dict)
    """Every pin of the debate by key, in the order first pinned (unpinned ones too: see `Pin.active`)."""
    convergence: list[ConvergenceScore] = Field(default_factory=list)
    adaptive: list[AdaptiveDecision] = Field(default_factory=list)
    """The `adaptive` protocol's decisions, one per step, in order."""
    clarified: bool = False
    """The clarification step finished (resume does not ask again)."""
    pending_questions: list[Clarification] = Field(default_factory=list)
    """Questions asked and not yet answered (a crash while the user answers keeps them)."""
    pending_round: int = 0
    archived_rounds: int = 0
    """Steps 1..this many are not held here: their contributions, summaries and views are in the
    event log only (`storage.archive`), and `rounds` begins with step `archived_rounds + 1`.
    0 (every step held) in snapshots written before a debate could outgrow its memory."""

    _held: int | None = PrivateAttr(default=None)

    @property
    def made_at(self) -> float:
        """When this debate was made: a fork's own time (its history keeps its parent's), else its start."""
        origin = self.forked_from
        return origin.made_at if origin is not None and origin.made_at else self.created_at

    @property
    def held_contributions(self) -> int:
        """Contributions in `rounds`: counted once, then kept by `count_held` (what `apply` adds, what
        `archive` lets go of), so asking at every step costs nothing however many steps are held."""
        if self._held is None:
            self._held = sum(len(r.contributions) for r in self.rounds)
        return self._held

    def count_held(self, change: int) -> None:
        if self._held is not None:
            self._held += change
    tools: ToolsSetup | None = None
    """The references and tools its agents had (None: a debate without them)."""
    forked_from: ForkOrigin | None = None
    """Set for a debate made by `moot fork`: its history up to `at` is its parent's."""

    def round(self, number: int) -> Round:
        """Step `number` as held in memory (made when new). An archived step is given detached
        and empty: what it held is in the log, and nothing folded into it is kept."""
        if number <= self.archived_rounds:
            return Round(number=number)
        while self.round_count < number:
            self.rounds.append(Round(number=self.round_count + 1))
        return self.rounds[number - self.archived_rounds - 1]

    @property
    def round_count(self) -> int:
        """Steps begun so far, archived ones included (`len(rounds)` counts only those held)."""
        return self.archived_rounds + len(self.rounds)

    def all_contributions(self) -> list[Contribution]:
        """The contributions held in memory (all of them unless steps were archived)."""
        return [c for r in self.rounds for c in r.contributions]

"""Pydantic models of a debate: its configuration and its state.

JSON field names are snake_case everywhere. Configuration models forbid unknown
fields so that a typo in a config file is an error, not a silently ignored key.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ROLES: tuple[str, ...] = (
    "architect",
    "performance",
    "security",
    "testing",
    "kiss",
    "generalist",
    "data-modeling",
)
Role = Literal["architect", "performance", "security", "testing", "kiss", "generalist", "data-modeling"]
ContributionType = Literal["proposal", "critique", "refinement", "answer", "message"]
"""proposal/critique/refinement (rounds), answer (simultaneous), message (conversation)."""
Phase = Literal["summarize", "proposal", "critique", "refinement", "answer", "turn", "synthesis", "clarify", "score"]
ProtocolName = Literal["rounds", "conversation", "simultaneous"]
SummaryScope = Literal["shared", "per-agent"]
SummaryMethod = Literal["llm", "rule-based", "hybrid"]
SummaryStrategy = Literal["fresh", "rolling"]
SummaryTrigger = Literal["chars", "tokens", "turns", "manual", "judge"]
ProviderName = Literal["openai", "demo"]
DebateStatus = Literal["running", "completed", "failed", "interrupted", "stopped", "stopped_budget"]

JUDGE_ID = "judge"
MAX_FOCUS = 500
"""Characters of a summary's focus text kept (it goes into the summarization prompt)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


_M = TypeVar("_M", bound=BaseModel)


# --------------------------------------------------------------------------- config


Threshold = Annotated[int, Field(ge=0)]
TriggerRatio = Annotated[float, Field(gt=0, le=1)]
MaxLength = Annotated[int, Field(ge=100)]
MaxSummaryTokens = Annotated[int, Field(ge=32)]
ContextTokens = Annotated[int, Field(ge=256)]
ReserveTokens = Annotated[int, Field(ge=16)]


class SummarizationConfig(_Strict):
    """How and when an agent's perspective history is condensed."""

    enabled: bool = True
    """Summarize at all; `false` turns it off for one agent."""
    threshold: Threshold = 5000
    """Characters of perspective history that trigger a summary (the anchor's rule)."""
    trigger_ratio: TriggerRatio = 0.8
    """Also trigger when the agent's view passes this fraction of its token budget."""
    max_length: MaxLength = 2500
    """Hard cap on a summary, in characters."""
    max_summary_tokens: MaxSummaryTokens = 1000
    """Hard cap on a summary, in tokens (also the summarization call's max_tokens)."""
    method: SummaryMethod = "llm"
    """`llm` (role prompt on a model), `rule-based` (offline, extractive) or `hybrid` (both)."""
    strategy: SummaryStrategy = "rolling"
    """`rolling` folds only what aged out into the previous summary, so a late round costs what an
    early one does; `fresh` re-summarizes the whole perspective every time (the anchor's way:
    its summarization input grows with every round)."""
    model: str | None = None
    """Model for LLM summaries; defaults to the agent's own model."""
    prompt_path: str | None = None
    """Debate-wide custom summary prompt (an agent's `summary_prompt_path` wins)."""


class SummarizationOverrides(_Strict):
    """One agent's overrides of `debate.summarization`: only the fields it sets (see there)."""

    enabled: bool | None = None
    threshold: Threshold | None = None
    trigger_ratio: TriggerRatio | None = None
    max_length: MaxLength | None = None
    max_summary_tokens: MaxSummaryTokens | None = None
    method: SummaryMethod | None = None
    strategy: SummaryStrategy | None = None
    model: str | None = None
    prompt_path: str | None = None


class ContextConfig(_Strict):
    """The token budget of one agent's view."""

    max_context_tokens: ContextTokens = 8000
    """The whole request (messages) plus the reserved output must fit here."""
    reserve_output_tokens: ReserveTokens = 1000
    """Tokens kept free for the model's answer; also the call's max_tokens."""

    @model_validator(mode="after")
    def _reserve_fits(self) -> ContextConfig:
        if self.reserve_output_tokens >= self.max_context_tokens:
            raise ValueError(
                f"reserve_output_tokens ({self.reserve_output_tokens}) must be below "
                f"max_context_tokens ({self.max_context_tokens})"
            )
        return self

    @property
    def input_budget(self) -> int:
        return self.max_context_tokens - self.reserve_output_tokens


class ContextOverrides(_Strict):
    """One agent's overrides of `debate.context`; the pair is checked once merged."""

    max_context_tokens: ContextTokens | None = None
    reserve_output_tokens: ReserveTokens | None = None


def merge(base: _M, overrides: BaseModel | None) -> _M:
    """`base` with the fields `overrides` sets, validated as a whole (field by field, two levels)."""
    if overrides is None:
        return base
    changes = overrides.model_dump(exclude_none=True)
    return type(base).model_validate({**base.model_dump(), **changes}) if changes else base


class AgentConfig(_Strict):
    """One debater (or the judge). Unset fields inherit the debate-wide values."""

    id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    name: str | None = None
    role: Role = "generalist"
    model: str | None = None
    provider: ProviderName | None = None
    temperature: float = Field(0.5, ge=0, le=2)
    system_prompt_path: str | None = None
    summary_prompt_path: str | None = None
    base_url: str | None = None
    summarization: SummarizationOverrides | None = None
    """Per-agent overrides of `debate.summarization`, field by field."""
    context: ContextOverrides | None = None
    """Per-agent overrides of `debate.context`, field by field."""
    enabled: bool = True
    fallback_models: list[str] = Field(default_factory=list)
    """Models tried, in order, when the agent's own model keeps failing."""
    max_concurrency: int | None = Field(None, ge=1, le=64)
    """At most this many calls in flight at this agent's endpoint (a local server that wants fewer)."""

    @property
    def display_name(self) -> str:
        return self.name or self.id.replace("-", " ").title()


class ConversationConfig(_Strict):
    """The turn-based conversation (seed 003): a shared transcript, each view = system prompt +
    rolling summary of everything older + the latest messages verbatim, under a token budget."""

    recent_messages: int = Field(50, ge=1, le=10_000)
    """At least this many of the latest messages are shown verbatim (when they fit `recent_tokens`)."""
    summary_every: int = Field(50, ge=1, le=10_000)
    """Roll the summary forward when this many messages wait beyond the verbatim window."""
    summary_scope: SummaryScope = "shared"
    """`shared`: one rolling summary every agent reads (the seed); `per-agent`: each agent keeps its own."""
    max_context_tokens: ContextTokens = 8000
    """The whole request plus the reserved output must fit here."""
    system_tokens: int = Field(2000, ge=64)
    """Cap of the system message (role prompt and topic)."""
    summary_tokens: int = Field(1000, ge=32)
    """Cap of the rolling summary."""
    recent_tokens: int = Field(5000, ge=64)
    """Cap of the verbatim messages; past it the summary rolls forward early."""
    reserve_output_tokens: ReserveTokens = 1000
    """Kept free for each turn's answer (its max_tokens)."""
    score_every: int | None = Field(None, ge=1)
    """With `termination = "convergence"`: the judge scores convergence every this many turns."""

    @model_validator(mode="after")
    def _fits(self) -> ConversationConfig:
        if self.reserve_output_tokens >= self.max_context_tokens:
            raise ValueError(
                f"reserve_output_tokens ({self.reserve_output_tokens}) must be below "
                f"max_context_tokens ({self.max_context_tokens})"
            )
        return self

    @property
    def input_budget(self) -> int:
        return self.max_context_tokens - self.reserve_output_tokens


Price = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""USD per million tokens. NaN or infinity would make every later cost unsavable (JSON has no NaN)."""


class DebateSettings(_Strict):
    protocol: ProtocolName = "rounds"
    """`rounds` (propose, critique, refine; the anchor's), `conversation` (turns into one shared
    transcript) or `simultaneous` (every agent answers each round, having read the others)."""
    rounds: int = Field(3, ge=1, le=1000)
    """Rounds of the `rounds` and `simultaneous` protocols."""
    turns: int = Field(200, ge=1, le=100_000)
    """Turns of the `conversation` protocol (one message each, agents in config order)."""
    conversation: ConversationConfig = Field(default_factory=ConversationConfig)
    max_concurrency: int = Field(16, ge=1, le=64)
    """Calls in flight at once (a whole critique phase of the default agents is one wave); an
    endpoint can have a lower limit of its own (an agent's `max_concurrency`, `[providers."URL"]`)."""
    carry_refinements: bool = True
    """From round 2, each agent's previous refinement is its proposal (no call; as the anchor does)."""
    summarization: SummarizationConfig = Field(default_factory=SummarizationConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    timeout_s: float = Field(120.0, gt=0, le=86400, allow_inf_nan=False)
    """Deadline of each attempt of a call, in seconds, from the request to its last byte."""
    max_retries: int = Field(3, ge=0, le=20)
    on_error: Literal["stop", "skip"] = "stop"
    """What a failed proposal/refinement does: stop the debate (resumable) or skip that agent."""
    prices: dict[str, tuple[Price, Price]] = Field(default_factory=dict)
    """Model → (input, output) USD per million tokens; overrides the built-in table."""
    clarify: bool = False
    """Before round 1, agents ask clarifying questions and the user answers."""
    clarifications_max_per_agent: int = Field(5, ge=0, le=20)
    clarification_rounds: int = Field(0, ge=0, le=3)
    """Follow-up rounds of questions after the first answers."""
    termination: Literal["fixed", "convergence"] = "fixed"
    """`convergence`: after each round the judge scores confidence; end early at the threshold."""
    convergence_threshold: int = Field(90, ge=0, le=100)
    max_cost_usd: float | None = Field(None, gt=0, allow_inf_nan=False)
    """Stop starting calls once the debate has cost this much; the judge still synthesizes."""
    max_total_tokens: int | None = Field(None, gt=0)
    """Stop starting calls once this many tokens (prompt + completion) were used."""
    trace: bool = False
    """Send the debate to an OpenTelemetry collector as one trace (needs `pip install 'moot[otel]'`;
    also on with `--trace` or when `OTEL_EXPORTER_OTLP_ENDPOINT` is set)."""
    trace_content: bool = False
    """Put prompt and completion text (masked) in the trace; off: only names, models, tokens, cost, times."""


class EndpointConfig(_Strict):
    """Settings of one OpenAI-compatible endpoint, keyed by its base URL under `[providers]`."""

    max_concurrency: int | None = Field(None, ge=1, le=64)
    """At most this many calls in flight at this endpoint (e.g. the slots of a local llama.cpp)."""


class MootConfig(_Strict):
    """The whole configuration file: `{"debate": {...}, "agents": [...], "judge": {...}}`."""

    debate: DebateSettings = Field(default_factory=DebateSettings)
    providers: dict[str, EndpointConfig] = Field(default_factory=dict)
    """Per-endpoint settings by base URL: `[providers."http://127.0.0.1:8080/v1"] max_concurrency = 2`."""
    agents: list[AgentConfig] = Field(default_factory=list)
    judge: AgentConfig = Field(default_factory=lambda: AgentConfig(id=JUDGE_ID, role="generalist"))

    @field_validator("judge", mode="before")
    @classmethod
    def _judge_id(cls, value: Any) -> Any:
        return {"id": JUDGE_ID, "role": "generalist", **value} if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _unique_ids(self) -> MootConfig:
        seen: set[str] = set()
        for agent in self.agents:
            if agent.id in seen:
                raise ValueError(f"duplicate agent id {agent.id!r}")
            if agent.id == self.judge.id:
                raise ValueError(f"agent id {agent.id!r} is the judge's id")
            seen.add(agent.id)
        return self

    @property
    def active_agents(self) -> list[AgentConfig]:
        return [a for a in self.agents if a.enabled]


# --------------------------------------------------------------------------- state


class CallMetadata(BaseModel):
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


class Usage(BaseModel):
    """Calls, tokens and cost summed: for the whole debate and per agent (every kind of call)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    summary_tokens: int = 0
    """Of the tokens above, those spent on summarization calls."""
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Contribution(BaseModel):
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
    ts: float = Field(default_factory=time.time)


class SummaryMetadata(BaseModel):
    before_chars: int = 0
    after_chars: int = 0
    before_tokens: int = 0
    after_tokens: int = 0
    latency_ms: int = 0
    tokens_used: int = 0
    """prompt_tokens + completion_tokens of the summarization calls (0 for rule-based)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    model: str | None = None
    fallback_reason: str | None = None
    """Why the configured method did not write this summary (the summary's `method` says what did)."""
    requested_method: SummaryMethod | None = None
    """The configured method, when another one wrote the text (a failed LLM summary's rule-based fallback)."""
    input_tokens: int = 0
    """Tokens fed to the summarizer (all chunks); what `rolling` keeps flat."""
    chunks: int = 1


class Summary(BaseModel):
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
    metadata: SummaryMetadata = Field(default_factory=SummaryMetadata)
    ts: float = Field(default_factory=time.time)

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


class TierTokens(BaseModel):
    system: int = 0
    summary: int = 0
    history: int = 0
    task: int = 0
    total: int = 0
    """Whole request in chat format (tiers plus per-message overhead)."""


class ViewRecord(BaseModel):
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


class Solution(BaseModel):
    description: str
    confidence: int | None = None
    tradeoffs: list[str] = Field(default_factory=list)
    recommendations: list[str] = Field(default_factory=list)
    unresolved: list[str] = Field(default_factory=list)
    synthesized_by: str = JUDGE_ID
    parsed: bool = True
    """False when the judge's reply was not JSON and was kept as plain text."""
    metadata: CallMetadata = Field(default_factory=CallMetadata)


class Clarification(BaseModel):
    agent_id: str
    question: str
    answer: str = ""
    """Empty: the user gave no answer."""
    round: int = 1
    """Which clarification round (1 = the first questions)."""


class ModeratorNote(BaseModel):
    id: str
    text: str
    after_round: int
    """Agents see it verbatim from their next call on."""
    ts: float = Field(default_factory=time.time)


class ConvergenceScore(BaseModel):
    round: int
    confidence: int | None = None
    """None: the judge's answer held no usable score ("not parsed"); never counts as converged."""
    reason: str = ""
    raw: str | None = None
    """The judge's answer as given, kept when it could not be parsed (shown by the report)."""


class Round(BaseModel):
    number: int
    contributions: list[Contribution] = Field(default_factory=list)
    summaries: dict[str, Summary] = Field(default_factory=dict)
    """Keyed by agent id (the anchor's layout): the agent's latest summary of the round."""
    replaced_summaries: list[Summary] = Field(default_factory=list)
    """Earlier summaries of the same round (an automatic one, then a manual one), kept
    because calls made in between refer to them."""
    calls: list[ViewRecord] = Field(default_factory=list)
    started_at: float = Field(default_factory=time.time)


class AgentInfo(BaseModel):
    id: str
    name: str
    role: str
    model: str
    provider: str
    temperature: float
    budget: int


class DebateState(BaseModel):
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
    convergence: list[ConvergenceScore] = Field(default_factory=list)
    clarified: bool = False
    """The clarification step finished (resume does not ask again)."""
    pending_questions: list[Clarification] = Field(default_factory=list)
    """Questions asked and not yet answered (a crash while the user answers keeps them)."""
    pending_round: int = 0

    def round(self, number: int) -> Round:
        while len(self.rounds) < number:
            self.rounds.append(Round(number=len(self.rounds) + 1))
        return self.rounds[number - 1]

    def all_contributions(self) -> list[Contribution]:
        return [c for r in self.rounds for c in r.contributions]

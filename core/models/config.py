"""The configuration of a debate, as a config file and flags give it.

Configuration models forbid unknown fields so that a typo in a config file is an error, not a
silently ignored key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Self, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from .base import Model
from .provider_kinds import is_known, is_person, provider_names
from .terms import (
    JUDGE_ID,
    AnswerKind,
    ProtocolName,
    ProviderName,
    Role,
    SummaryMethod,
    SummaryScope,
    SummaryStrategy,
)
from .tools import ToolsConfig, ToolsOverrides


def _known_provider(name: str) -> str:
    """A provider a configuration may name: a built-in one or an installed plugin's (said as
    pydantic says a value is not among the allowed ones)."""
    if not is_known(name):
        names = [repr(n) for n in provider_names()]
        raise ValueError(f"Input should be {', '.join(names[:-1])} or {names[-1]}")
    return name


KnownProvider = Annotated[ProviderName, AfterValidator(_known_provider)]


class _Strict(Model):
    # Each field's docstring is its description in the JSON Schema (`moot config --schema`),
    # read when the schema is made (`config_view.config_schema`), not as the model is defined.
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


_M = TypeVar("_M", bound=BaseModel)

Threshold = Annotated[int, Field(ge=0)]
TriggerRatio = Annotated[float, Field(gt=0, le=1)]
MaxLength = Annotated[int, Field(ge=100)]
MaxSummaryTokens = Annotated[int, Field(ge=32)]
ContextTokens = Annotated[int, Field(ge=256)]
ReserveTokens = Annotated[int, Field(ge=16)]
RecallTokens = Annotated[int, Field(ge=0)]
"""0 turns the recall tier off as `recall = false` does."""


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


class _Window(_Strict):
    """A token window that keeps room for the model's answer: its two fields are declared by
    each subclass, in its own order (the config's field order is what a dump shows)."""

    if TYPE_CHECKING:
        max_context_tokens: int
        reserve_output_tokens: int

    @model_validator(mode="after")
    def _reserve_fits(self) -> Self:
        if self.reserve_output_tokens >= self.max_context_tokens:
            raise ValueError(
                f"reserve_output_tokens ({self.reserve_output_tokens}) must be below "
                f"max_context_tokens ({self.max_context_tokens})"
            )
        return self

    @property
    def input_budget(self) -> int:
        return self.max_context_tokens - self.reserve_output_tokens


class ContextConfig(_Window):
    """The token budget of one agent's view."""

    max_context_tokens: ContextTokens = 8000
    """The whole request (messages) plus the reserved output must fit here."""
    reserve_output_tokens: ReserveTokens = 1000
    """Tokens kept free for the model's answer; also the call's max_tokens."""
    recall: bool = False
    """The recall tier (`rounds`, `simultaneous`): old items of the agent's own history that only its
    summary covers come back verbatim when the debate returns to them (see README, Recall)."""
    recall_tokens: RecallTokens | None = None
    """Cap of the recall tier; default a tenth of the view's budget."""


class ContextOverrides(_Strict):
    """One agent's overrides of `debate.context`; the pair is checked once merged."""

    max_context_tokens: ContextTokens | None = None
    reserve_output_tokens: ReserveTokens | None = None
    recall: bool | None = None
    recall_tokens: RecallTokens | None = None


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
    provider: KnownProvider | None = None
    """`openai`, `demo`, or `human`: a seat a person takes (their turns are typed; see the README)."""
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
    tools: ToolsOverrides | None = None
    """This agent's own tools mode, call cap and MCP servers (beside `[tools]`)."""
    seed: int | None = Field(None, ge=0, le=2**31 - 1)
    """Sent with each call as `seed`: servers that honour it (OpenAI, llama.cpp, vLLM) sample
    reproducibly. `moot bench` gives each agent its own; a vote's copies add 1000 per pass."""

    @property
    def display_name(self) -> str:
        return self.name or self.id.replace("-", " ").title()


class ConversationConfig(_Window):
    """The turn-based conversation: a shared transcript, each view = system prompt +
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
    recall: bool = True
    """The recall tier: old messages the summary covers come back verbatim when the conversation
    returns to them (see README, Recall)."""
    recall_tokens: RecallTokens | None = None
    """Cap of the recall tier, taken from the verbatim window's share (`recent_tokens`); default a
    tenth of `recent_tokens`."""
    score_every: int | None = Field(None, ge=1)
    """With `termination = "convergence"`: the judge scores convergence every this many turns."""

    @property
    def recall_cap(self) -> int:
        """Tokens of the recall tier (0: off)."""
        if not self.recall:
            return 0
        return min(self.recent_tokens // 2, self.recent_tokens // 10 if self.recall_tokens is None
                   else self.recall_tokens)

    @property
    def window_cap(self) -> int:
        """The verbatim window's cap: `recent_tokens` less what the recall tier takes of it."""
        return self.recent_tokens - self.recall_cap


Price = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""USD per million tokens. NaN or infinity would make every later cost unsavable (JSON has no NaN)."""


class AnswerFormat(_Strict):
    """The problem is a question with one checkable answer (`moot bench` sets it): agents get the
    question prompts and end with the answer in this form, and majorities compare extracted answers."""

    kind: AnswerKind = "text"
    """`number`, `choice` (a letter), `text` (exact text) or `boxed` (LaTeX `\\boxed{}`)."""
    choices: list[str] = Field(default_factory=list, max_length=26)
    """The options of a multiple-choice question, lettered A, B, C… in this order."""


class AdaptiveConfig(_Strict):
    """The `adaptive` protocol: answers drawn `batch` at a time until the leading one is settled
    (see `moot.core.protocols.adaptive` for the stopping rule), then a debate only if they disagree."""

    batch: int = Field(2, ge=1, le=64)
    """Answers drawn at once (in parallel) before the stopping rule is checked again."""
    threshold: float = Field(0.9, gt=0, lt=1, allow_inf_nan=False)
    """Stop once the posterior probability that the leading answer is the most likely one reaches this."""
    max_samples: int = Field(4, ge=1, le=64)
    """Independent answers drawn at most (the agents cycled, as `vote` cycles them); then a debate."""
    max_rounds: int = Field(2, ge=0, le=20)
    """Debate rounds at most among the agents that answered, the rule checked after each; 0: none."""


class DebateSettings(_Strict):
    protocol: ProtocolName = "rounds"
    """`rounds` (propose, critique, refine; the anchor's), `conversation` (turns into one shared
    transcript), `simultaneous` (every agent answers each round, having read the others), `single`
    (one agent answers once), `vote` (independent answers, the majority wins) or `council` (answers,
    anonymized rankings, the judge as chairman) or `adaptive` (answers drawn a few at a time until the
    leading one is settled; a debate only when they disagree)."""
    samples: int | None = Field(None, ge=1, le=64)
    """`vote`: how many independent answers (the agents are cycled); default one per agent."""
    adaptive: AdaptiveConfig = Field(default_factory=AdaptiveConfig)
    """`adaptive`: draw answers a few at a time, stop when the leader is settled, debate when not."""
    topology: Literal["full", "ring", "star"] = "full"
    """`rounds`, `simultaneous`, `adaptive`: whose answers each agent reads (in `rounds`, whose proposals it
    critiques): everyone's (`full`), its two neighbours' in agent order (`ring`), or (`star`) the first
    agent everyone's and the others only its."""
    weight: Literal["plain", "confidence"] = "plain"
    """`vote`, `simultaneous`, `adaptive`: `confidence` asks each answer for a confidence (0–100) and
    weighs it by that (an answer that states none counts as one plain vote); the plain majority is
    reported beside the weighted one."""
    final: Literal["judge", "majority"] = "judge"
    """`simultaneous`: the judge synthesizes the final answer, or the majority of the last answers stands
    (no judge call; what Du et al. report)."""
    answer: AnswerFormat | None = None
    """Set when the problem is a question with a checkable answer (see `AnswerFormat`)."""
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
    prices: dict[str, tuple[Price, Price] | tuple[Price, Price, Price]] = Field(default_factory=dict)
    """Model → (input, output) or (input, output, cached input) USD per million tokens; overrides the
    built-in table. Without a cached rate, input served from the provider's prompt cache costs what
    fresh input does."""
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
    references: list[str] = Field(default_factory=list)
    """Files and folders the agents may read with tools (`--ref`); saved as absolute paths."""
    trace_content: bool = False
    """Put prompt and completion text (masked) in the trace; off: only names, models, tokens, cost, times."""
    pinned: list[Annotated[str, Field(min_length=1, max_length=4000)]] = Field(default_factory=list, max_length=32)
    """Constraints of the problem kept verbatim in every debater's view for the whole debate, never
    summarized away (`pinned = ["p99 latency under 200 ms", "no new runtime dependencies"]`), counted
    in the gauge as the pinned tier with the items pinned with `/pin`."""


class EndpointConfig(_Strict):
    """Settings of one OpenAI-compatible endpoint, keyed by its base URL under `[providers]`."""

    max_concurrency: int | None = Field(None, ge=1, le=64)
    """At most this many calls in flight at this endpoint (e.g. the slots of a local llama.cpp)."""


class MootConfig(_Strict):
    """The whole configuration file: `{"debate": {...}, "agents": [...], "judge": {...}}`."""

    debate: DebateSettings = Field(default_factory=DebateSettings)
    providers: dict[str, EndpointConfig] = Field(default_factory=dict)
    """Per-endpoint settings by base URL: `[providers."http://127.0.0.1:8080/v1"] max_concurrency = 2`."""
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    """Read-only tools over `debate.references` and the user's MCP servers (`[[tools.mcp]]`)."""
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
        if is_person(self.judge.provider):
            raise ValueError("the judge cannot be a person (provider \"human\"): its synthesis is a JSON "
                             "verdict; take a seat among the agents instead")
        return self

    @property
    def active_agents(self) -> list[AgentConfig]:
        return [a for a in self.agents if a.enabled]


# --------------------------------------------------------------------------- state

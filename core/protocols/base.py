"""What a protocol works with, and what it must say.

A protocol decides who speaks when, with which task, and what each speaker's view is
made of. Everything else — the gate, the concurrency limit, building the view under
its budget, the provider call with retries, cost and the events — happens in the call
engine that `DebateContext.call` hands every request to. Adding a protocol touches no
line of the engine: write a `DebateProtocol` subclass and list it in `protocols/__init__.py`.

Resuming is the protocols' own business, kept simple by one rule: before making a
call, look in the state for its result (a contribution for that slot, a summary that
already covers the items) and skip it when it is there.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, TypedDict

from ..config import ResolvedAgent
from ..context.index import DebateIndex
from ..context.pins import pins_for
from ..context.recall_tier import RecallRequest
from ..engine.calls import CallEngine, CallResult, CallSpec
from ..engine.gate import BudgetExhausted, Gate, StopRequested
from ..engine.summaries import Summaries
from ..errors import ProviderError
from ..events import ContributionAdded, Event, PhaseCompleted, PhaseStarted, RoundStarted, Warning_
from ..models.config import AgentConfig, DebateSettings, MootConfig
from ..models.state import Contribution, DebateState, Tally, ViewRecord
from ..models.terms import ContributionType, Phase, ProtocolName
from ..providers.base import CallHint, JsonAnswer
from ..search.recall import RecallScope


class DebateAborted(Exception):
    """The debate cannot go on (a required call failed for good). Resumable."""

    def __init__(self, message: str, exit_code: int = 3) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class Ids:
    """Id factory; deterministic when seeded (tests and snapshots)."""

    prefix: str = ""
    seed: str | None = None

    def __post_init__(self) -> None:
        self._counter = itertools.count(1)

    def __call__(self, kind: str) -> str:
        if self.seed is not None:
            return f"{kind}-{self.seed}{next(self._counter):05d}"
        return f"{kind}-{secrets.token_hex(5)}"


WEIGHED: tuple[ProtocolName, ...] = ("vote", "simultaneous", "adaptive")
"""The protocols whose final majority `debate.weight = "confidence"` weighs."""

TASK_KINDS: dict[str, str] = {
    "proposal": "propose", "critique": "critique", "refinement": "refine", "synthesis": "synthesize",
    "score": "score", "clarify": "clarify", "answer": "answer", "turn": "turn", "rank": "rank",
}
"""Phase → the prompt kind of its task."""


@dataclass
class DebateContext:
    """The debate as a protocol sees it: its people, its state, and the door to the call engine."""

    config: MootConfig
    problem: str
    agents: list[ResolvedAgent]
    judge: ResolvedAgent
    state: DebateState
    index: DebateIndex
    engine: CallEngine
    summaries: Summaries
    gate: Gate
    emit: Callable[[Event], Event]
    ids: Ids

    @property
    def settings(self) -> DebateSettings:
        return self.config.debate

    def agent(self, agent_id: str) -> ResolvedAgent:
        return next(a for a in [*self.agents, self.judge] if a.id == agent_id)

    async def phase(self, step: int, phase: Phase, body: Callable[[], Awaitable[None]]) -> None:
        """Run one phase between its `phase_started` and `phase_completed` events."""
        self.emit(PhaseStarted(round=step, phase=phase))
        await body()
        self.emit(PhaseCompleted(round=step, phase=phase))

    async def gather(self, coros: Sequence[Awaitable[object]]) -> None:
        """Run calls side by side. A stop or budget stop lets calls in flight finish (they
        are paid for); any other error wins over them. Cancellation reaches every call."""
        results = await asyncio.gather(*coros, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        for e in errors:
            if not isinstance(e, (StopRequested, BudgetExhausted)):
                raise e
        if errors:
            raise errors[0]

    def record(self, agent: ResolvedAgent, step: int, phase: Phase, *, target: ResolvedAgent | None = None,
               params: dict[str, object] | None = None, task_ids: Sequence[str] = (),
               call_id: str | None = None) -> ViewRecord:
        """A new call's record: the prompt keys of its phase, its parameters and what its task quotes.
        Clarifications and moderator notes ride in every task, so they are never summarized away.
        (`call_id` for a record that is only measured, so no id is spent on it.)"""
        notes = self.notes_text()
        p: dict[str, object] = dict(params or {})
        if phase == "answer" and self.settings.weight == "confidence" and self.settings.protocol in WEIGHED:
            p["ask_confidence"] = True  # the answer states a confidence that weighs its vote
        if target is not None:
            p.update(target_name=target.name, target_role=target.role)
        return ViewRecord(
            call_id=call_id or self.ids("call"), agent_id=agent.id, round=step, phase=phase,
            target_agent_id=target.id if target else None, model=agent.model,
            system_key=f"{agent.id}/system", task_key=f"{agent.id}/{TASK_KINDS[phase]}", task_params=p,
            task_contribution_ids=list(task_ids), inline={"notes": notes} if notes else {},
            pinned=pins_for(agent.id, phase, self.index.pins),
        )

    def notes_text(self) -> str:
        """The user's answers to clarifying questions and the moderator's notes, verbatim."""
        parts: list[str] = []
        if self.state.clarifications:
            lines = ["## Clarifications from the user"]
            for c in self.state.clarifications:
                lines.append(f"- Q ({self.index.name(c.agent_id)}): {c.question}\n  A: {c.answer or '(no answer)'}")
            parts.append("\n".join(lines))
        if self.state.notes:
            parts.append("\n".join(["## Moderator notes (follow them)", *(f"- {n.text}" for n in self.state.notes)]))
        return "\n\n".join(parts)

    async def call(self, agent: ResolvedAgent, record: ViewRecord, *, history: Sequence[Contribution] = (),
                   budget: int | None = None, context_tokens: int | None = None, max_tokens: int | None = None,
                   json_answer: JsonAnswer | None = None, target: ResolvedAgent | None = None,
                   extra: dict[str, object] | None = None,
                   context_setting: str = "context.max_context_tokens",
                   recall: RecallRequest | None = None) -> CallResult:
        """One call through the engine (`recall`: its view gets a recall tier)."""
        more = dict(extra or {})
        people = [a.name for a in self.agents if a.is_person and a.id != agent.id]
        if people:  # the demo provider answers what they wrote by name
            more["people"] = people
        if self.settings.answer is not None:  # a question: the demo provider answers in the asked form
            more["answer_kind"] = self.settings.answer.kind
            more["choices"] = list(self.settings.answer.choices)
        hint = CallHint(phase=record.phase, role=agent.role, agent_id=agent.id, round=record.round,
                        problem=self.problem, target_agent_id=target.id if target else None,
                        target_role=target.role if target else None, extra=more)
        return await self.engine.call(CallSpec(agent=agent, record=record, hint=hint, history=history,
                                               budget=budget, context_tokens=context_tokens,
                                               max_tokens=max_tokens, json_answer=json_answer,
                                               context_setting=context_setting, recall=recall))

    async def unless_failed(self, agent: ResolvedAgent, what: str, call: Awaitable[CallResult], *,
                            required: bool = True) -> CallResult | None:
        """`call`'s result, or None when the provider failed for good: then a required call ends the
        debate when `on_error` is "stop", and any other is skipped with a warning naming `what`
        ("answer in round 2")."""
        try:
            return await call
        except ProviderError as exc:
            if required and self.settings.on_error == "stop":
                raise DebateAborted(f"{agent.id} {what} failed: {exc}") from None
            self.emit(Warning_(message=f"{agent.id} {what} failed and was skipped: {exc}", agent_id=agent.id))
            return None

    def perspective_recall(self, agent: ResolvedAgent, covered: Sequence[Contribution],
                           kinds: tuple[str, ...]) -> RecallRequest | None:
        """A recall tier over the agent's own older history that only its summary covers (`rounds`,
        `simultaneous`, when `context.recall` is on for it)."""
        cfg = agent.context
        cap = cfg.input_budget // 10 if cfg.recall_tokens is None else cfg.recall_tokens
        if not cfg.recall or cap <= 0 or not covered:
            return None
        scope = RecallScope(kinds=kinds, max_step=max(c.round for c in covered), population=len(covered),
                            only=frozenset(c.id for c in covered))
        return RecallRequest(scope, min(cap, cfg.input_budget // 2))

    def add_contribution(self, agent: ResolvedAgent, step: int, kind: ContributionType, result: CallResult,
                         target: ResolvedAgent | None = None) -> Contribution:
        c = Contribution(id=self.ids("c"), agent_id=agent.id, role=agent.role, type=kind, round=step,
                         target_agent_id=target.id if target else None, content=result.completion.content,
                         metadata=result.meta, reads=list(result.reads))
        self.emit(ContributionAdded(contribution=c))
        return c


class CallWindow(TypedDict, total=False):
    """A protocol's own window for its calls, and the setting it comes from (named in errors)."""

    context_tokens: int
    max_tokens: int
    setting: str


@dataclass(frozen=True)
class SynthesisInput:
    """What the judge synthesizes from: a summary and/or contributions, quoted in its task."""

    step: int
    summary_id: str | None
    contribution_ids: list[str]
    transcript: bool = False
    """The material is a conversation's summary and recent window (labelled by turn)."""
    inline: dict[str, str] | None = None
    """Text the judge's task adds to the material (a council's aggregate ranking), kept in its view."""
    tally: Tally | None = None
    """Recorded with the solution (a council's ranks)."""


class DebateProtocol(ABC):
    """One debate shape. Subclasses read like the paper's description of its turns."""

    name: ClassVar[ProtocolName]
    step_word: ClassVar[str] = "round"
    task_kinds: ClassVar[tuple[str, ...]]
    """Prompt kinds each agent needs (loaded per role when the debate starts)."""

    def __init__(self, ctx: DebateContext) -> None:
        self.ctx = ctx

    @classmethod
    def seats(cls, config: MootConfig) -> list[AgentConfig]:
        """The agents that take part (the enabled ones; `single` takes the first, `vote` its samples)."""
        return config.active_agents

    uses_judge: ClassVar[bool] = True
    """False: the final answer is made without the judge (`single`, `vote`)."""

    @property
    def total_steps(self) -> int:
        return self.ctx.settings.rounds

    def steps(self, step: Literal["round", "turn"] = "round") -> Iterator[int]:
        """The steps left to run, from the one a resumed debate stopped in; each not yet begun is
        announced (`RoundStarted`) as it starts."""
        ctx = self.ctx
        for r in range(max(1, ctx.state.current_round), self.total_steps + 1):
            if ctx.state.current_round < r:
                ctx.emit(RoundStarted(round=r, step=step))
            yield r

    opening_phase: ClassVar[Phase] = "proposal"
    """The phase of each agent's first call (checked against its window before the run)."""
    opening_kind: ClassVar[str | None] = None
    """The prompt kind of that call's task when it is not the phase's own (`vote`: `solo`)."""

    def opening_params(self, agent: ResolvedAgent) -> dict[str, object]:
        """The task parameters of an agent's first call."""
        return {"round": 1, "total_rounds": self.total_steps}

    def largest_views(self, agent: ResolvedAgent) -> list[tuple[Phase, dict[str, object], int]]:
        """The agent's views that quote the most, as (phase, task parameters, texts quoted), checked
        against its window before the run beside its first call."""
        return []

    def call_window(self) -> CallWindow:
        """How the protocol's own calls override an agent's window; empty: the agent's `context`."""
        return {}

    def check_windows(self) -> None:
        """Before the first call (and on resume): the smallest view of each agent's first task and of
        the judge's synthesis fit their windows, or `ContextOverflow` (exit 4) names the limit that
        binds, before the debate spends rounds it could not synthesize."""
        ctx = self.ctx
        window = self.call_window()
        for agent in ctx.agents:
            record = ctx.record(agent, 1, self.opening_phase, params=self.opening_params(agent), call_id="check")
            if self.opening_kind is not None:
                record.task_key = f"{agent.id}/{self.opening_kind}"
            ctx.engine.check_fits(agent, record, **window)
            for phase, p, quotes in self.largest_views(agent):
                record = ctx.record(agent, 1, phase, params=p, call_id="check")
                ctx.engine.check_fits(agent, record, quotes=quotes, **window)
        params: dict[str, object] | None = {"transcript": True} if self.step_word == "turn" else None
        ctx.engine.check_fits(ctx.judge, ctx.record(ctx.judge, 1, "synthesis", params=params, call_id="check"))

    @abstractmethod
    async def run(self) -> None:
        """Every step until the end (or a convergence stop); resumable from the state."""

    async def before_synthesis(self) -> None:
        """Work still owed before the judge's synthesis (summaries the user asked for late)."""

    @abstractmethod
    def synthesis_input(self) -> SynthesisInput | None:
        """The judge's material; None when there is nothing to synthesize."""

    async def conclude(self, material: SynthesisInput) -> bool:
        """Record the final answer without the judge (a vote) and return True; False (the default):
        the judge synthesizes it from `material`."""
        return False

    def score_input(self, step: int) -> SynthesisInput:
        """The judge's material for a convergence score after `step` (default: as for synthesis)."""
        found = self.synthesis_input()
        return found if found is not None else SynthesisInput(step, None, [])

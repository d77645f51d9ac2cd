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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..config import ResolvedAgent
from ..context.index import DebateIndex
from ..engine.calls import CallEngine, CallResult, CallSpec
from ..engine.gate import BudgetExhausted, Gate, StopRequested
from ..engine.summaries import Summaries
from ..events import ContributionAdded, Event, PhaseCompleted, PhaseStarted
from ..models.config import DebateSettings, MootConfig
from ..models.state import Contribution, DebateState, ViewRecord
from ..models.terms import ContributionType, Phase, ProtocolName
from ..providers.base import CallHint, JsonAnswer


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


TASK_KINDS: dict[str, str] = {
    "proposal": "propose", "critique": "critique", "refinement": "refine", "synthesis": "synthesize",
    "score": "score", "clarify": "clarify", "answer": "answer", "turn": "turn",
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
               params: dict[str, object] | None = None, task_ids: Sequence[str] = ()) -> ViewRecord:
        """A new call's record: the prompt keys of its phase, its parameters and what its task quotes.
        Clarifications and moderator notes ride in every task, so they are never summarized away."""
        notes = self.notes_text()
        p: dict[str, object] = dict(params or {})
        if target is not None:
            p.update(target_name=target.name, target_role=target.role)
        return ViewRecord(
            call_id=self.ids("call"), agent_id=agent.id, round=step, phase=phase,
            target_agent_id=target.id if target else None, model=agent.model,
            system_key=f"{agent.id}/system", task_key=f"{agent.id}/{TASK_KINDS[phase]}", task_params=p,
            task_contribution_ids=list(task_ids), inline={"notes": notes} if notes else {},
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
                   extra: dict[str, object] | None = None) -> CallResult:
        """One call through the engine."""
        hint = CallHint(phase=record.phase, role=agent.role, agent_id=agent.id, round=record.round,
                        problem=self.problem, target_agent_id=target.id if target else None,
                        target_role=target.role if target else None, extra=dict(extra or {}))
        return await self.engine.call(CallSpec(agent=agent, record=record, hint=hint, history=history,
                                               budget=budget, context_tokens=context_tokens,
                                               max_tokens=max_tokens, json_answer=json_answer))

    def add_contribution(self, agent: ResolvedAgent, step: int, kind: ContributionType, result: CallResult,
                         target: ResolvedAgent | None = None) -> Contribution:
        c = Contribution(id=self.ids("c"), agent_id=agent.id, role=agent.role, type=kind, round=step,
                         target_agent_id=target.id if target else None, content=result.completion.content,
                         metadata=result.meta, reads=list(result.reads))
        self.emit(ContributionAdded(contribution=c))
        return c


@dataclass(frozen=True)
class SynthesisInput:
    """What the judge synthesizes from: a summary and/or contributions, quoted in its task."""

    step: int
    summary_id: str | None
    contribution_ids: list[str]
    transcript: bool = False
    """The material is a conversation's summary and recent window (labelled by turn)."""


class DebateProtocol(ABC):
    """One debate shape. Subclasses read like the paper's description of its turns."""

    name: ClassVar[ProtocolName]
    step_word: ClassVar[str] = "round"
    task_kinds: ClassVar[tuple[str, ...]]
    """Prompt kinds each agent needs (loaded per role when the debate starts)."""

    def __init__(self, ctx: DebateContext) -> None:
        self.ctx = ctx

    @property
    def total_steps(self) -> int:
        return self.ctx.settings.rounds

    @abstractmethod
    async def run(self) -> None:
        """Every step until the end (or a convergence stop); resumable from the state."""

    async def before_synthesis(self) -> None:
        """Work still owed before the judge's synthesis (summaries the user asked for late)."""

    @abstractmethod
    def synthesis_input(self) -> SynthesisInput | None:
        """The judge's material; None when there is nothing to synthesize."""

    def score_input(self, step: int) -> SynthesisInput:
        """The judge's material for a convergence score after `step` (default: as for synthesis)."""
        found = self.synthesis_input()
        return found if found is not None else SynthesisInput(step, None, [])

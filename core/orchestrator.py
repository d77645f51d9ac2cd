"""The debate engine: rounds and phases, emitting a typed event for every step.

Per round: summarization → proposals (parallel) → critiques (every agent critiques
every other agent's proposal, parallel) → refinements (parallel, each agent sees
the critiques aimed at it); after the last round the judge synthesizes.

State changes only by folding the events the engine emits (`core.state.apply`), so
a debate resumed from its log skips every call whose result was recorded and
redoes the ones that were in flight. Commands come in through a narrow door:
`request_summary`, `pause`, `resume`, `stop`, `inject`, each honoured at the next
call boundary.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import assert_never

from moot.core import prompts
from moot.core.config import ResolvedAgent, public_config, resolve_agent
from moot.core.context.index import DebateIndex
from moot.core.context.summarize import SummaryJob, Summarizer
from moot.core.context.view import ViewBuilder
from moot.core.events import (
    BudgetReached,
    CallFailed,
    ClarificationsAnswered,
    ClarificationsAsked,
    Converged,
    ConvergenceScored,
    NoteInjected,
    CallStarted,
    ContributionAdded,
    ControlChanged,
    DebateCompleted,
    DebateFailed,
    DebateInterrupted,
    DebateResumed,
    DebateStarted,
    Event,
    EventBus,
    PhaseCompleted,
    PhaseStarted,
    RoundStarted,
    SummaryAdded,
    SummaryRequested,
    SynthesisCompleted,
    Token,
    Warning_,
)
from moot.core.judge import parse_confidence, parse_json_object, parse_solution
from moot.core.models import (
    AgentInfo,
    CallMetadata,
    Clarification,
    Contribution,
    ContributionType,
    ConvergenceScore,
    ModeratorNote,
    Phase,
    DebateState,
    MootConfig,
    Summary,
    SummaryTrigger,
    ViewRecord,
)
from moot.core.agents import find_agent
from moot.core.clock import SYSTEM_CLOCK, Clock
from moot.core.errors import ContextOverflow, ProviderError
from moot.core.providers.base import (
    CallHint,
    ChatRequest,
    Completion,
    Finished,
    Message,
    Restart,
    RetryNotice,
    TextDelta,
)
from moot.core.pricing import call_cost
from moot.core.providers.pool import ProviderPool
from moot.core.secrets import redact
from moot.core.state import apply, find_contribution, new_state


class StopRequested(Exception):
    pass


class BudgetExhausted(Exception):
    """The cost or token cap was reached: start no more calls, but still synthesize."""


Clarifier = Callable[[list[Clarification]], Awaitable[list[str]]]
"""Asks the user: gets the questions, returns one answer per question ("" = no answer)."""


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


class Orchestrator:
    def __init__(
        self,
        config: MootConfig,
        problem: str,
        *,
        debate_id: str,
        providers: ProviderPool,
        default_provider: str = "demo",
        state: DebateState | None = None,
        bus: EventBus | None = None,
        ids: Ids | None = None,
        clock: Clock = SYSTEM_CLOCK,
        clarifier: Clarifier | None = None,
    ) -> None:
        self.config = config
        self.problem = problem
        self.debate_id = debate_id
        self.providers = providers
        self.bus = bus or EventBus(debate_id)
        self.bus.debate_id = debate_id
        self.ids = ids or Ids()
        self.clock = clock
        self.resuming = state is not None and bool(state.problem)
        self.state = state if state is not None else new_state(debate_id)
        self.bus.set_seq(self.state.last_seq)
        self.index = DebateIndex(self.state)
        self.builder = ViewBuilder(self.index)
        self.agents = [resolve_agent(a, config, default_provider) for a in config.active_agents]
        self.judge = resolve_agent(config.judge, config, default_provider)
        self._by_id = {a.id: a for a in [*self.agents, self.judge]}
        self.bus.listen(self._fold)
        self._sem = asyncio.Semaphore(config.debate.max_concurrency)
        self._running = asyncio.Event()
        self._running.set()
        self._stop = False
        self._pending_summaries: set[str] = set()
        self._summary_locks: dict[str, asyncio.Lock] = {}
        self.summarizer = Summarizer(self.index, self.builder, self._summarize_call, self.ids, clock)
        self.phase: str = ""
        self.clarifier = clarifier
        self._budget_hit = False
        self._synthesizing = False
        self._latency: dict[str, int] = {}
        """call id → its latency, measured with the clock (frozen in tests)."""

    # ------------------------------------------------------------------ commands

    def request_summary(self, agent_id: str) -> None:
        """Summarize this agent at its next call boundary, even below the threshold."""
        agent = self.find_agent(agent_id)
        if agent is None:
            raise KeyError(agent_id)
        self._pending_summaries.add(agent.id)
        self.emit(SummaryRequested(agent_id=agent.id))

    def pause(self) -> None:
        if self._running.is_set():
            self._running.clear()
            self.emit(ControlChanged(action="pause"))

    def resume(self) -> None:
        if not self._running.is_set():
            self._running.set()
            self.emit(ControlChanged(action="resume"))

    def stop(self) -> None:
        if not self._stop:
            self._stop = True
            self._running.set()
            self.emit(ControlChanged(action="stop"))

    def inject(self, text: str) -> ModeratorNote:
        """A moderator note every agent sees verbatim, from its next call on."""
        text = redact(text.strip(), self.providers.secrets)
        if not text:
            raise ValueError("an empty note")
        note = ModeratorNote(id=self.ids("note"), text=text, after_round=self.state.current_round)
        self.emit(NoteInjected(note=note))
        return note

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def find_agent(self, name: str) -> ResolvedAgent | None:
        """A debater by id, name or role (see `moot.core.agents.find_agent`); not the judge."""
        return find_agent(name, self.agents)

    # ------------------------------------------------------------------ events

    def emit(self, event: Event) -> Event:
        event.ts = self.clock.wall()
        return self.bus.emit(event)

    def _fold(self, event: Event) -> None:
        apply(self.state, event)
        self.index.on_event(event)

    # ------------------------------------------------------------------ the debate

    def _info(self, a: ResolvedAgent) -> AgentInfo:
        return AgentInfo(id=a.id, name=a.name, role=a.role, model=a.model, provider=a.provider,
                         temperature=a.config.temperature, budget=a.context.input_budget)

    def _collect_prompts(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for a in self.agents:
            for kind in prompts.PROMPT_KINDS:
                override = None
                if kind == "system":
                    override = a.config.system_prompt_path
                elif kind == "summarize":
                    override = a.config.summary_prompt_path or a.summarization.prompt_path
                out[f"{a.id}/{kind}"] = prompts.load(a.role, kind, override)
        j = self.judge
        for kind in prompts.JUDGE_KINDS:
            override = j.config.system_prompt_path if kind == "system" else (
                j.config.summary_prompt_path if kind == "summarize" else None)
            out[f"{j.id}/{kind}"] = prompts.load("judge", kind, override)
        return out

    async def run(self) -> DebateState:
        try:
            if self.resuming:
                self.emit(DebateResumed(from_round=max(1, self.state.current_round)))
            else:
                self.emit(DebateStarted(
                    problem=self.problem,
                    total_rounds=self.config.debate.rounds,
                    agents=[self._info(a) for a in self.agents],
                    judge=self._info(self.judge),
                    prompts=self._collect_prompts(),
                    config=public_config(self.config),
                    provider_label=", ".join(sorted({a.provider for a in [*self.agents, self.judge]})),
                ))
            settings = self.config.debate
            if settings.clarify and not self.state.clarified:
                await self._phase(1, "clarify", lambda _r: self._clarification_phase())
            total = self.state.total_rounds
            status = "completed"
            try:
                for r in range(max(1, self.state.current_round), total + 1):
                    if self.state.current_round < r:
                        self.emit(RoundStarted(round=r))
                    await self._phase(r, "summarize", self._summarization_phase)
                    await self._phase(r, "proposal", self._proposal_phase)
                    await self._phase(r, "critique", self._critique_phase)
                    await self._phase(r, "refinement", self._refinement_phase)
                    if settings.termination == "convergence" and r < total:
                        self.emit(PhaseStarted(round=r, phase="score"))
                        converged = await self._converged(r)
                        self.emit(PhaseCompleted(round=r, phase="score"))
                        if converged:
                            break
            except BudgetExhausted as exc:
                status = "stopped_budget"
                self.emit(BudgetReached(reason=str(exc)))
            if status == "completed":
                await self._flush_manual_summaries()
            if self.state.final_solution is None:
                if not self.state.all_contributions():
                    raise DebateAborted("nothing to synthesize: no contribution was made")
                self._synthesizing = True
                final = max(r.number for r in self.state.rounds if r.contributions)
                await self._phase(final, "synthesis", self._synthesis_phase)
            for agent_id in sorted(self._pending_summaries):
                self.emit(Warning_(message=f"the summary request for {agent_id} came after its last call; "
                                   "nothing to summarize into", agent_id=agent_id))
            self.emit(DebateCompleted(status=status, totals=self.state.totals))
        except StopRequested:
            self.emit(DebateInterrupted(status="stopped", reason="stopped by the user"))
        except asyncio.CancelledError:
            self.emit(DebateInterrupted(status="interrupted", reason="interrupted"))
            raise
        except DebateAborted as exc:
            self.emit(DebateFailed(error=str(exc), exit_code=exc.exit_code))
        except ContextOverflow as exc:
            self.emit(DebateFailed(error=str(exc), exit_code=int(exc.exit_code)))
        return self.state

    async def _phase(self, r: int, phase: Phase, body: Callable[[int], Awaitable[None]]) -> None:
        self.phase = phase
        self.emit(PhaseStarted(round=r, phase=phase))
        await body(r)
        self.emit(PhaseCompleted(round=r, phase=phase))

    async def _gate(self) -> None:
        """The call boundary: wait while paused, stop when asked, respect the budget."""
        if self._stop:
            raise StopRequested
        await self._running.wait()
        if self._stop:
            raise StopRequested
        if not self._synthesizing:
            self._check_budget()

    def _check_budget(self) -> None:
        s = self.config.debate
        t = self.state.totals
        if s.max_cost_usd is not None and t.cost_usd >= s.max_cost_usd:
            raise BudgetExhausted(f"cost ${t.cost_usd:.4f} reached the cap of ${s.max_cost_usd:.4f}")
        used = t.prompt_tokens + t.completion_tokens
        if s.max_total_tokens is not None and used >= s.max_total_tokens:
            raise BudgetExhausted(f"{used} tokens reached the cap of {s.max_total_tokens}")

    async def _gather(self, coros: Sequence[Awaitable[None]]) -> None:
        """Run calls in parallel. A stop or budget stop lets calls in flight finish (they
        are paid for); any other error wins over them. Cancellation reaches every call."""
        results = await asyncio.gather(*coros, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        for e in errors:
            if not isinstance(e, (StopRequested, BudgetExhausted)):
                raise e
        if errors:
            raise errors[0]

    # ------------------------------------------------------------------ phases

    async def _clarification_phase(self) -> None:
        """Agents ask up to N questions each; the user answers; optional follow-up rounds."""
        settings = self.config.debate
        self.phase = "clarify"
        start = 1 + max((c.round for c in self.state.clarifications), default=0)
        for cr in range(start, settings.clarification_rounds + 2):
            asked: list[Clarification] = []
            usage = CallMetadata()
            per_agent: dict[str, CallMetadata] = {}

            async def ask(agent: ResolvedAgent) -> list[Clarification]:
                await self._gate()
                record = self._record(agent, 0, "clarify")
                record.task_params["max_questions"] = settings.clarifications_max_per_agent
                messages = self.builder.build(record, [], agent.context.input_budget)
                hint = CallHint(phase="clarify", role=agent.role, agent_id=agent.id, round=cr, problem=self.problem,
                                extra={"max_questions": settings.clarifications_max_per_agent})
                try:
                    completion = await self._complete(agent, record, messages, hint)
                except ProviderError as exc:
                    self.emit(Warning_(message=f"{agent.id} could not ask questions: {exc}", agent_id=agent.id))
                    return []
                meta = self._meta(agent, record, completion)
                per_agent[agent.id] = meta
                usage.prompt_tokens += meta.prompt_tokens
                usage.completion_tokens += meta.completion_tokens
                usage.cost_usd += meta.cost_usd
                return [Clarification(agent_id=agent.id, question=q, round=cr)
                        for q in _questions(completion.content)[: settings.clarifications_max_per_agent]]

            for qs in await asyncio.gather(*(ask(a) for a in self.agents)):
                asked.extend(qs)
            last = cr == settings.clarification_rounds + 1 or not asked
            if asked:
                self.emit(ClarificationsAsked(round=cr, questions=asked))
                answers = await self._answers(asked)
                # copies: the asked event may not be on disk yet and must keep its blanks
                asked = [c.model_copy(update={"answer": redact(a.strip(), self.providers.secrets)})
                         for c, a in zip(asked, answers)]
            self.emit(ClarificationsAnswered(round=cr, answers=asked, done=last, usage=usage, per_agent=per_agent))
            if last:
                return

    async def _answers(self, questions: list[Clarification]) -> list[str]:
        if self.clarifier is None:
            self.emit(Warning_(message="no one to answer the clarifying questions; going on without answers"))
            return [""] * len(questions)
        answers = list(await self.clarifier(questions))
        return (answers + [""] * len(questions))[: len(questions)]

    async def _converged(self, r: int) -> bool:
        """The judge scores how converged round r is; True when at or above the threshold."""
        if any(c.round == r for c in self.state.convergence):
            score = next(c for c in self.state.convergence if c.round == r)
        else:
            await self._gate()
            j = self.judge
            record = self._record(j, r, "score")
            record.task_contribution_ids = [c.id for c in self.state.round(r).contributions if c.type == "refinement"]
            messages = self.builder.build(record, [], j.context.input_budget)
            hint = CallHint(phase="score", role=j.role, agent_id=j.id, round=r, problem=self.problem)
            self.phase = "score"
            try:
                completion = await self._complete(j, record, messages, hint)
            except ProviderError as exc:
                self.emit(Warning_(message=f"convergence check failed: {exc}; continuing", agent_id=j.id))
                return False
            obj = parse_json_object(completion.content) or {}
            score = ConvergenceScore(round=r, confidence=parse_confidence(obj.get("confidence")),
                                     reason=str(obj.get("reason", ""))[:300])
            self.emit(ConvergenceScored(score=score, usage=self._meta(j, record, completion)))
        threshold = self.config.debate.convergence_threshold
        if score.confidence is not None and score.confidence >= threshold:
            self.emit(Converged(round=r, confidence=score.confidence, threshold=threshold))
            return True
        return False

    async def _summarization_phase(self, r: int) -> None:
        if self.state.round(r).contributions:
            return  # the phase finished before the proposals began (a resumed debate)

        async def one(agent: ResolvedAgent) -> None:
            if agent.id in self.state.round(r).summaries:
                return  # done before a resume
            trigger = self._auto_trigger(agent, r)
            if trigger:
                await self._gate()
                await self._summarize(agent, r, trigger)

        await self._gather([one(a) for a in self.agents])

    def _auto_trigger(self, agent: ResolvedAgent, r: int) -> SummaryTrigger | None:
        cfg = agent.summarization
        if not cfg.enabled:
            return None
        summary = self.index.latest_summary.get(agent.id)
        fresh_items = self.index.uncovered_items(agent.id, summary)
        if not fresh_items:
            return None
        counted = self.index.perspective_items(agent.id) if cfg.strategy == "fresh" else fresh_items
        if sum(len(c.content) for c in counted) >= cfg.threshold:
            return "chars"
        record = self._record(agent, r, "proposal")
        view_tokens = self._estimate_view(agent, record, summary, fresh_items)
        if view_tokens >= cfg.trigger_ratio * agent.context.input_budget:
            return "tokens"
        return None

    def _estimate_view(self, agent: ResolvedAgent, record: ViewRecord, summary: Summary | None, items: list[Contribution]) -> int:
        from moot.core import tokens
        from moot.core.context.view import render_messages

        record.summary_id = summary.id if summary else None
        record.contribution_ids = []
        base = tokens.count_messages(render_messages(record, self.index), agent.model)
        return base + sum(self.builder.item_tokens(c, agent.id, agent.model) for c in items) + 30

    async def _summarize(self, agent: ResolvedAgent, r: int, trigger: SummaryTrigger) -> Summary | None:
        lock = self._summary_locks.setdefault(agent.id, asyncio.Lock())
        async with lock:
            cfg = agent.summarization
            strategy = cfg.strategy
            previous = self.index.latest_summary.get(agent.id)
            items = self.index.uncovered_items(agent.id, previous) if strategy == "rolling" else []
            if strategy == "fresh" or (not items and trigger == "manual"):
                # a manual request always yields a summary: with nothing new to fold, redo it whole
                strategy, previous = "fresh", None
                items = self.index.perspective_items(agent.id)
            if not items:
                return None
            job = SummaryJob(
                agent_id=agent.id, role=agent.role, round=r, trigger=trigger, items=items, previous=previous,
                method=cfg.method, strategy=strategy, max_chars=cfg.max_length, max_tokens=cfg.max_summary_tokens,
                model=cfg.model or agent.model, budget=agent.context.input_budget,
                reserve=agent.context.reserve_output_tokens, system_key=f"{agent.id}/system",
                task_key=f"{agent.id}/summarize", summary_id=self.ids("sum"),
            )
            summary, fallback = await self.summarizer.run(job)
            md = summary.metadata
            md.cost_usd = self._cost(agent, job.model, md.prompt_tokens, md.completion_tokens)
            if fallback:
                self.emit(Warning_(message=f"{agent.id}: {fallback}; used a rule-based summary", agent_id=agent.id))
            self.emit(SummaryAdded(summary=summary))
            return summary

    async def _maybe_manual_summary(self, agent: ResolvedAgent, r: int) -> None:
        if agent.id in self._pending_summaries:
            self._pending_summaries.discard(agent.id)
            if self.index.perspective.get(agent.id):
                await self._summarize(agent, r, "manual")
            else:
                self.emit(Warning_(message=f"{agent.id} has no history to summarize yet", agent_id=agent.id))

    async def _flush_manual_summaries(self) -> None:
        """Requests that came after an agent's last call still get their summary (it is
        what the user asked to see), made before the judge's synthesis."""
        r = max(1, self.state.current_round)
        for agent in self.agents:
            if agent.id in self._pending_summaries:
                await self._maybe_manual_summary(agent, r)

    async def _proposal_phase(self, r: int) -> None:
        async def one(agent: ResolvedAgent) -> None:
            if find_contribution(self.state, r, agent.id, "proposal"):
                return
            if r > 1 and self.config.debate.carry_refinements:
                prev = find_contribution(self.state, r - 1, agent.id, "refinement")
                if prev is not None:
                    self.emit(ContributionAdded(contribution=Contribution(
                        id=self.ids("c"), agent_id=agent.id, role=agent.role, type="proposal", round=r,
                        content=prev.content, carried_from=prev.id, metadata=CallMetadata(model=agent.model))))
                    return
            await self._contribute(agent, r, "proposal", required=True)

        await self._gather([one(a) for a in self.agents])

    async def _critique_phase(self, r: int) -> None:
        jobs = []
        for critic in self.agents:
            for target in self.agents:
                if target.id == critic.id or find_contribution(self.state, r, critic.id, "critique", target.id):
                    continue
                if find_contribution(self.state, r, target.id, "proposal") is None:
                    continue  # the target was skipped this round
                jobs.append(self._contribute(critic, r, "critique", target=target, required=False))
        await self._gather(jobs)

    async def _refinement_phase(self, r: int) -> None:
        async def one(agent: ResolvedAgent) -> None:
            if find_contribution(self.state, r, agent.id, "refinement"):
                return
            if find_contribution(self.state, r, agent.id, "proposal") is None:
                return
            await self._contribute(agent, r, "refinement", required=True)

        await self._gather([one(a) for a in self.agents])

    async def _synthesis_phase(self, r: int) -> None:
        await self._gate()
        j = self.judge
        final = [c for c in self.state.round(r).contributions if c.type in ("proposal", "refinement")]
        summary_id = None
        cfg = j.summarization
        if cfg.enabled and final and sum(len(c.content) for c in final) >= cfg.threshold:
            summary = self.state.judge_summary
            if summary is None or summary.round != r:
                job = SummaryJob(
                    agent_id=j.id, role=j.role, round=r, trigger="judge", items=final, previous=None,
                    method=cfg.method, strategy="fresh", max_chars=cfg.max_length, max_tokens=cfg.max_summary_tokens,
                    model=cfg.model or j.model, budget=j.context.input_budget, reserve=j.context.reserve_output_tokens,
                    system_key=f"{j.id}/system", task_key=f"{j.id}/summarize", summary_id=self.ids("sum"),
                    judge=True,
                )
                summary, fallback = await self.summarizer.run(job)
                md = summary.metadata
                md.cost_usd = self._cost(j, job.model, md.prompt_tokens, md.completion_tokens)
                if fallback:
                    self.emit(Warning_(message=f"judge: {fallback}; used a rule-based summary", agent_id=j.id))
                self.emit(SummaryAdded(summary=summary, judge=True))
            summary_id = self.state.judge_summary.id if self.state.judge_summary else None
        record = self._record(j, r, "synthesis")
        record.summary_id = summary_id
        record.task_contribution_ids = [] if summary_id else [c.id for c in final]
        messages = self.builder.build(record, [], j.context.input_budget)
        hint = CallHint(phase="synthesis", role=j.role, agent_id=j.id, round=r, problem=self.problem,
                        extra={"agents": [a.role for a in self.agents]})
        try:
            completion = await self._complete(j, record, messages, hint)
        except ProviderError as exc:
            raise DebateAborted(f"judge synthesis failed: {exc}") from None
        solution = parse_solution(completion.content)
        solution.metadata = self._meta(j, record, completion)
        if not solution.parsed:
            self.emit(Warning_(message="the judge's answer was not JSON; kept it as the solution text", agent_id=j.id))
        self.emit(SynthesisCompleted(solution=solution))

    # ------------------------------------------------------------------ calls

    def _record(self, agent: ResolvedAgent, r: int, phase: Phase, target: ResolvedAgent | None = None) -> ViewRecord:
        task_kind = {"proposal": "propose", "critique": "critique", "refinement": "refine",
                     "synthesis": "synthesize", "score": "score", "clarify": "clarify"}[phase]
        params: dict[str, object] = {}  # the problem comes from the debate, not each record
        if phase == "proposal":
            params.update(round=r, total_rounds=self.state.total_rounds)
        if target is not None:
            params.update(target_name=target.name, target_role=target.role)
        notes = self._notes_text()
        return ViewRecord(
            call_id=self.ids("call"), agent_id=agent.id, round=r, phase=phase,
            target_agent_id=target.id if target else None, model=agent.model,
            system_key=f"{agent.id}/system", task_key=f"{agent.id}/{task_kind}", task_params=params,
            inline={"notes": notes} if notes else {},
        )

    def _notes_text(self) -> str:
        """The user's answers to clarifying questions and the moderator's notes, verbatim.
        They ride in every task (never in the summarized history), so they are never lost."""
        parts: list[str] = []
        answered = [c for c in self.state.clarifications]
        if answered:
            lines = ["## Clarifications from the user"]
            for c in answered:
                lines.append(f"- Q ({self.index.name(c.agent_id)}): {c.question}\n  A: {c.answer or '(no answer)'}")
            parts.append("\n".join(lines))
        if self.state.notes:
            lines = ["## Moderator notes (follow them)"]
            lines += [f"- {n.text}" for n in self.state.notes]
            parts.append("\n".join(lines))
        return "\n\n".join(parts)

    async def _contribute(self, agent: ResolvedAgent, r: int, kind: ContributionType, *, target: ResolvedAgent | None = None,
                          required: bool) -> None:
        await self._gate()
        await self._maybe_manual_summary(agent, r)
        record = self._record(agent, r, kind, target)
        if kind == "critique":
            assert target is not None
            proposal = find_contribution(self.state, r, target.id, "proposal")
            assert proposal is not None  # the phase only asks for critiques of recorded proposals
            record.task_contribution_ids = [proposal.id]
        elif kind == "refinement":
            own = find_contribution(self.state, r, agent.id, "proposal")
            assert own is not None  # no refinement without a proposal
            crits = [c for c in self.state.round(r).contributions if c.type == "critique" and c.target_agent_id == agent.id]
            record.task_contribution_ids = [own.id, *(c.id for c in crits)]
        summary = self.index.latest_summary.get(agent.id)
        record.summary_id = summary.id if summary else None
        in_task = set(record.task_contribution_ids)
        history = [c for c in self.index.uncovered_items(agent.id, summary) if c.id not in in_task]
        messages = self.builder.build(record, history, agent.context.input_budget)
        hint = CallHint(phase=kind, role=agent.role, agent_id=agent.id, round=r, problem=self.problem,
                        target_agent_id=target.id if target else None, target_role=target.role if target else None)
        try:
            completion = await self._complete(agent, record, messages, hint)
        except ProviderError as exc:
            if required and self.config.debate.on_error == "stop":
                raise DebateAborted(f"{agent.id} {kind} in round {r} failed: {exc}") from None
            self.emit(Warning_(message=f"{agent.id} {kind} in round {r} failed and was skipped: {exc}", agent_id=agent.id))
            return
        self.emit(ContributionAdded(contribution=Contribution(
            id=self.ids("c"), agent_id=agent.id, role=agent.role, type=kind, round=r,
            target_agent_id=target.id if target else None, content=completion.content,
            metadata=self._meta(agent, record, completion),
        )))

    def _meta(self, agent: ResolvedAgent, record: ViewRecord, completion: Completion) -> CallMetadata:
        model = completion.model or agent.model
        return CallMetadata(
            prompt_tokens=completion.prompt_tokens, completion_tokens=completion.completion_tokens,
            latency_ms=self._latency.pop(record.call_id, 0), model=model, provider=agent.provider,
            call_id=record.call_id, attempts=completion.attempts,
            cost_usd=self._cost(agent, model, completion.prompt_tokens, completion.completion_tokens),
        )

    def _cost(self, agent: ResolvedAgent, model: str, prompt: int, completion: int) -> float:
        if agent.provider == "demo":
            return 0.0
        return call_cost(model, prompt, completion, self.config.debate.prices)

    async def _summarize_call(self, record: ViewRecord, messages: list[Message], max_tokens: int) -> Completion:
        await self._gate()  # every chunk and reduce call is a call boundary
        agent = self._by_id[record.agent_id]
        record.max_tokens = max_tokens
        hint = CallHint(phase="summarize", role=agent.role, agent_id=agent.id, round=record.round, problem=self.problem,
                        extra={"max_chars": record.task_params.get("max_length", 2500)})
        return await self._complete(agent, record, messages, hint, max_tokens=max_tokens, model=record.model)

    async def _complete(self, agent: ResolvedAgent, record: ViewRecord, messages: list[Message], hint: CallHint,
                        *, max_tokens: int | None = None, model: str | None = None) -> Completion:
        provider = self.providers.get(agent)
        record.max_tokens = max_tokens or agent.context.reserve_output_tokens
        request = ChatRequest(messages=messages, model=model or agent.model, temperature=agent.config.temperature,
                              max_tokens=record.max_tokens, hint=hint, fallback_models=agent.config.fallback_models)
        secrets = self.providers.secrets
        async with self._sem:
            self.emit(CallStarted(view=record))
            call_id = record.call_id
            started = self.clock.monotonic()
            try:
                async for item in provider.stream(request):
                    match item:
                        case TextDelta(text=text):
                            self.emit(Token(call_id=call_id, agent_id=agent.id, delta=text))
                        case Restart():
                            self.emit(Token(call_id=call_id, agent_id=agent.id, delta="", restart=True))
                        case RetryNotice(reason=reason):
                            self.emit(CallFailed(call_id=call_id, agent_id=agent.id, error=redact(reason, secrets),
                                                 will_retry=True))
                        case Finished(completion=completion):
                            # What is kept (and later shown to other agents) never carries a key.
                            completion.content = redact(completion.content, secrets)
                            completion.model = redact(completion.model, secrets)
                            self._latency[call_id] = self.clock.elapsed_ms(started)
                            return completion
                        case _:
                            assert_never(item)
                raise ProviderError(f"{provider.name}: the stream ended without a completion")
            except ProviderError as exc:
                message = redact(str(exc), secrets)
                self.emit(CallFailed(call_id=call_id, agent_id=agent.id, error=message, will_retry=False))
                raise ProviderError(message, status=exc.status) from None


def _questions(text: str) -> list[str]:
    """Questions from a clarify answer: JSON {"questions": [...]}, tolerant of strings or objects."""
    obj = parse_json_object(text)
    raw = obj.get("questions", []) if obj else []
    out = []
    for q in raw if isinstance(raw, list) else []:
        if isinstance(q, dict):
            q = q.get("question") or q.get("text") or ""
        if isinstance(q, str) and q.strip():
            out.append(q.strip()[:500])
    return out

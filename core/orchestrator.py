"""The debate: a protocol run over the call engine, with a narrow door for commands.

`Orchestrator.run()` records the start (or the resume), asks the clarifying questions
when configured, runs the protocol's steps, lets the judge synthesize and records
the end. Every change to the state is an event folded by `moot.core.storage.state.apply`
(through `Fold`, as the live TUI folds them), so a debate resumed from its log skips every call
whose result was recorded and redoes the ones that were in flight.

Commands come in through `request_summary`, `pause`, `resume`, `stop`, `inject`, `pin` and
`unpin`, each honoured at the next call boundary (the gate), never in the middle of a call.

Over 400 lines: the command door (pins included) and the run's phases (clarify, protocol, convergence, synthesis) share the gate
and the fold; moving clarify and convergence to a module of their own is the next split.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import assert_never, cast

from . import prompts
from .agents import find_agent
from .clock import SYSTEM_CLOCK, Clock
from .config import ResolvedAgent, public_config, resolve_agent
from .context.fold import Fold
from .context.index import DebateIndex
from .context.recall_tier import Recaller
from .context.view import LAYOUT, ViewBuilder
from .control.commands import ControlCommand
from .engine.calls import CallEngine, endpoint_of
from .engine.gate import BudgetExhausted, Gate, StopRequested
from .engine.grounding import Grounding
from .engine.summaries import Summaries
from .errors import ContextOverflow
from .event_bus import EventBus
from .events import (
    BudgetReached,
    ControlChanged,
    DebateCompleted,
    DebateFailed,
    DebateInterrupted,
    DebateResumed,
    DebateStarted,
    Event,
    NoteInjected,
    PinChanged,
    SeatAnswered,
    SummaryRequested,
    ToolsReady,
    Warning_,
)
from .human.desk import Answer, HumanDesk, Turn, Via
from .human.provider import HumanProvider
from .models.config import MootConfig
from .models.state import AgentInfo, DebateState, ModeratorNote, Pin
from .models.terms import MAX_FOCUS, Phase
from .pinning import check_fits, constraint_pins, find_item, item_pin
from .protocols import PROTOCOLS
from .protocols.base import DebateAborted, DebateContext, DebateProtocol, Ids
from .protocols.clarify import Clarifier, clarify
from .protocols.judging import synthesize
from .providers.pool import ProviderPool
from .safety.secrets import redact
from .search.archived import ArchivedContributions
from .search.live import LiveIndex
from .storage.state import new_state
from .tools.references import changed_files
from .trace_ids import new_trace_id

__all__ = ["BudgetExhausted", "Clarifier", "DebateAborted", "Ids", "Orchestrator", "StopRequested"]


def endpoint_limits(config: MootConfig, agents: list[ResolvedAgent]) -> dict[str, int]:
    """Each endpoint's own limit of calls in flight: the lowest of its `[providers."URL"]` entry and
    the `max_concurrency` of the agents that use it."""
    limits: dict[str, int] = {}
    for a in agents:
        if a.is_person:  # a person answers one thing at a time
            limits[endpoint_of(a)] = 1
            continue
        endpoint = config.providers.get(a.config.base_url or "")
        for n in (a.config.max_concurrency, endpoint.max_concurrency if endpoint else None):
            if n is not None:
                e = endpoint_of(a)
                limits[e] = min(n, limits.get(e, n))
    return limits


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
        grounding: Callable[[list[ResolvedAgent]], Grounding | None] | None = None,
    ) -> None:
        self.config = config
        self.problem = problem
        self.debate_id = debate_id
        self.providers = providers
        self.bus = bus or EventBus(debate_id)
        self.bus.debate_id = debate_id
        self.ids = ids or Ids()
        self.clock = clock
        self.clarifier = clarifier
        self.interrupted_by = ""
        """What cancelled the run, when whoever cancels it knows (headless: the signal's name);
        recorded as the `debate_interrupted` reason."""
        self.resuming = state is not None and bool(state.problem)
        self.state = state if state is not None else new_state(debate_id)
        self.bus.set_seq(self.state.last_seq)
        self.index = DebateIndex(self.state)
        self.builder = ViewBuilder(self.index)
        seats = PROTOCOLS[config.debate.protocol].seats(config)
        self.agents = [resolve_agent(a, config, default_provider) for a in seats]
        self.judge = resolve_agent(config.judge, config, default_provider)
        self.fold = Fold(self.state, self.index, on_archive=self.builder.forget_archived)
        """The state and the index, kept current by every event (the live TUI folds the same way)."""
        self.bus.listen(self._fold)
        self.desk = HumanDesk(secrets=lambda: providers.secrets)
        """The people's open turns (`--human`): their answers come in through `say`."""
        providers.people = lambda: HumanProvider(self.desk)
        self.desk.on_answer = self._answered
        self.gate = Gate(config.debate, lambda: self.state.totals)
        self.engine = CallEngine(providers=providers, builder=self.builder, gate=self.gate, emit=self.emit,
                                 clock=clock, max_concurrency=config.debate.max_concurrency,
                                 prices=dict(config.debate.prices),
                                 endpoint_limits=endpoint_limits(config, [*self.agents, self.judge]))
        self.grounding = grounding([*self.agents, self.judge]) if grounding is not None else None
        """The references and tools the agents may read (built by the session, which knows the folder)."""
        self.engine.grounding = self.grounding
        people = {a.id: a for a in [*self.agents, self.judge]}
        self.summaries = Summaries(index=self.index, builder=self.builder, engine=self.engine, emit=self.emit,
                                   new_id=self.ids, clock=clock, people=people, problem=problem)
        self.ctx = DebateContext(config=config, problem=problem, agents=self.agents, judge=self.judge,
                                 state=self.state, index=self.index, engine=self.engine, summaries=self.summaries,
                                 gate=self.gate, emit=self.emit, ids=self.ids)
        self.protocol: DebateProtocol = PROTOCOLS[config.debate.protocol](self.ctx)
        # Prompt files are read now, before anything is created on disk: a bad path is
        # one clear error and no half-made debate folder.
        self.prompts = self.state.prompts if self.resuming else self._collect_prompts()
        self.accepting = False
        """True from the start (or resume) event to the end: commands from other processes wait until then."""

    # ------------------------------------------------------------------ commands

    def request_summary(self, agent_id: str, focus: str | None = None, *, from_step: int | None = None,
                        command_id: str | None = None) -> None:
        """Summarize this agent at its next call boundary (in a conversation: roll its summary at
        the next turn), even below the threshold; `focus` goes into the summarization prompt.
        `from_step`: fold everything before that turn (or round) and keep the rest verbatim."""
        agent = self.find_agent(agent_id)
        if agent is None:
            raise KeyError(agent_id)
        if from_step is not None and not 1 <= from_step <= max(1, self.state.current_round):
            word = self.protocol.step_word
            raise ValueError(f"--from {word} {from_step}: the debate is at {word} {self.state.current_round}")
        focus = redact(focus.strip(), self.providers.secrets)[:MAX_FOCUS] if focus and focus.strip() else None
        self.summaries.request(agent.id, focus, from_step)
        self.emit(SummaryRequested(agent_id=agent.id, focus=focus, from_step=from_step, command_id=command_id))

    def pin(self, item: str, *, command_id: str | None = None) -> Pin:
        """Keep an item verbatim in every later view of the agents that saw it (`moot.core.pinning`
        says how items are named); ValueError (one line) when it names nothing, is pinned already
        or would not fit an agent's window."""
        key = find_item(item, self.index, self.agents)
        old = self.index.pins.get(key)
        if old is not None and old.active:
            raise ValueError(f"{old.label} is pinned already")
        pin = old.model_copy(update={"active": True}) if old else item_pin(self.index.contributions[key], self.index)
        check_fits(pin, self.protocol)
        self.emit(PinChanged(pin=pin, command_id=command_id))
        return pin

    def unpin(self, item: str, *, command_id: str | None = None) -> Pin:
        """Let a pinned item go: later views carry it no more (the summary covers it as it covers any item)."""
        key = find_item(item, self.index, self.agents)
        pin = self.index.pins.get(key)
        if pin is None or not pin.active:
            raise ValueError(f"{pin.label if pin else ' '.join(item.split())} is not pinned")
        pin = pin.model_copy(update={"active": False})
        self.emit(PinChanged(pin=pin, command_id=command_id))
        return pin

    def pause(self, *, command_id: str | None = None) -> bool:
        """Hold new calls from the next boundary on (calls in flight finish; an `effective`
        event follows once none is). False when already paused."""
        if not self.gate.pause():
            return False
        self.emit(ControlChanged(action="pause", command_id=command_id))
        self.engine.report_pause()
        return True

    def resume(self, *, command_id: str | None = None) -> bool:
        """False when not paused."""
        if not self.gate.resume():
            return False
        self.emit(ControlChanged(action="resume", command_id=command_id))
        self.engine.report_pause()  # not paused: the next pause is said again once its calls end
        return True

    def stop(self, *, command_id: str | None = None) -> bool:
        """False when already stopping."""
        if not self.gate.stop():
            return False
        self.emit(ControlChanged(action="stop", command_id=command_id))
        self.desk.stop()  # a person's open turn ends now (what they typed is in the drafts)
        return True

    def say(self, agent_id: str, text: str, *, via: Via = "library", command_id: str | None = None) -> None:
        """A person's answer to their open turn (`--human`): `agent_id` by id, name or role of a
        person's seat. ValueError (one line) when no such seat waits, or the text is empty or
        longer than a reply may be."""
        people = [a for a in self.agents if a.is_person]
        if not people:
            raise ValueError("nobody takes a seat in this debate (start it with --human NAME)")
        agent = find_agent(agent_id, people)
        if agent is None:
            raise ValueError(f"no person's seat {agent_id!r}; seats: {', '.join(a.id for a in people)}")
        self.desk.submit(agent.id, text, via=via, command_id=command_id)  # which masks the keys

    def _answered(self, turn: Turn, answer: Answer) -> None:
        self.emit(SeatAnswered(agent_id=turn.agent_id, round=turn.round, phase=cast(Phase, turn.phase),
                               target_agent_id=turn.target_agent_id, via=answer.via, chars=len(answer.text),
                               command_id=answer.command_id))

    def inject(self, text: str, *, command_id: str | None = None) -> ModeratorNote:
        """A moderator note every agent sees verbatim, from its next call on."""
        text = redact(text.strip(), self.providers.secrets)
        if not text:
            raise ValueError("an empty note")
        note = ModeratorNote(id=self.ids("note"), text=text, after_round=self.state.current_round)
        self.emit(NoteInjected(note=note, command_id=command_id))
        return note

    def apply_command(self, command: ControlCommand) -> None:
        """A command another process sent (`moot ctl`, an attached watch): the same door. One that
        would change nothing (`resume` when not paused) or names no agent raises ValueError, so
        its sender learns it was not applied."""
        match command.action:
            case "pause":
                if not self.pause(command_id=command.id):
                    raise ValueError("the debate is already paused")
            case "resume":
                if not self.resume(command_id=command.id):
                    raise ValueError("the debate is not paused")
            case "stop":
                if not self.stop(command_id=command.id):
                    raise ValueError("the debate is already stopping")
            case "summarize":
                name = command.agent or "all"
                if name.lower() == "all":
                    targets = [a.id for a in self.agents]
                else:
                    agent = self.find_agent(name)
                    if agent is None:
                        raise ValueError(f"no agent {name!r}; agents: {', '.join(a.id for a in self.agents)}")
                    targets = [agent.id]
                for agent_id in targets:
                    self.request_summary(agent_id, command.text, from_step=command.step, command_id=command.id)
            case "pin":
                self.pin(command.text or "", command_id=command.id)
            case "unpin":
                self.unpin(command.text or "", command_id=command.id)
            case "inject":
                self.inject(command.text or "", command_id=command.id)
            case "say":
                seats = [a.id for a in self.agents if a.is_person]
                who = command.agent or (seats[0] if len(seats) == 1 else "")
                if not who:
                    raise ValueError(f"say as whom? seats: {', '.join(seats)} (moot ctl ID --as NAME say …)"
                                     if seats else "nobody takes a seat in this debate")
                self.say(who, command.text or "", via="ctl", command_id=command.id)
            case _:
                assert_never(command.action)

    @property
    def paused(self) -> bool:
        return self.gate.paused

    def find_agent(self, name: str) -> ResolvedAgent | None:
        """A debater by id, name or role (see `moot.core.agents.find_agent`); not the judge."""
        return find_agent(name, self.agents)

    def attach_search(self, live: LiveIndex, written: Callable[[], int] | None = None) -> None:
        """Index every text as it is emitted, and let views recall from that index (`written`: the
        last sequence number the log's writer has written, see `ArchivedContributions`)."""
        def warn(agent_id: str, message: str) -> None:
            self.emit(Warning_(message=message, agent_id=agent_id))

        self.bus.listen(live.on_event)
        self.engine.recaller = Recaller(live, self.index, warn)
        # Old items the recall tier brings back from steps this state let go of: read from the log.
        archived = ArchivedContributions(live, lambda: live.folder.events_path, written)
        self.bus.listen(archived.on_event)
        self.index.contributions.read_back = archived

    # ------------------------------------------------------------------ events

    def emit(self, event: Event) -> Event:
        event.ts = self.clock.wall()
        return self.bus.emit(event)

    def _fold(self, event: Event) -> None:
        self.fold.apply(event)

    # ------------------------------------------------------------------ the debate

    def _info(self, a: ResolvedAgent) -> AgentInfo:
        return AgentInfo(id=a.id, name=a.name, role=a.role, model=a.model, provider=a.provider,
                         temperature=a.config.temperature, budget=a.context.input_budget)

    def _collect_prompts(self) -> dict[str, str]:
        out: dict[str, str] = {}
        question = self.config.debate.answer is not None
        kinds = ("system", *self.protocol.task_kinds)
        for a in self.agents:
            for kind in dict.fromkeys(kinds):
                override = None
                if kind == "system":
                    override = a.config.system_prompt_path
                elif kind == "summarize":
                    override = a.config.summary_prompt_path or a.summarization.prompt_path
                out[f"{a.id}/{kind}"] = prompts.load(a.role, kind, override, question=question)
                small = None if override or (question and (False, kind) in prompts.QUESTION_KINDS) else (
                    prompts.compact(a.role, kind))
                if small:
                    out[f"{a.id}/{kind}{prompts.COMPACT}"] = small
        j = self.judge
        judge_kinds = prompts.JUDGE_KINDS + (("summarize_conversation",) if self.protocol.name == "conversation"
                                             else ())
        for kind in judge_kinds:
            override = j.config.system_prompt_path if kind == "system" else (
                j.config.summary_prompt_path if kind == "summarize" else None)
            out[f"{j.id}/{kind}"] = prompts.load("judge", kind, override, question=question)
            small = None if override or (question and (True, kind) in prompts.QUESTION_KINDS) else (
                prompts.compact("judge", kind))
            if small:
                out[f"{j.id}/{kind}{prompts.COMPACT}"] = small
        return out

    async def _ground(self) -> None:
        """Start the tools (MCP servers) and record what the agents may read; on a resume, say which
        reference files changed since the debate recorded them."""
        grounding = self.grounding
        assert grounding is not None
        await grounding.start(self.emit)
        before = self.state.tools
        setup = grounding.setup()
        if self.resuming and before is not None and grounding.refs is not None:
            changed = changed_files([r.model_dump() for r in before.references], grounding.refs)
            if changed:
                shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
                self.emit(Warning_(message=f"{len(changed)} reference file{'s' if len(changed) != 1 else ''} changed "
                                           f"since the debate started: {shown}; agents now read them as they are"))
        self.emit(ToolsReady(setup=setup))

    async def run(self) -> DebateState:
        ctx = self.ctx
        try:
            if self.resuming:
                self.emit(DebateResumed(from_round=max(1, self.state.current_round)))
            else:
                self.emit(DebateStarted(
                    problem=self.problem,
                    protocol=self.protocol.name,
                    total_rounds=self.protocol.total_steps,
                    agents=[self._info(a) for a in self.agents],
                    judge=self._info(self.judge),
                    prompts=self.prompts,
                    config=public_config(self.config),
                    provider_label=", ".join(sorted({a.provider for a in [*self.agents, self.judge]})),
                    trace_id=new_trace_id(self.debate_id if self.ids.seed is not None else None),
                    view_layout=LAYOUT,
                ))
                for pin in constraint_pins(self.config.debate.pinned):  # the problem's constraints
                    self.emit(PinChanged(pin=pin))
                # Let the event log writer put the first event on disk (and give the debate
                # folder its real name) before the first call's work holds the loop.
                await asyncio.sleep(0)
            self.accepting = True
            if self.grounding is not None:
                await self._ground()
            await self.engine.discover([*self.agents, self.judge])
            self.protocol.check_windows()
            if self.config.debate.clarify and not self.state.clarified:
                await ctx.phase(1, "clarify", lambda: clarify(ctx, self.clarifier))
            status: str = "completed"
            try:
                await self.protocol.run()
            except BudgetExhausted as exc:
                status = "stopped_budget"
                self.emit(BudgetReached(reason=str(exc)))
            if status == "completed":
                await self.protocol.before_synthesis()
            if self.state.final_solution is None:
                material = self.protocol.synthesis_input()
                if material is None:
                    raise DebateAborted("nothing to synthesize: no contribution was made")
                self.gate.spending_allowed = True
                async def conclude() -> None:
                    if not await self.protocol.conclude(material):
                        await synthesize(ctx, material)

                await ctx.phase(material.step, "synthesis", conclude)
            for agent_id in sorted(self.summaries.pending):
                self.emit(Warning_(message=f"the summary request for {agent_id} came after its last call; "
                                           "nothing to summarize into", agent_id=agent_id))
            self.emit(DebateCompleted(status="stopped_budget" if status == "stopped_budget" else "completed",
                                      totals=self.state.totals))
        except StopRequested:
            self.emit(DebateInterrupted(status="stopped", reason="stopped by the user"))
        except asyncio.CancelledError:
            if self.gate.stopping and not self.interrupted_by:
                # A stop whose calls in flight were cancelled instead of awaited (quitting the TUI
                # gives them a few seconds): still the user's stop, however long the calls had
                # left. The cancelled calls are redone on resume.
                self.emit(DebateInterrupted(status="stopped",
                                            reason="stopped by the user; the calls in flight were cancelled"))
            else:
                self.emit(DebateInterrupted(status="interrupted", reason=self.interrupted_by))
            raise
        except DebateAborted as exc:
            self.emit(DebateFailed(error=str(exc), exit_code=exc.exit_code))
        except ContextOverflow as exc:
            self.emit(DebateFailed(error=str(exc), exit_code=int(exc.exit_code)))
        finally:
            self.accepting = False
        return self.state

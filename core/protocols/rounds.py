"""`rounds`, the anchor's protocol.

Per round: summarization (agents whose history is large) → proposals (in parallel;
from round 2 an agent may carry its last refinement instead) → critiques (each agent
critiques each other agent's proposal it reads, in parallel: everyone's, or with
`debate.topology` only its links', see `topology.py`) → refinements (each agent answers
the critiques aimed at it). After the last round — or when the judge's convergence
score passes the threshold — the judge synthesizes from the final proposals and
refinements.

Each agent's view: its system prompt and the topic · the summary of its older
perspective (its own proposals and refinements, the critiques aimed at it) · newer
perspective items verbatim · the task. A call starts as soon as what it reads exists,
not when its whole phase may begin (`moot.core.protocols.schedule`), and its view is
built at the visibility barrier of its own round and phase (`moot.core.context.index`):
the same inputs give the same requests whatever the order calls finish in.
"""

from __future__ import annotations

from functools import partial

from .. import tokens
from ..config import ResolvedAgent
from ..context.index import barrier
from ..context.view import render_messages
from ..engine.summaries import block_caps
from ..events import ContributionAdded, Warning_
from ..models.state import CallMetadata, Contribution, Summary
from ..models.terms import ContributionType, Phase, SummaryTrigger
from ..storage.state import find_contribution
from .base import DebateProtocol, SynthesisInput
from .judging import converged_after_phase
from .schedule import CallGraph
from .topology import reads

PERSPECTIVE_KINDS = ("proposal", "critique", "refinement")
"""What an agent's perspective holds (its own proposals and refinements, the critiques aimed at it)."""


class RoundsProtocol(DebateProtocol):
    name = "rounds"
    task_kinds = ("propose", "critique", "refine", "summarize", "clarify")

    async def run(self) -> None:
        ctx = self.ctx
        total = self.total_steps
        if ctx.settings.termination == "convergence":
            # The judge's score after each round decides whether there is a next one: rounds
            # cannot overlap, but inside a round calls still wait only for what they read.
            for r in range(max(1, ctx.state.current_round), total + 1):
                await self._graph(r, r).run()
                if r < total and await converged_after_phase(ctx, r, self.score_input(r)):
                    return
            return
        # A round can still owe critiques and refinements while the next one has begun (never
        # two rounds back: see `_graph`), so a resumed debate looks one round back for them.
        await self._graph(max(1, ctx.state.current_round - 1), total).run()

    def _graph(self, first: int, last: int) -> CallGraph:
        """Rounds `first..last` as a graph of calls, each waiting only for what its view reads.

        An agent's summary at round r reads its perspective through round r-1, which its
        refinement of round r-1 completes (that refinement waited for every critique aimed at
        it); its proposal follows its summary; a critique reads the critic's perspective and
        its own proposal, and quotes the target's proposal; a refinement reads the critiques
        aimed at its agent. So round r+1 starts only once every critique and refinement of
        round r-1 is done. Steps already recorded (a resumed debate) are left out."""
        ctx = self.ctx
        graph = CallGraph(ctx)
        links = self._links()
        for r in range(first, last + 1):
            for a in ctx.agents:
                if not self._summary_done(a, r):
                    graph.add(("summary", a.id, r), r, "summarize", partial(self._summary_step, a, r),
                              [("refinement", a.id, r - 1)])
                if find_contribution(ctx.state, r, a.id, "proposal") is None:
                    # A carried refinement reads nothing new; a proposal written afresh reads the summary.
                    carry = r > 1 and ctx.settings.carry_refinements
                    graph.add(("proposal", a.id, r), r, "proposal", partial(self._proposal_step, a, r, graph),
                              [("refinement", a.id, r - 1)] if carry else [("summary", a.id, r)])
            for critic in ctx.agents:
                for target in ctx.agents:
                    if (target.id not in links[critic.id]
                            or find_contribution(ctx.state, r, critic.id, "critique", target.id)):
                        continue
                    graph.add(("critique", critic.id, target.id, r), r, "critique",
                              partial(self._critique_step, critic, target, r),
                              [("summary", critic.id, r), ("proposal", critic.id, r), ("proposal", target.id, r)])
            for a in ctx.agents:
                if find_contribution(ctx.state, r, a.id, "refinement") is None:
                    graph.add(("refinement", a.id, r), r, "refinement", partial(self._refinement_step, a, r),
                              [("summary", a.id, r), ("proposal", a.id, r),
                               *(("critique", x.id, a.id, r) for x in ctx.agents if a.id in links[x.id])])
        return graph

    def _links(self) -> dict[str, set[str]]:
        """Agent id → the agents whose proposals it reads and critiques (`debate.topology`); an agent
        reads the others only through its critiques, so this is all the topology changes here."""
        order = [a.id for a in self.ctx.agents]
        return {a: reads(order, a, self.ctx.settings.topology) for a in order}

    def largest_views(self, agent: ResolvedAgent) -> list[tuple[Phase, dict[str, object], int]]:
        """A refinement quotes the agent's proposal and a critique from each agent that reads it."""
        links = self._links()
        others = [a for a in self.ctx.agents if a.id in links[agent.id]]
        if not others:
            return []
        target = others[0]
        critics = sum(agent.id in seen for seen in links.values())
        return [("critique", {"target_name": target.name, "target_role": target.role}, 1),
                ("refinement", {}, 1 + critics)]

    # ------------------------------------------------------------------ phases

    def _summary_done(self, agent: ResolvedAgent, r: int) -> bool:
        """The agent's summarization step of round r is behind it (a summary, or its proposal, exists)."""
        state = self.ctx.state
        return ((r <= len(state.rounds) and agent.id in state.rounds[r - 1].summaries)
                or find_contribution(state, r, agent.id, "proposal") is not None)

    async def _summary_step(self, agent: ResolvedAgent, r: int) -> None:
        trigger = self._auto_trigger(agent, r)
        if trigger:
            await self.ctx.gate.wait()
            await self._summarize(agent, r, trigger, "summarize")

    async def _proposal_step(self, agent: ResolvedAgent, r: int, graph: CallGraph) -> None:
        ctx = self.ctx
        if find_contribution(ctx.state, r, agent.id, "proposal"):
            return
        if r > 1 and ctx.settings.carry_refinements:
            prev = find_contribution(ctx.state, r - 1, agent.id, "refinement")
            if prev is not None:
                ctx.emit(ContributionAdded(contribution=Contribution(
                    id=ctx.ids("c"), agent_id=agent.id, role=agent.role, type="proposal", round=r,
                    content=prev.content, carried_from=prev.id, metadata=CallMetadata(model=agent.model))))
                return
        await graph.after(("summary", agent.id, r))
        await self._contribute(agent, r, "proposal", required=True)

    async def _critique_step(self, critic: ResolvedAgent, target: ResolvedAgent, r: int) -> None:
        ctx = self.ctx
        if find_contribution(ctx.state, r, critic.id, "critique", target.id):
            return
        if find_contribution(ctx.state, r, target.id, "proposal") is None:
            return  # the target was skipped this round
        await self._contribute(critic, r, "critique", target=target, required=False)

    async def _refinement_step(self, agent: ResolvedAgent, r: int) -> None:
        ctx = self.ctx
        if find_contribution(ctx.state, r, agent.id, "refinement"):
            return
        if find_contribution(ctx.state, r, agent.id, "proposal") is None:
            return
        await self._contribute(agent, r, "refinement", required=True)

    # ------------------------------------------------------------------ one contribution

    async def _contribute(self, agent: ResolvedAgent, r: int, kind: ContributionType, *,
                          target: ResolvedAgent | None = None, required: bool) -> None:
        ctx = self.ctx
        phase: Phase = "proposal" if kind == "proposal" else "critique" if kind == "critique" else "refinement"
        await ctx.gate.wait()
        await self._maybe_manual_summary(agent, r, phase)
        task_ids: list[str] = []
        if kind == "critique":
            assert target is not None
            proposal = find_contribution(ctx.state, r, target.id, "proposal")
            assert proposal is not None  # the phase only asks for critiques of recorded proposals
            task_ids = [proposal.id]
        elif kind == "refinement":
            own = find_contribution(ctx.state, r, agent.id, "proposal")
            assert own is not None  # no refinement without a proposal
            crits = sorted((c for c in ctx.state.round(r).contributions
                            if c.type == "critique" and c.target_agent_id == agent.id),
                           key=lambda c: ctx.index.rank(c.agent_id))
            task_ids = [own.id, *(c.id for c in crits)]
        params: dict[str, object] = {"round": r, "total_rounds": self.total_steps} if kind == "proposal" else {}
        record = ctx.record(agent, r, phase, target=target, params=params, task_ids=task_ids)
        summary = ctx.index.summary_at(agent.id, barrier(r, phase))
        record.summary_id = summary.id if summary else None
        if kind == "refinement" and ctx.index.layout >= 2:
            # Its own proposal and the critiques stay in the history, where its critiques' views had
            # the rest and the next summary's request will have all of it (the task points at them).
            history = ctx.index.uncovered_items(agent.id, summary, barrier(r, phase))
        else:
            in_task = set(task_ids)
            history = [c for c in ctx.index.uncovered_items(agent.id, summary, barrier(r, phase))
                       if c.id not in in_task]
        recall = ctx.perspective_recall(agent, ctx.index.covered_items(agent.id, summary), PERSPECTIVE_KINDS)
        result = await ctx.unless_failed(agent, f"{kind} in round {r}",
                                         ctx.call(agent, record, history=history, target=target, recall=recall),
                                         required=required)
        if result is not None:
            ctx.add_contribution(agent, r, kind, result, target)

    # ------------------------------------------------------------------ summaries

    def _auto_trigger(self, agent: ResolvedAgent, r: int) -> SummaryTrigger | None:
        ctx = self.ctx
        cfg = agent.summarization
        if not cfg.enabled:
            return None
        before = barrier(r, "summarize")
        summary = ctx.index.summary_at(agent.id, before)
        fresh_items = ctx.index.uncovered_items(agent.id, summary, before)
        if not fresh_items:
            return None
        counted = ctx.index.perspective_items(agent.id, before) if cfg.strategy == "fresh" else fresh_items
        if sum(len(c.content) for c in counted) >= cfg.threshold:
            return "chars"
        budget = ctx.engine.fit(agent).input_budget
        if self._estimate_view(agent, r, summary, fresh_items) >= cfg.trigger_ratio * budget:
            return "tokens"
        return None

    def _estimate_view(self, agent: ResolvedAgent, r: int, summary: Summary | None, items: list[Contribution]) -> int:
        """The tokens of the agent's next proposal view if nothing were summarized."""
        ctx = self.ctx
        record = ctx.record(agent, r, "proposal", params={"round": r, "total_rounds": self.total_steps})
        record.summary_id = summary.id if summary else None
        base = tokens.count_messages(render_messages(record, ctx.index), agent.model)
        builder = ctx.engine.builder
        return base + sum(builder.item_tokens(c, agent.id, agent.model) for c in items) + 30

    async def _summarize(self, agent: ResolvedAgent, r: int, trigger: SummaryTrigger, phase: Phase,
                         focus: str | None = None, upto: int | None = None) -> Summary | None:
        ctx = self.ctx
        before = barrier(r, phase)
        strategy = agent.summarization.strategy
        previous = ctx.index.summary_at(agent.id, before)
        items = ctx.index.uncovered_items(agent.id, previous, before) if strategy == "rolling" else []
        if upto is not None:  # `--from round N`: fold the rounds before N, keep N on verbatim
            items = [c for c in items if c.round < upto]
        if strategy == "fresh" or (not items and trigger == "manual" and upto is None):
            # a manual request always yields a summary: with nothing new to fold, redo it whole
            strategy, previous = "fresh", None
            items = ctx.index.perspective_items(agent.id, before)
            if upto is not None:
                items = [c for c in items if c.round < upto]
        if not items:
            return None
        # The summary shares its views' room with the history and the quotes that come after it.
        room = ctx.summaries.reader_cap(agent, "proposal", "propose", share=0.5,
                                        params={"round": r, "total_rounds": self.total_steps})
        cap = min(agent.summarization.max_summary_tokens, room)
        chars: int | None = None
        tier = (0, 0)
        if ctx.index.layout >= 5 and strategy == "rolling":
            # Append-only: the new items' summary is a block after the earlier ones, which the
            # agent's next requests repeat byte for byte; the blocks together stay within the
            # tier, and the tier within the views' share for the summary.
            whole = (cap, agent.summarization.max_length)
            t, t_chars, cap, chars = block_caps(*whole, previous, agent.summarization.model or agent.model)
            tier = (min(t, room), t_chars)
            cap = min(cap, tier[0])
        job = ctx.summaries.job(agent, step=r, trigger=trigger, items=items, previous=previous, strategy=strategy,
                                focus=focus, max_tokens=cap, max_chars=chars, tier_tokens=tier[0],
                                tier_chars=tier[1])
        return await ctx.summaries.make(job)

    async def _maybe_manual_summary(self, agent: ResolvedAgent, r: int, phase: Phase) -> None:
        ctx = self.ctx
        requested, focus = ctx.summaries.take(agent.id)
        upto = ctx.summaries.take_from(agent.id)
        if not requested:
            return
        before = barrier(r, phase)
        if not ctx.index.perspective_items(agent.id, before):
            ctx.emit(Warning_(message=f"{agent.id} has no history to summarize yet", agent_id=agent.id))
            return
        if upto is not None:
            latest = ctx.index.summary_at(agent.id, before)
            if not [c for c in ctx.index.uncovered_items(agent.id, latest, before) if c.round < upto]:
                ctx.emit(Warning_(message=f"nothing to summarize before round {upto} for {agent.id}: its summary "
                                          "already covers it", agent_id=agent.id))
                return
            await self._summarize(agent, r, "manual", phase, focus, upto)
            return
        latest = ctx.index.summary_at(agent.id, before)
        if (focus is None and latest is not None and latest.round == r
                and not ctx.index.uncovered_items(agent.id, latest, before)):
            # The automatic summary of this round already covers everything: not made twice.
            ctx.emit(Warning_(message=f"{agent.id}'s summary from round {r} already covers its whole history; "
                                      "not summarizing again", agent_id=agent.id))
            return
        await self._summarize(agent, r, "manual", phase, focus)

    async def before_synthesis(self) -> None:
        """Requests that came after an agent's last call still get their summary (it is what
        the user asked to see), made before the judge's synthesis."""
        ctx = self.ctx
        r = max(1, ctx.state.current_round)
        for agent in ctx.agents:
            if agent.id in ctx.summaries.pending:
                await self._maybe_manual_summary(agent, r, "synthesis")

    # ------------------------------------------------------------------ the judge's material

    def _final_step(self) -> int | None:
        rounds = [rnd.number for rnd in self.ctx.state.rounds if rnd.contributions]
        return max(rounds) if rounds else None

    def synthesis_input(self) -> SynthesisInput | None:
        ctx = self.ctx
        final = self._final_step()
        if final is None:
            return None
        items = [c for c in ctx.state.round(final).contributions if c.type in ("proposal", "refinement")]
        items.sort(key=ctx.index.key)
        return SynthesisInput(final, None, [c.id for c in items])

    def score_input(self, step: int) -> SynthesisInput:
        ctx = self.ctx
        items = sorted((c for c in ctx.state.round(step).contributions if c.type == "refinement"),
                       key=ctx.index.key)
        return SynthesisInput(step, None, [c.id for c in items])

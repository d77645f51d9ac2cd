"""`simultaneous` (Du et al. 2023, "Improving Factuality and Reasoning in Language Models
through Multiagent Debate"): each round every agent answers in parallel, having read its
own previous answer and every other agent's previous-round answer (or, with `debate.topology`,
only those of the agents it reads: see `topology.py`); after the last round
the judge synthesizes from the final answers.

The view is bounded by construction (one round back). When the previous answers do not
fit the budget, each is replaced by a summary of it (rule-based, per agent, no extra
call), recorded in the view so `moot context` shows exactly what was sent.

With `debate.final = "majority"` the majority of the last round's answers is the final answer
(what Du et al. report; no judge call, ties broken by agent order and said so).
"""

from __future__ import annotations

from functools import partial

from ..config import ResolvedAgent
from ..context.rule_based import SourceItem, summarize_rule_based
from ..context.view import ViewTooLarge
from ..engine.windows import reply_floor
from ..models.state import Contribution, ViewRecord
from ..models.terms import Phase
from ..storage.state import find_contribution
from .base import DebateProtocol, SynthesisInput
from .judging import converged_after_phase
from .majority import conclude_by_vote
from .topology import most_read, reads


class SimultaneousProtocol(DebateProtocol):
    name = "simultaneous"
    task_kinds = ("answer", "summarize", "clarify")
    opening_phase = "answer"

    def opening_params(self, agent: ResolvedAgent) -> dict[str, object]:
        return {"round": 1, "total_rounds": self.total_steps, "role": agent.role}

    def largest_views(self, agent: ResolvedAgent) -> list[tuple[Phase, dict[str, object], int]]:
        """From round 2 an answer quotes every agent's previous answer."""
        if self.total_steps < 2:
            return []
        quotes = most_read(len(self.ctx.agents), self.ctx.settings.topology) + 1  # and its own
        return [("answer", {"round": 2, "total_rounds": self.total_steps, "role": agent.role}, quotes)]

    async def run(self) -> None:
        ctx = self.ctx
        total = self.total_steps
        for r in self.steps():
            await ctx.phase(r, "answer", partial(self._answers, r))
            if ctx.settings.termination == "convergence" and r < total:
                if await converged_after_phase(ctx, r, self.score_input(r)):
                    return

    async def _answers(self, r: int) -> None:
        ctx = self.ctx
        everyone = self._round_answers(r - 1) if r > 1 else []
        order = [a.id for a in ctx.agents]

        async def one(agent: ResolvedAgent) -> None:
            if find_contribution(ctx.state, r, agent.id, "answer"):
                return
            seen = reads(order, agent.id, ctx.settings.topology)  # its own, and those the topology lets it read
            previous = [c for c in everyone if c.agent_id == agent.id or c.agent_id in seen]
            own = next((c for c in previous if c.agent_id == agent.id), None)
            record = ctx.record(agent, r, "answer", task_ids=[c.id for c in previous],
                                params={"round": r, "total_rounds": self.total_steps, "role": agent.role,
                                        **({"own_answer_id": own.id} if own else {})})
            self._fit(agent, record, previous)
            # Its answers from before the previous round are in no view: recall brings them back.
            older = ctx.index.perspective_items(agent.id, (r - 1, 0))
            result = await ctx.unless_failed(
                agent, f"answer in round {r}",
                ctx.call(agent, record, recall=ctx.perspective_recall(agent, older, ("answer",))))
            if result is not None:
                ctx.add_contribution(agent, r, "answer", result)

        await ctx.gather([one(a) for a in ctx.agents])

    def _round_answers(self, r: int) -> list[Contribution]:
        ctx = self.ctx
        if r < 1 or r > ctx.state.round_count:
            return []
        return sorted((c for c in ctx.state.round(r).contributions if c.type == "answer"), key=ctx.index.key)

    def _fit(self, agent: ResolvedAgent, record: ViewRecord, previous: list[Contribution]) -> None:
        """Over budget with the answers verbatim: quote a summary of each instead."""
        if not previous:
            return
        fit = self.ctx.engine.fit(agent)
        budget = fit.input_budget
        scratch = record.model_copy(deep=True)
        try:
            self.ctx.engine.builder.build(scratch, [], budget, fit.stretch(reply_floor("answer", fit.max_tokens)))
        except ViewTooLarge:
            pass  # briefs are the most that can be done; the call itself says what does not fit
        if "quote_limit" not in scratch.task_params:
            return  # fits verbatim
        share = max(64, scratch.tokens.total // max(1, len(previous) + 1))
        share = max(64, min(share, (budget - (scratch.tokens.total - scratch.tokens.task)) // (len(previous) + 1)))
        for c in previous:
            record.inline[f"brief:{c.id}"] = summarize_rule_based(
                [SourceItem(f"{self.ctx.index.name(c.agent_id)} · round {c.round} answer", c.content)],
                max_chars=share * 4, max_tokens=share, model=record.model)

    def synthesis_input(self) -> SynthesisInput | None:
        ctx = self.ctx
        rounds = [rnd.number for rnd in ctx.state.rounds if any(c.type == "answer" for c in rnd.contributions)]
        if not rounds:
            return None
        final = max(rounds)
        return SynthesisInput(final, None, [c.id for c in self._round_answers(final)])

    async def conclude(self, material: SynthesisInput) -> bool:
        if self.ctx.settings.final != "majority":
            return False
        conclude_by_vote(self.ctx, [self.ctx.index.contributions[i] for i in material.contribution_ids],
                         by="majority")
        return True

    def score_input(self, step: int) -> SynthesisInput:
        return SynthesisInput(step, None, [c.id for c in self._round_answers(step)])

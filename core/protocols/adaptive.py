"""`adaptive`: spend calls only where the answers disagree.

Answers are drawn independently, `debate.adaptive.batch` at a time, across the seats (the agents
cycled as `vote` cycles them, up to `max_samples`). After each draw a stopping rule looks at the
answers so far:

- **The rule.** The answers are categorical draws from an unknown distribution over answers. Its
  posterior is a Dirichlet with a Jeffreys prior (0.5) on each distinct answer seen and on one more
  category standing for every answer not seen yet; unparsable answers count for nothing. The
  rule asks for the posterior probability that the leading answer (the majority; a tie goes to
  the tied answer given first in agent order) is the most likely answer of all, estimated from
  a fixed number of draws with a random generator seeded by the counts (the same answers always
  give the same probability). It stops when that probability reaches `threshold` (default 0.9):
  two agreeing answers give 0.92, three against one 0.82, five against one 0.95.
- **Not settled.** Drawing goes on until `max_samples` answers are in; then, if still not settled,
  the agents whose answers disagree debate: those whose answer differs from a clear leader's
  (one held by more than one agent and by more than any other answer), or every agent that
  answered when there is no clear leader. Each sees its own answer and one answer for each other
  distinct answer, with its reasoning, anonymized ("Answer A", "Answer B"…, no author's name),
  and answers again; the others keep theirs. With `debate.topology` (`ring`, `star`) an agent
  reads only the answers of the agents it is linked to among those that answered. The rule is checked after each round (over each
  agent's latest answer), up to `max_rounds`.
- **The final answer** is the majority of the latest answers, a tie broken as `vote` breaks it.

Each check is an `AdaptiveDecided` event: what was decided and why, the counts, the posterior and
what the step cost, so a question whose first answers agree visibly costs `batch` calls.
Resuming repeats no decision: a round whose decision is recorded is not run again.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from functools import partial
from typing import ClassVar, Literal

from ..config import ResolvedAgent
from ..events import AdaptiveDecided, RoundStarted
from ..models.config import AgentConfig, MootConfig
from ..models.state import AdaptiveDecision, Contribution
from ..models.terms import Phase, ProtocolName
from ..storage.state import find_contribution
from .base import DebateProtocol, SynthesisInput
from .majority import conclude_by_vote, tally
from .topology import most_read, reads
from .vote import cycled_seats

PRIOR = 0.5
"""The Dirichlet prior on each category (Jeffreys)."""
DRAWS = 20_000
"""Posterior draws behind each probability (its standard error is under 0.004)."""


def leader_posterior(counts: Mapping[str, int], leader: str | None) -> float:
    """P(the leader is the most likely answer) under the Dirichlet posterior described above."""
    if leader is None or leader not in counts:
        return 0.0
    names = sorted(counts)  # the same counts in any order give the same draws
    alphas = [PRIOR + counts[n] for n in names] + [PRIOR]  # the last: every answer not seen yet
    li = names.index(leader)
    rng = random.Random("adaptive:" + json.dumps(sorted(counts.items())))
    wins = 0
    for _ in range(DRAWS):
        g = [rng.gammavariate(a, 1.0) for a in alphas]
        wins += g[li] >= max(g)
    return round(wins / DRAWS, 4)


class AdaptiveProtocol(DebateProtocol):
    name: ClassVar[ProtocolName] = "adaptive"
    task_kinds: ClassVar[tuple[str, ...]] = ("solo", "answer", "summarize", "clarify")
    uses_judge = False
    opening_phase: ClassVar[Phase] = "answer"
    opening_kind: ClassVar[str | None] = "solo"

    @classmethod
    def seats(cls, config: MootConfig) -> list[AgentConfig]:
        return cycled_seats(config, config.debate.adaptive.max_samples)

    def opening_params(self, agent: ResolvedAgent) -> dict[str, object]:
        return {"round": 1, "total_rounds": 1, "role": agent.role}

    def largest_views(self, agent: ResolvedAgent) -> list[tuple[Phase, dict[str, object], int]]:
        """A debate round quotes one answer for each distinct answer besides the agent's own."""
        cfg = self.ctx.settings.adaptive
        if cfg.max_rounds < 1 or len(self.ctx.agents) < 2:
            return []
        return [("answer", {"round": 2, "total_rounds": cfg.max_rounds + 1, "role": agent.role},
                 most_read(len(self.ctx.agents), self.ctx.settings.topology))]

    @property
    def total_steps(self) -> int:
        """The most rounds it can take: every draw, then every debate round."""
        cfg = self.ctx.settings.adaptive
        return -(-len(self.ctx.agents) // cfg.batch) + cfg.max_rounds

    async def run(self) -> None:
        ctx = self.ctx
        batch = ctx.settings.adaptive.batch
        decided = {d.round: d for d in ctx.state.adaptive}
        r, step, drawn = 1, "draw", 0
        debaters: list[ResolvedAgent] = []
        while True:
            if step == "draw":
                seats = ctx.agents[drawn:drawn + batch]
                drawn += len(seats)
                body = partial(self._draw, r, seats)
            else:
                body = partial(self._debate, r, debaters)
            if r not in decided:
                if ctx.state.current_round < r:
                    ctx.emit(RoundStarted(round=r))
                await ctx.phase(r, "answer", body)
            d = decided.get(r) or self._decide(r, "draw" if step == "draw" else "debate", drawn)
            if d.decision == "stop":
                return
            debaters = [ctx.agent(a) for a in d.debaters]
            step, r = d.decision, r + 1

    async def _draw(self, r: int, seats: Sequence[ResolvedAgent]) -> None:
        await self.ctx.gather([self._one(r, agent) for agent in seats])

    async def _debate(self, r: int, debaters: Sequence[ResolvedAgent]) -> None:
        positions = self.positions()
        keys = tally(self.ctx, positions)[0].answers
        debate_round = r - sum(1 for d in self.ctx.state.adaptive if d.step == "draw") + 1
        await self.ctx.gather([self._one(r, agent, positions, keys, debate_round) for agent in debaters])

    async def _one(self, r: int, agent: ResolvedAgent, positions: Sequence[Contribution] = (),
                   keys: Mapping[str, str | None] | None = None, debate_round: int = 1) -> None:
        """One answer: drawn from the problem alone, or (`keys`) after reading the distinct answers."""
        ctx = self.ctx
        if find_contribution(ctx.state, r, agent.id, "answer"):
            return
        await ctx.gate.wait()
        if keys is None:
            record = ctx.record(agent, r, "answer", params={"round": 1, "total_rounds": 1, "role": agent.role})
            record.task_key = f"{agent.id}/solo"
        else:
            own = next((c for c in positions if c.agent_id == agent.id), None)
            mine = keys.get(agent.id)
            seen = reads([c.agent_id for c in positions], agent.id, ctx.settings.topology)
            shown: dict[str, Contribution] = {}  # one answer for each other distinct answer it reads, in agent order
            for c in positions:
                key = keys.get(c.agent_id)
                if c.agent_id in seen and key is not None and key != mine:
                    shown.setdefault(key, c)
            others = list(shown.values())
            record = ctx.record(agent, r, "answer", task_ids=[c.id for c in others],
                                params={"round": debate_round, "total_rounds": ctx.settings.adaptive.max_rounds + 1,
                                        "role": agent.role, "anonymous": True,
                                        **({"own_answer_id": own.id} if own else {})})
        result = await ctx.unless_failed(agent, f"answer in round {r}", ctx.call(agent, record))
        if result is not None:
            ctx.add_contribution(agent, r, "answer", result)

    def positions(self) -> list[Contribution]:
        """Each agent's latest answer, in agent order."""
        latest: dict[str, Contribution] = {}
        for rnd in self.ctx.state.rounds:
            for c in rnd.contributions:
                if c.type == "answer":
                    latest[c.agent_id] = c
        return sorted(latest.values(), key=lambda c: self.ctx.index.rank(c.agent_id))

    def _decide(self, r: int, step: Literal["draw", "debate"], drawn: int) -> AdaptiveDecision:
        """Check the stopping rule after round `r`, and say what comes next (an event)."""
        ctx = self.ctx
        cfg = ctx.settings.adaptive
        positions = self.positions()
        votes = tally(ctx, positions)[0]
        if votes.weighting == "confidence":  # the rule counts plain votes; the final answer may be weighted
            votes = votes.model_copy(update={"winner": votes.plain_winner})
        post = leader_posterior(votes.counts, votes.winner)
        mine = [c for c in ctx.state.round(r).contributions if c.type == "answer"] if r <= ctx.state.round_count else []
        debates_done = sum(1 for d in ctx.state.adaptive if d.step == "debate") + (step == "debate")
        n = len(positions)
        unparsed = sum(1 for v in votes.answers.values() if v is None)
        said = f"P(leader is the most likely answer) = {post:.3f}"
        decision: Literal["stop", "draw", "debate"]
        debaters: list[str] = []
        if votes.winner is not None and post >= cfg.threshold:
            decision, reason = "stop", f"settled: {said} ≥ {cfg.threshold:g}; the majority stands"
        elif step == "draw" and drawn < len(ctx.agents):
            more = min(cfg.batch, len(ctx.agents) - drawn)
            decision, reason = "draw", f"not settled: {said} < {cfg.threshold:g}; drawing {more} more"
        elif debates_done < cfg.max_rounds and len(positions) > 1:
            debaters = self._debaters(positions, votes.answers, votes.counts, votes.winner)
            decision = "debate"
            who = (f"the {len(debaters)} agents that answered" if len(debaters) == n else
                   f"the {len(debaters)} agent{'s' if len(debaters) != 1 else ''} whose answer differs from the "
                   "leader's")
            reason = (f"not settled after {n} answers: {said} < {cfg.threshold:g}; {who} debate "
                      f"(round {debates_done + 1} of at most {cfg.max_rounds})")
        else:
            cap = "debate rounds" if step == "debate" or cfg.max_rounds == 0 else "answers"
            decision, reason = "stop", f"cap: {said} < {cfg.threshold:g} and no {cap} left; the majority stands"
        d = AdaptiveDecision(
            round=r, step=step, decision=decision, reason=reason, counts=votes.counts, unparsed=unparsed,
            leader=votes.winner, posterior=post, threshold=cfg.threshold, calls=len(mine),
            tokens=sum(c.metadata.prompt_tokens + c.metadata.completion_tokens for c in mine),
            cost_usd=round(sum(c.metadata.cost_usd for c in mine), 8), debaters=debaters)
        ctx.emit(AdaptiveDecided(decision=d))
        return d

    @staticmethod
    def _debaters(positions: Sequence[Contribution], keys: Mapping[str, str | None], counts: Mapping[str, int],
                  leader: str | None) -> list[str]:
        """Who answers again: the agents whose answer differs from a clear leader's (held by more than
        one agent and by more than any other answer); every agent when there is no clear leader."""
        top = counts.get(leader, 0) if leader is not None else 0
        clear = top > 1 and all(n < top for a, n in counts.items() if a != leader)
        return [c.agent_id for c in positions if not clear or keys.get(c.agent_id) != leader]

    def synthesis_input(self) -> SynthesisInput | None:
        found = self.positions()
        if not found:
            return None
        return SynthesisInput(max(c.round for c in found), None, [c.id for c in found])

    async def conclude(self, material: SynthesisInput) -> bool:
        conclude_by_vote(self.ctx, self.positions(), by="majority")
        return True

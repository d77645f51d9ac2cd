"""`vote` and `single`: the baselines a debate has to beat.

`vote` (self-consistency; Wang et al. 2022): N agents answer the problem independently, in
parallel, from the problem alone; the answer most of them give wins, with no judge call.
`--samples N` (`debate.samples`) sets N: the configured agents are cycled (`generalist`, `kiss`,
`generalist-s2`, `kiss-s2`, …), so a vote can cost what a debate costs. `single` is one agent answering
once: the first configured agent, its answer the final one.
"""

from __future__ import annotations

from typing import ClassVar

from ..config import ResolvedAgent
from ..events import RoundStarted
from ..models.config import AgentConfig, MootConfig
from ..models.provider_kinds import is_person
from ..models.state import Contribution
from ..models.terms import Phase, ProtocolName
from ..storage.state import find_contribution
from .base import DebateProtocol, SynthesisInput
from .majority import conclude_by_vote


def cycled_seats(config: MootConfig, n: int) -> list[AgentConfig]:
    """`n` seats: the enabled agents, then copies of the model agents cycled, each copy with its
    own id and seed (`generalist-s2`), so every sample is a draw of its own."""
    agents = config.active_agents
    seats: list[AgentConfig] = []
    taken = {a.id for a in config.agents} | {config.judge.id}
    models = [a for a in agents if not is_person(a.provider)]  # a person answers once: more samples are models'
    for i in range(n):
        if i < len(agents):
            seats.append(agents[i])
            continue
        if not models:
            break
        base = models[(i - len(agents)) % len(models)]
        new_id = f"{base.id}-s{(i - len(agents)) // len(models) + 2}"  # its second sample: generalist-s2
        while new_id in taken:
            new_id += "x"
        taken.add(new_id)
        seed = None if base.seed is None else (base.seed + 1000 * (i // len(agents))) % 2**31
        seats.append(base.model_copy(update={"id": new_id, "name": None, "seed": seed}))
    return seats


class VoteProtocol(DebateProtocol):
    name: ClassVar[ProtocolName] = "vote"
    task_kinds: ClassVar[tuple[str, ...]] = ("solo", "summarize", "clarify")
    uses_judge = False
    opening_phase: ClassVar[Phase] = "answer"
    opening_kind: ClassVar[str | None] = "solo"

    def opening_params(self, agent: ResolvedAgent) -> dict[str, object]:
        return {"round": 1, "total_rounds": 1, "role": agent.role}

    @classmethod
    def seats(cls, config: MootConfig) -> list[AgentConfig]:
        return cycled_seats(config, config.debate.samples or len(config.active_agents))

    @property
    def total_steps(self) -> int:
        return 1

    async def run(self) -> None:
        ctx = self.ctx
        if ctx.state.current_round < 1:
            ctx.emit(RoundStarted(round=1))
        await ctx.phase(1, "answer", self._answers)

    async def _answers(self) -> None:
        await self.ctx.gather([self.answer(a) for a in self.ctx.agents])

    async def answer(self, agent: ResolvedAgent) -> None:
        """One independent answer from the problem alone (skipped when recorded: resume)."""
        ctx = self.ctx
        if find_contribution(ctx.state, 1, agent.id, "answer"):
            return
        await ctx.gate.wait()
        record = ctx.record(agent, 1, "answer", params={"round": 1, "total_rounds": 1, "role": agent.role})
        record.task_key = f"{agent.id}/solo"
        result = await ctx.unless_failed(agent, "answer", ctx.call(agent, record))
        if result is not None:
            ctx.add_contribution(agent, 1, "answer", result)

    def answers(self) -> list[Contribution]:
        ctx = self.ctx
        if not ctx.state.rounds:
            return []
        return sorted((c for c in ctx.state.round(1).contributions if c.type == "answer"), key=ctx.index.key)

    def synthesis_input(self) -> SynthesisInput | None:
        found = self.answers()
        return SynthesisInput(1, None, [c.id for c in found]) if found else None

    async def conclude(self, material: SynthesisInput) -> bool:
        conclude_by_vote(self.ctx, self.answers(), by="vote")
        return True


class SingleProtocol(VoteProtocol):
    name: ClassVar[ProtocolName] = "single"

    @classmethod
    def seats(cls, config: MootConfig) -> list[AgentConfig]:
        return config.active_agents[:1]

    async def conclude(self, material: SynthesisInput) -> bool:
        conclude_by_vote(self.ctx, self.answers(), by=self.ctx.agents[0].id)
        return True

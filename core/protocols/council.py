"""`council`, the "LLM council" pattern: every agent answers the problem independently; every
agent then reads the others' answers, anonymized as "Response A", "Response B"…, evaluates and
ranks them; the judge, as chairman, decides the final answer from the answers, the rankings and
their aggregate (each author's mean position, recorded with the solution).

Each ranker sees the others' answers in its own rotation of one canonical order, so no answer
always sits first (position bias) and the order is still a function of the inputs: the labels
are the order of the ranking call's quoted contributions, which its view record keeps.
"""

from __future__ import annotations

import re
from typing import ClassVar

from ..config import ResolvedAgent
from ..errors import ProviderError
from ..events import Warning_
from ..models.config import AgentConfig, MootConfig
from ..models.state import DebateState, Tally
from ..models.terms import Phase, ProtocolName
from ..storage.state import find_contribution
from .base import SynthesisInput
from .majority import tally
from .vote import VoteProtocol

_HEADER = re.compile(r"final\s+ranking\s*:?", re.IGNORECASE)
_LABEL = re.compile(r"Response\s+([A-Z])\b")
_NUMBERED = re.compile(r"^\s*\d+\s*[.):]\s*\**\s*Response\s+([A-Z])\b", re.MULTILINE)


def parse_ranking(text: str, n: int) -> list[int] | None:
    """The positions (0 = "Response A") from best to worst, as the ranker wrote them after
    `FINAL RANKING:` (else its numbered `1. Response X` lines); None when neither is there."""
    valid = {chr(65 + i) for i in range(n)}
    heads = list(_HEADER.finditer(text))
    found = _LABEL.findall(text[heads[-1].end():]) if heads else _NUMBERED.findall(text)
    order = [ord(x) - 65 for x in dict.fromkeys(f for f in found if f in valid)]
    return order or None


def rankings(state: DebateState) -> tuple[dict[str, list[float]], int]:
    """Author id → the positions (1 = best) the other agents gave its answer; and how many
    rankings could be read. The labels come from each ranking call's record."""
    views = {v.call_id: v for rnd in state.rounds for v in rnd.calls if v.phase == "rank"}
    answers = {c.id: c for rnd in state.rounds for c in rnd.contributions if c.type == "answer"}
    positions: dict[str, list[float]] = {}
    parsed = 0
    for rnd in state.rounds:
        for c in rnd.contributions:
            view = views.get(c.metadata.call_id or "") if c.type == "ranking" else None
            if view is None:
                continue
            order = parse_ranking(c.content, len(view.task_contribution_ids))
            if order is None:
                continue
            parsed += 1
            for place, k in enumerate(order, start=1):
                author = answers[view.task_contribution_ids[k]].agent_id
                positions.setdefault(author, []).append(float(place))
    return positions, parsed


class CouncilProtocol(VoteProtocol):
    name: ClassVar[ProtocolName] = "council"
    task_kinds: ClassVar[tuple[str, ...]] = ("solo", "rank", "summarize", "clarify")
    uses_judge = True

    @classmethod
    def seats(cls, config: MootConfig) -> list[AgentConfig]:
        return config.active_agents  # every enabled agent; `samples` is the vote's

    def largest_views(self, agent: ResolvedAgent) -> list[tuple[Phase, dict[str, object], int]]:
        """A ranking quotes every other agent's answer."""
        return [("rank", {}, len(self.ctx.agents) - 1)] if len(self.ctx.agents) > 1 else []

    async def run(self) -> None:
        await super().run()
        await self.ctx.phase(1, "rank", self._rankings)

    async def _rankings(self) -> None:
        ctx = self.ctx
        answers = self.answers()

        async def one(i: int, agent: ResolvedAgent) -> None:
            if find_contribution(ctx.state, 1, agent.id, "ranking"):
                return
            others = [c for c in answers if c.agent_id != agent.id]
            if not others:
                return
            shift = i % len(others)
            shown = others[shift:] + others[:shift]
            await ctx.gate.wait()
            record = ctx.record(agent, 1, "rank", task_ids=[c.id for c in shown])
            try:
                result = await ctx.call(agent, record)
            except ProviderError as exc:  # the chairman decides without this ranking
                ctx.emit(Warning_(message=f"{agent.id} ranking failed and was skipped: {exc}", agent_id=agent.id))
                return
            ctx.add_contribution(agent, 1, "ranking", result)

        await ctx.gather([one(i, a) for i, a in enumerate(ctx.agents)])

    def _tally(self) -> Tally:
        positions, parsed = rankings(self.ctx.state)
        ranks = {a: sum(p) / len(p) for a, p in positions.items()}
        ranks = dict(sorted(ranks.items(), key=lambda kv: (kv[1], self.ctx.index.rank(kv[0]))))
        votes, _ = tally(self.ctx, self.answers())
        return votes.model_copy(update={"ranks": ranks, "rankings_parsed": parsed, "winner": None, "tied": [],
                                        "kind": "council",
                                        "rule": "the chairman (judge) decides; ranks are mean positions"})

    def synthesis_input(self) -> SynthesisInput | None:
        ctx = self.ctx
        answers = self.answers()
        if not answers:
            return None
        ranked = sorted((c for c in ctx.state.round(1).contributions if c.type == "ranking"), key=ctx.index.key)
        t = self._tally()
        lines = ["### Aggregate ranking (mean position in the other agents' rankings; 1 = best)", ""]
        lines += [f"{k}. {ctx.index.name(a)}: {r:.2f} (ranked by {len(rankings(ctx.state)[0][a])})"
                  for k, (a, r) in enumerate(t.ranks.items(), start=1)] or ["(no ranking could be read)"]
        return SynthesisInput(1, None, [c.id for c in [*answers, *ranked]], inline={"ranking": "\n".join(lines)},
                              tally=t)

    async def conclude(self, material: SynthesisInput) -> bool:
        return False  # the chairman (the judge) decides

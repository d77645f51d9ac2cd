"""Clarifications before the debate: agents ask, the user answers (optional follow-up rounds).

Resumable without repeating a recorded call: questions that were asked (recorded by
`clarifications_asked`) are not asked again after a crash; only their answers are
gathered again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..config import ResolvedAgent
from ..errors import ProviderError
from ..events import ClarificationsAnswered, ClarificationsAsked, Warning_
from ..judge import parse_json_object
from ..models.state import CallMetadata, Clarification
from ..providers.base import JsonAnswer
from ..safety.secrets import redact
from .base import DebateContext

Clarifier = Callable[[list[Clarification]], Awaitable[list[str]]]
"""Asks the user: gets the questions, returns one answer per question ("" = no answer)."""

QUESTIONS_SCHEMA = JsonAnswer("questions", {
    "type": "object",
    # Bounded like the judge's lists (see judging.py): at most clarifications_max_per_agent's
    # ceiling, each as long as questions_in keeps.
    "properties": {"questions": {"type": "array", "items": {"type": "string", "maxLength": 500}, "maxItems": 20}},
    "required": ["questions"],
})


def questions_in(text: str, limit: int) -> list[str]:
    """Questions from a clarify answer: JSON {"questions": [...]}, tolerant of strings or objects."""
    obj = parse_json_object(text)
    raw = obj.get("questions", []) if obj else []
    out = []
    for q in raw if isinstance(raw, list) else []:
        if isinstance(q, dict):
            q = q.get("question") or q.get("text") or ""
        if isinstance(q, str) and q.strip():
            out.append(q.strip()[:500])
    return out[:limit]


async def clarify(ctx: DebateContext, clarifier: Clarifier | None) -> None:
    """Agents ask up to N questions each; the user answers; optional follow-up rounds."""
    settings = ctx.settings
    limit = settings.clarifications_max_per_agent
    answered_rounds = {c.round for c in ctx.state.clarifications}
    start = 1 + max(answered_rounds, default=0)
    for cr in range(start, settings.clarification_rounds + 2):
        asked = list(ctx.state.pending_questions) if ctx.state.pending_round == cr else None
        usage = CallMetadata()
        per_agent: dict[str, CallMetadata] = {}
        if asked is None:
            asked = []

            async def ask(agent: ResolvedAgent, cr: int = cr, usage: CallMetadata = usage,
                          per_agent: dict[str, CallMetadata] = per_agent) -> list[Clarification]:
                record = ctx.record(agent, 0, "clarify", params={"max_questions": limit})
                try:
                    result = await ctx.call(agent, record, json_answer=QUESTIONS_SCHEMA,
                                            extra={"max_questions": limit})
                except ProviderError as exc:
                    ctx.emit(Warning_(message=f"{agent.id} could not ask questions: {exc}", agent_id=agent.id))
                    return []
                per_agent[agent.id] = result.meta
                usage.prompt_tokens += result.meta.prompt_tokens
                usage.completion_tokens += result.meta.completion_tokens
                usage.cost_usd += result.meta.cost_usd
                return [Clarification(agent_id=agent.id, question=q, round=cr)
                        for q in questions_in(result.completion.content, limit)]

            per: dict[str, list[Clarification]] = {}  # listed in agent order, whatever order calls finish in

            async def one(agent: ResolvedAgent, per: dict[str, list[Clarification]] = per) -> None:
                per[agent.id] = await ask(agent)

            await ctx.gather([one(a) for a in ctx.agents if not a.is_person])  # people answer, not ask
            for a in ctx.agents:
                asked.extend(per.get(a.id, []))
            if asked:
                ctx.emit(ClarificationsAsked(round=cr, questions=asked, usage=usage, per_agent=per_agent))
                usage, per_agent = CallMetadata(), {}  # counted with the questions
        last = cr == settings.clarification_rounds + 1 or not asked
        if asked:
            answers = await _answers(ctx, asked, clarifier)
            # copies: the asked event may not be on disk yet and must keep its blanks
            asked = [c.model_copy(update={"answer": redact(a.strip(), ctx.engine.secrets)})
                     for c, a in zip(asked, answers)]
        ctx.emit(ClarificationsAnswered(round=cr, answers=asked, done=last, usage=usage, per_agent=per_agent))
        if last:
            return


async def _answers(ctx: DebateContext, questions: list[Clarification], clarifier: Clarifier | None) -> list[str]:
    if clarifier is None:
        ctx.emit(Warning_(message="no one to answer the clarifying questions; going on without answers"))
        return [""] * len(questions)
    answers = list(await clarifier(questions))
    return (answers + [""] * len(questions))[: len(questions)]

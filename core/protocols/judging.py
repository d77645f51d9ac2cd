"""The judge's two steps, the same for every protocol: a convergence score and the final synthesis."""

from __future__ import annotations

from ..errors import ProviderError
from ..events import Converged, ConvergenceScored, SynthesisCompleted, Warning_
from ..judge import parse_confidence, parse_json_object, parse_solution
from ..models.state import ConvergenceScore
from ..providers.base import JsonAnswer
from .base import DebateAborted, DebateContext, SynthesisInput

# Bounded lists and list items: a small model constrained by a grammar (llama.cpp turns the
# schema into one) otherwise repeats one item until its output limit and never closes the JSON.
# The real-model run showed it: `"tradeoffs": ["100", "100", …` for 1,110 tokens, not parsed.
_POINTS = {"type": "array", "items": {"type": "string", "maxLength": 400}, "maxItems": 8}

SOLUTION_SCHEMA = JsonAnswer("solution", {
    "type": "object",
    "properties": {
        "solution": {"type": "string"},
        "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
        "tradeoffs": _POINTS,
        "recommendations": _POINTS,
        "unresolved": _POINTS,
    },
    "required": ["solution", "confidence", "tradeoffs", "recommendations", "unresolved"],
})
SCORE_SCHEMA = JsonAnswer("convergence", {
    "type": "object",
    "properties": {"confidence": {"type": "integer", "minimum": 0, "maximum": 100},
                   "reason": {"type": "string", "maxLength": 600}},
    "required": ["confidence", "reason"],
})


async def converged_after_phase(ctx: DebateContext, step: int, material: SynthesisInput) -> bool:
    """`converged`, run as the step's own `score` phase (rounds and simultaneous rounds)."""
    hit = False

    async def score() -> None:
        nonlocal hit
        hit = await converged(ctx, step, material)

    await ctx.phase(step, "score", score)
    return hit


async def converged(ctx: DebateContext, step: int, material: SynthesisInput) -> bool:
    """The judge scores how converged the debate is after `step`; True at or above the threshold.

    A recorded score is not asked again (resume). A score that cannot be parsed is "no
    score": recorded with confidence null and the raw answer, never counted as converged."""
    score = next((c for c in ctx.state.convergence if c.round == step), None)
    if score is None:
        j = ctx.judge
        record = ctx.record(j, step, "score", task_ids=material.contribution_ids,
                            params={"transcript": True} if material.transcript else None)
        record.summary_id = material.summary_id
        try:
            result = await ctx.call(j, record, json_answer=SCORE_SCHEMA)
        except ProviderError as exc:
            ctx.emit(Warning_(message=f"convergence check failed: {exc}; continuing", agent_id=j.id))
            return False
        obj = parse_json_object(result.completion.content) or {}
        confidence = parse_confidence(obj.get("confidence"))
        reason = obj.get("reason")
        score = ConvergenceScore(round=step, confidence=confidence,
                                 reason=str(reason)[:300] if isinstance(reason, str) else "",
                                 raw=None if confidence is not None else result.completion.content[:2000])
        ctx.emit(ConvergenceScored(score=score, usage=result.meta))
        if confidence is None:
            ctx.emit(Warning_(message=f"the judge's convergence score after {step} was not parsed; "
                                      "going on (an unknown score never counts as converged)", agent_id=j.id))
    threshold = ctx.settings.convergence_threshold
    if score.confidence is not None and score.confidence >= threshold:
        ctx.emit(Converged(round=step, confidence=score.confidence, threshold=threshold))
        return True
    return False


async def synthesize(ctx: DebateContext, material: SynthesisInput) -> None:
    """The judge's final answer, from the protocol's material (summarized first when it is long)."""
    j = ctx.judge
    summary_id = material.summary_id
    ids = material.contribution_ids
    cfg = j.summarization
    if not material.transcript and summary_id is None and cfg.enabled and ids:
        final = [ctx.index.contributions[i] for i in ids]
        if sum(len(c.content) for c in final) >= cfg.threshold:
            summary = ctx.state.judge_summary
            if summary is None or summary.round != material.step:
                # The summary is the synthesis view's whole material: it may fill that view's room.
                cap = ctx.summaries.reader_cap(j, "synthesis", "synthesize", share=0.9)
                job = ctx.summaries.job(j, step=material.step, trigger="judge", items=final, strategy="fresh",
                                        judge=True, max_tokens=min(cfg.max_summary_tokens, cap))
                summary = await ctx.summaries.make(job)
            summary_id, ids = summary.id, []
    record = ctx.record(j, material.step, "synthesis", task_ids=ids,
                        params={"transcript": True} if material.transcript else None)
    record.summary_id = summary_id
    record.inline.update(material.inline or {})
    try:
        result = await ctx.call(j, record, json_answer=SOLUTION_SCHEMA,
                                extra={"agents": [a.role for a in ctx.agents]})
    except ProviderError as exc:
        raise DebateAborted(f"judge synthesis failed: {exc}") from None
    solution = parse_solution(result.completion.content)
    solution.synthesized_by = j.id
    solution.metadata = result.meta
    solution.tally = material.tally
    if not solution.parsed:
        ctx.emit(Warning_(message="the judge's answer was not JSON; kept it as the solution text", agent_id=j.id))
    ctx.emit(SynthesisCompleted(solution=solution))

"""A final answer by vote, without a judge call: the agents' answers extracted, the majority
kept, a tie broken reproducibly (the tied answer given first in agent order) and said so."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ..events import SynthesisCompleted
from ..models.state import CallMetadata, Contribution, Solution, Tally
from .answers import extract, extract_confidence, majority, normalize_text, weighted_majority
from .base import DebateContext


def free_form_key(text: str) -> str:
    """A free-form reply (no answer format) votes as its whole text, normalized; kept short."""
    return "text#" + hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()[:10]


def tally(ctx: DebateContext, answers: Sequence[Contribution]) -> tuple[Tally, Contribution | None]:
    """The vote over `answers` (in agent order) and the first reply that gave the winning answer;
    with `debate.weight = "confidence"` the winner is the confidence-weighted one, the plain
    majority kept beside it."""
    fmt = ctx.settings.answer
    extracted = {c.agent_id: extract(c.content, fmt) if fmt is not None else free_form_key(c.content)
                 for c in answers}
    m = majority(list(extracted.values()))
    result = Tally(answers=extracted, counts=m.counts, winner=m.winner, tied=m.tied, rule=m.rule)
    if ctx.settings.weight == "confidence":
        confidences = {c.agent_id: extract_confidence(c.content) for c in answers}
        w = weighted_majority(list(extracted.values()), list(confidences.values()))
        rule = "no agent gave an answer in the asked form"
        if w.winner is not None:
            rule = (f"confidence-weighted: {w.totals[w.winner]:.2f} of {sum(w.totals.values()):.2f}"
                    + (f" (tie of {len(w.tied)}, broken by agent order)" if w.tied else "")
                    + f"; the plain majority is {m.winner} ({m.rule})")
        result = result.model_copy(update={"winner": w.winner, "tied": w.tied, "rule": rule,
                                           "weighting": "confidence", "confidences": confidences,
                                           "weighted": w.totals, "plain_winner": m.winner})
    chosen = next((c for c in answers if result.winner is not None and extracted[c.agent_id] == result.winner), None)
    return result, chosen


def conclude_by_vote(ctx: DebateContext, answers: Sequence[Contribution], *, by: str) -> None:
    """Record the majority as the final solution (no call; `by` names who decided: vote, an agent)."""
    result, chosen = tally(ctx, answers)
    if len(answers) == 1:
        head = ""
    elif ctx.settings.answer is None:
        kept = ctx.index.name(chosen.agent_id) if chosen is not None else "none"
        head = (f"**Vote over {len(answers)} free-form answers** ({len(result.counts)} distinct; {result.rule}): "
                f"the answer kept is {kept}'s.\n\n")
    elif result.winner is None:
        head = f"**No answer in the asked form** from {len(answers)} agents.\n\n"
    else:
        word = "Confidence-weighted majority answer" if result.weighting == "confidence" else "Majority answer"
        head = f"**{word}: {result.winner}** ({result.rule}).\n\n"
    body = chosen.content if chosen is not None else (answers[0].content if answers else "")
    usage = CallMetadata(model=chosen.metadata.model if chosen is not None else "")
    ctx.emit(SynthesisCompleted(solution=Solution(description=head + body, synthesized_by=by, tally=result,
                                                  metadata=usage)))

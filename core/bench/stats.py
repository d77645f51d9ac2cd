"""The table from the rows: accuracy with its standard error, cost per question, answer changes,
and paired comparisons between protocols on the questions both finished.

Paired, because the same questions went through every protocol: McNemar's exact test on the
questions where exactly one of the two was right, and a bootstrap 95% interval of the
difference in accuracy (resampling questions, seeded, so the table is reproducible).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from itertools import combinations

from ..models.base import Model
from .results import AnswerChanges, ResultRow

BOOTSTRAP = 2000


class ProtocolStats(Model):
    n: int
    """Questions with a finished debate (failed or unfinished ones are left out and counted apart)."""
    correct: int
    accuracy: float
    stderr: float
    """Standard error of the proportion, sqrt(p(1-p)/n)."""
    unparsed: int
    """Final answers not in the asked form (counted as wrong)."""
    ties: int
    """Majorities that were ties (broken by agent order)."""
    majority_accuracy: float
    """Accuracy of the majority of the agents' last answers (for judge protocols, beside the judge's)."""
    calls: int
    calls_min: int = 0
    calls_max: int = 0
    """The fewest and most calls one question took (they differ where the calls vary with agreement: `adaptive`)."""
    prompt_tokens: int
    completion_tokens: int
    tokens_per_question: float
    cost_usd: float
    cost_per_question: float
    seconds_per_question: float
    changes: AnswerChanges
    unfinished: int = 0


class Comparison(Model):
    a: str
    b: str
    n: int
    """Questions both protocols finished."""
    a_accuracy: float
    b_accuracy: float
    difference: float
    """a − b."""
    ci_low: float
    ci_high: float
    only_a: int
    """Questions a got right and b wrong."""
    only_b: int
    mcnemar_p: float
    """Two-sided exact McNemar p-value (1.0 when no question split them)."""


def stderr(correct: int, n: int) -> float:
    if n == 0:
        return 0.0
    p = correct / n
    return math.sqrt(p * (1 - p) / n)


def protocol_stats(rows: Sequence[ResultRow], unfinished: int = 0) -> ProtocolStats:
    done = [r for r in rows if r.complete]
    n = len(done)
    correct = sum(r.correct for r in done)
    changes = AnswerChanges()
    for r in done:
        changes.changed += r.changes.changed
        changes.right_to_wrong += r.changes.right_to_wrong
        changes.wrong_to_right += r.changes.wrong_to_right
    tokens = sum(r.prompt_tokens + r.completion_tokens for r in done)
    cost = sum(r.cost_usd for r in done)
    per = max(1, n)
    return ProtocolStats(
        n=n, correct=correct, accuracy=correct / n if n else 0.0, stderr=stderr(correct, n),
        unparsed=sum(r.answer is None for r in done), ties=sum(r.tie and r.decided_by != "judge" for r in done),
        majority_accuracy=sum(r.majority_correct for r in done) / n if n else 0.0,
        calls=sum(r.calls for r in done), calls_min=min((r.calls for r in done), default=0),
        calls_max=max((r.calls for r in done), default=0), prompt_tokens=sum(r.prompt_tokens for r in done),
        completion_tokens=sum(r.completion_tokens for r in done), tokens_per_question=tokens / per,
        cost_usd=round(cost, 8), cost_per_question=cost / per,
        seconds_per_question=sum(r.seconds for r in done) / per, changes=changes, unfinished=unfinished)


def mcnemar_p(only_a: int, only_b: int) -> float:
    """Exact two-sided McNemar: the binomial tail of the smaller discordant count at p = ½."""
    m = only_a + only_b
    if m == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(m, i) for i in range(k + 1)) / 2**m
    return min(1.0, 2 * tail)


def compare(a: str, b: str, rows_a: Sequence[ResultRow], rows_b: Sequence[ResultRow],
            seed: int = 0) -> Comparison | None:
    """a against b on the questions both finished; None when they share none."""
    by_a = {r.id: r.correct for r in rows_a if r.complete}
    by_b = {r.id: r.correct for r in rows_b if r.complete}
    common = sorted(set(by_a) & set(by_b))
    if not common:
        return None
    pairs = [(by_a[q], by_b[q]) for q in common]
    n = len(pairs)
    diffs = [int(x) - int(y) for x, y in pairs]
    rng = random.Random(f"moot-bench-{seed}-{a}-{b}")
    boot = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(BOOTSTRAP))
    only_a = sum(x and not y for x, y in pairs)
    only_b = sum(y and not x for x, y in pairs)
    acc_a, acc_b = sum(x for x, _ in pairs) / n, sum(y for _, y in pairs) / n
    return Comparison(a=a, b=b, n=n, a_accuracy=acc_a, b_accuracy=acc_b, difference=acc_a - acc_b,
                      ci_low=boot[int(0.025 * BOOTSTRAP)], ci_high=boot[int(0.975 * BOOTSTRAP) - 1],
                      only_a=only_a, only_b=only_b, mcnemar_p=mcnemar_p(only_a, only_b))


def comparisons(by_protocol: dict[str, list[ResultRow]]) -> list[Comparison]:
    """Every pair of protocols, in the order they were given."""
    out = []
    for a, b in combinations(by_protocol, 2):
        c = compare(a, b, by_protocol[a], by_protocol[b])
        if c is not None:
            out.append(c)
    return out

"""The table from the rows: accuracy with its standard error, cost per question, answer changes,
and paired comparisons between protocols on the questions both finished.

Paired, because the same questions went through every protocol: McNemar's exact test on the
questions where exactly one of the two was right, and a bootstrap 95% interval of the
difference in accuracy (resampling questions, seeded, so the table is reproducible).

With `--repeat K` every question ran K times (a pair is a question in one run): each protocol's
accuracy in each run and their standard deviation (the spread between runs, beside the standard
error), how many questions gave different answers in different runs, and for each comparison
whether its difference is within noise and how many questions would show it (`questions_needed`).
"""

from __future__ import annotations

import math
import random
import statistics
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
    tokens_per_correct: float | None = None
    """All the tokens spent over the questions answered right (None when none was): what a right answer costs."""
    cost_usd: float
    cost_per_question: float
    seconds_per_question: float
    changes: AnswerChanges
    run_accuracies: list[float] = []
    """`--repeat`: the accuracy of each run, in run order (one run: just the accuracy)."""
    run_sd: float = 0.0
    """The sample standard deviation of `run_accuracies` (0 for one run): the spread between runs."""
    differed: int = 0
    """`--repeat`: questions whose final answers were not the same in every run (at temperature 0,
    what the server's nondeterminism did: parallel slots, batching)."""
    per_model: dict[str, ModelStats] = {}
    """Each model of the panel (`--panel`, an agent's `model`): how often its agents' last answers
    were right, beside the panel's accuracy."""
    turned_right_to_wrong: float = 0.0
    """Share of the questions whose first answers' majority was right and whose final answer is
    wrong: what the rounds (critiques, later answers, the judge) broke."""
    turned_wrong_to_right: float = 0.0
    """Share of the questions whose first answers' majority was wrong and whose final answer is right."""
    unfinished: int = 0


class ModelStats(Model):
    """One model's agents in a mixed panel: their last answers over the finished questions."""

    answers: int
    correct: int
    accuracy: float
    stderr: float


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
    within_noise: bool = True
    """McNemar's p is 0.05 or more, the 95% interval holds 0, or (`--repeat`) the difference is no
    larger than either protocol's spread between runs: nothing here tells the two apart."""
    questions_needed: int | None = None
    """Questions (question runs, with `--repeat`) a paired test would need to detect a difference of
    this size (two-sided α = 0.05, power 0.8); None when there is no difference (`paired_sample_size`)."""


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
    runs: dict[int, list[bool]] = {}
    answers: dict[str, set[str | None]] = {}
    for r in sorted(done, key=lambda r: r.repeat):
        runs.setdefault(r.repeat, []).append(r.correct)
        answers.setdefault(r.id, set()).add(r.answer)
    run_acc = [sum(c) / len(c) for c in runs.values()]
    models: dict[str, list[bool]] = {}
    for r in done:
        for m, marks in r.by_model.items():
            models.setdefault(m, []).extend(marks)
    per_model = {m: ModelStats(answers=len(v), correct=sum(v), accuracy=sum(v) / len(v), stderr=stderr(sum(v), len(v)))
                 for m, v in models.items() if v}
    return ProtocolStats(
        n=n, correct=correct, accuracy=correct / n if n else 0.0, stderr=stderr(correct, n),
        unparsed=sum(r.answer is None for r in done), ties=sum(r.tie and r.decided_by != "judge" for r in done),
        majority_accuracy=sum(r.majority_correct for r in done) / n if n else 0.0,
        calls=sum(r.calls for r in done), calls_min=min((r.calls for r in done), default=0),
        calls_max=max((r.calls for r in done), default=0), prompt_tokens=sum(r.prompt_tokens for r in done),
        completion_tokens=sum(r.completion_tokens for r in done), tokens_per_question=tokens / per,
        tokens_per_correct=tokens / correct if correct else None,
        cost_usd=round(cost, 8), cost_per_question=cost / per,
        seconds_per_question=sum(r.seconds for r in done) / per, changes=changes, run_accuracies=run_acc,
        run_sd=statistics.stdev(run_acc) if len(run_acc) > 1 else 0.0,
        differed=sum(len(a) > 1 for a in answers.values()), per_model=per_model,
        turned_right_to_wrong=sum(r.first_correct and not r.correct for r in done) / per,
        turned_wrong_to_right=sum(r.correct and not r.first_correct for r in done) / per, unfinished=unfinished)


def pareto_front(points: dict[str, tuple[float, float]]) -> list[str]:
    """The names (by tokens, fewest first) of the points (tokens per question, accuracy) that no
    other point beats on both: none is at least as accurate for at most as many tokens and better
    on one of the two. A protocol off the front buys less accuracy per token than one on it."""

    def beaten(t: float, a: float) -> bool:
        return any(u <= t and b >= a and (u < t or b > a) for u, b in points.values())

    return sorted((n for n, (t, a) in points.items() if not beaten(t, a)), key=lambda n: (points[n][0], n))


def mcnemar_p(only_a: int, only_b: int) -> float:
    """Exact two-sided McNemar: the binomial tail of the smaller discordant count at p = ½."""
    m = only_a + only_b
    if m == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = sum(math.comb(m, i) for i in range(k + 1)) / 2**m
    return min(1.0, 2 * tail)


Z_ALPHA = 1.959964
"""z of a two-sided α = 0.05."""
Z_POWER = 0.841621
"""z of power 0.8 (β = 0.2)."""


def paired_sample_size(only_a: int, only_b: int, n: int) -> int | None:
    """Pairs a paired test of two proportions (McNemar's) needs to detect the observed difference
    with two-sided α = 0.05 and power 0.8 (Connor 1987):

        n = (z_α/2 · √ψ + z_β · √(ψ − δ²))² / δ²

    with ψ = (only_a + only_b) / n the share of discordant pairs and δ = (only_a − only_b) / n the
    difference in accuracy; None when δ = 0 (no difference to detect)."""
    if n == 0 or only_a == only_b:
        return None
    psi, delta = (only_a + only_b) / n, (only_a - only_b) / n
    return math.ceil((Z_ALPHA * math.sqrt(psi) + Z_POWER * math.sqrt(max(0.0, psi - delta**2))) ** 2 / delta**2)


def compare(a: str, b: str, rows_a: Sequence[ResultRow], rows_b: Sequence[ResultRow],
            seed: int = 0, spread: float = 0.0) -> Comparison | None:
    """a against b on the questions (question runs) both finished; None when they share none.
    `spread`: the larger of the two protocols' spreads between runs (`--repeat`)."""
    by_a = {(r.id, r.repeat): r.correct for r in rows_a if r.complete}
    by_b = {(r.id, r.repeat): r.correct for r in rows_b if r.complete}
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
    low, high = boot[int(0.025 * BOOTSTRAP)], boot[int(0.975 * BOOTSTRAP) - 1]
    return Comparison(a=a, b=b, n=n, a_accuracy=acc_a, b_accuracy=acc_b, difference=acc_a - acc_b,
                      ci_low=low, ci_high=high, only_a=only_a, only_b=only_b, mcnemar_p=mcnemar_p(only_a, only_b),
                      within_noise=(mcnemar_p(only_a, only_b) >= 0.05 or low <= 0 <= high
                                    or abs(acc_a - acc_b) <= spread),
                      questions_needed=paired_sample_size(only_a, only_b, n))


def comparisons(by_protocol: dict[str, list[ResultRow]]) -> list[Comparison]:
    """Every pair of protocols, in the order they were given."""
    out = []
    sd = {p: protocol_stats(rows).run_sd for p, rows in by_protocol.items()}
    for a, b in combinations(by_protocol, 2):
        c = compare(a, b, by_protocol[a], by_protocol[b], spread=max(sd[a], sd[b]))
        if c is not None:
            out.append(c)
    return out

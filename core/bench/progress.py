"""Live counts while a benchmark runs: per protocol, questions done and in flight, running
accuracy with its standard error, tokens and cost so far. The headless progress lines and the
TUI dashboard both read it; rows already on disk at the start count as done at once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .results import ResultRow
from .runner import BenchPlan, Job
from .stats import pareto_front, stderr


@dataclass
class ProtocolProgress:
    planned: int = 0
    done: int = 0
    """Finished debates (a failed one is counted in `failed`, not here)."""
    failed: int = 0
    in_flight: int = 0
    correct: int = 0
    tokens: int = 0
    cost_usd: float = 0.0

    @property
    def accuracy(self) -> float:
        return self.correct / self.done if self.done else 0.0

    @property
    def stderr(self) -> float:
        return stderr(self.correct, self.done)

    @property
    def tokens_per_question(self) -> float:
        return self.tokens / self.done if self.done else 0.0

    @property
    def tokens_per_correct(self) -> float | None:
        return self.tokens / self.correct if self.correct else None


@dataclass
class BenchProgress:
    plan: BenchPlan
    protocols: dict[str, ProtocolProgress] = field(default_factory=dict)
    rows: dict[tuple[str, str, int], ResultRow] = field(default_factory=dict)
    """(question id, protocol, run) → its row, as they finish."""
    running: set[tuple[str, str, int]] = field(default_factory=set)
    listeners: list[Callable[[Job, ResultRow | None], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for p in self.plan.protocols:
            self.protocols[p] = ProtocolProgress(planned=sum(1 for j in self.plan.jobs if j.protocol == p))

    @property
    def total(self) -> int:
        return len(self.plan.jobs)

    @property
    def finished(self) -> int:
        return len(self.rows)

    def start(self, job: Job) -> None:
        self.running.add(job.slot)
        self.protocols[job.protocol].in_flight += 1
        for listen in self.listeners:
            listen(job, None)

    def done(self, job: Job, row: ResultRow) -> None:
        key = job.slot
        p = self.protocols[job.protocol]
        if key in self.running:
            self.running.discard(key)
            p.in_flight -= 1
        self.rows[key] = row
        if row.complete:
            p.done += 1
            p.correct += row.correct
            p.tokens += row.prompt_tokens + row.completion_tokens
            p.cost_usd += row.cost_usd
        else:
            p.failed += 1
        for listen in self.listeners:
            listen(job, row)

    def pareto(self) -> list[str]:
        """The protocols on the Pareto front of accuracy against tokens per question so far."""
        return pareto_front({p: (s.tokens_per_question, s.accuracy) for p, s in self.protocols.items() if s.done})

    def ordered_rows(self) -> list[ResultRow]:
        return [self.rows[j.slot] for j in self.plan.jobs if j.slot in self.rows]

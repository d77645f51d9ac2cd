"""A debate and its fork side by side from the fork point: what each agent contributed in each
step on both sides, the final answers, and the tokens and cost each side spent from there.

Pure (no Textual, no printing): `moot compare ID FORK` prints what this returns as text and the
TUI's fork comparison draws it. The fork's history before its fork point is its parent's, event
for event, so the comparison starts at the first step where the two differ — the fork point's
step for `round:N` and `turn:N`, the step the summary fell in for `summary:S`. Words are set
against each other with `compare.word_diff`, the same diff as `/compare A B`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .compare import Piece, word_diff
from .errors import InputError
from .models.state import CallMetadata, Contribution, DebateState


@dataclass
class Spend:
    """Calls, tokens and cost of one side from the fork point on (contributions and the answer)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, meta: CallMetadata) -> None:
        if meta.prompt_tokens or meta.completion_tokens or meta.cost_usd:
            self.calls += 1
        self.prompt_tokens += meta.prompt_tokens
        self.completion_tokens += meta.completion_tokens
        self.cost_usd += meta.cost_usd

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class Pair:
    """One contribution (an agent's, of one kind, in one step) in the parent and in the fork."""

    step: int
    agent: str
    kind: str
    target: str | None
    parent: str | None
    fork: str | None
    parent_pieces: list[Piece] = field(default_factory=list)
    fork_pieces: list[Piece] = field(default_factory=list)
    shared: float = 0.0
    """The share of words the two have in common, 0–1 (0 when one side has none)."""

    @property
    def title(self) -> str:
        aimed = f" → {self.target}" if self.target else ""
        return f"{self.step} · {self.agent} · {self.kind}{aimed}"


@dataclass
class ForkComparison:
    parent_id: str
    fork_id: str
    at: str
    """The fork point as `moot fork --at` takes it."""
    unit: str
    """`round` or `turn`."""
    from_step: int
    pairs: list[Pair]
    answer: Pair | None
    """The final answers (None when neither side has one yet)."""
    parent_spend: Spend
    fork_spend: Spend
    parent_status: str
    fork_status: str


def _key(c: Contribution) -> tuple[int, str, str, str | None]:
    return c.round, c.agent_id, c.type, c.target_agent_id


def _first_difference(parent: DebateState, fork: DebateState) -> int:
    """The first step whose contributions are not the same ones (by id) on both sides."""
    before = {r.number: [c.id for c in r.contributions] for r in parent.rounds}
    for rnd in fork.rounds:
        if before.get(rnd.number) != [c.id for c in rnd.contributions]:
            return rnd.number
    numbers = [r.number for r in parent.rounds if r.number not in {f.number for f in fork.rounds}]
    return min(numbers) if numbers else max([r.number for r in fork.rounds] or [1]) + 1


def _pair(step: int, agent: str, kind: str, target: str | None, a: str | None, b: str | None) -> Pair:
    pair = Pair(step, agent, kind, target, a, b)
    if a is not None and b is not None:
        pair.parent_pieces, pair.fork_pieces, pair.shared = word_diff(a, b)
    else:
        pair.parent_pieces = [Piece(a, False)] if a is not None else []
        pair.fork_pieces = [Piece(b, False)] if b is not None else []
    return pair


def compare_fork(parent: DebateState, fork: DebateState) -> ForkComparison:
    """`fork` (whose `forked_from` names `parent`) against `parent` from the fork point on.
    InputError (one line) when `fork` is not a fork of `parent`."""
    origin = fork.forked_from
    if origin is None or origin.debate != parent.id:
        whose = f"a fork of {origin.debate}" if origin is not None else "not a fork"
        raise InputError(f"debate {fork.id} is {whose}, not of {parent.id} (`moot list` marks forks ⑂)")
    unit = "turn" if parent.protocol == "conversation" else "round"
    start = _first_difference(parent, fork)
    sides: dict[tuple[int, str, str, str | None], list[str | None]] = {}
    spends = (Spend(), Spend())
    # A fork at a phase copies the step's earlier phases: the same contributions (by id) on both
    # sides are history, neither compared nor counted.
    shared = {c.id for r in parent.rounds for c in r.contributions} & {c.id for r in fork.rounds for c in r.contributions}
    for side, state in enumerate((parent, fork)):
        for rnd in state.rounds:
            if rnd.number < start:
                continue
            for c in rnd.contributions:
                if c.id in shared:
                    continue
                sides.setdefault(_key(c), [None, None])[side] = c.content
                spends[side].add(c.metadata)
        if state.final_solution is not None:
            spends[side].add(state.final_solution.metadata)
    # In the order the calls ran (the parent's, then what only the fork has), step by step.
    pairs = [_pair(k[0], k[1], k[2], k[3], a, b) for k, (a, b) in sorted(sides.items(), key=lambda kv: kv[0][0])]
    ends = [s.final_solution.description if s.final_solution is not None else None for s in (parent, fork)]
    answer = _pair(0, "judge", "final answer", None, *ends) if any(e is not None for e in ends) else None
    return ForkComparison(parent.id, fork.id, origin.at, unit, start, pairs, answer, spends[0], spends[1],
                          parent.status, fork.status)


def spend_line(spend: Spend) -> str:
    return (f"{spend.calls} calls · {spend.prompt_tokens:,} in + {spend.completion_tokens:,} out "
            f"= {spend.tokens:,} tokens · ${spend.cost_usd:.4f}")

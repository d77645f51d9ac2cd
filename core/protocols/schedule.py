"""Running a protocol's calls by their data dependencies instead of phase barriers.

With a barrier, every phase waits for its slowest call, and with real, uneven latencies a
debate waits on whichever agent is slowest several times a round. A `CallGraph` instead
starts each step as soon as the steps it reads have finished: a critique once the two
proposals it reads exist, a refinement once the critiques aimed at its agent exist, the
next round's summary once that agent's refinement exists.

Views stay reproducible because a step's view is built only from what it depends on, at
the visibility barrier of its own round and phase (`moot.core.context.index`), never from
whatever happened to finish first: the same inputs give byte-identical requests whatever
the order in which calls complete.

Phases now overlap (an agent refines while another still critiques; a round's first
summaries start while the last critiques of the round before finish). Each (round, phase)
is announced once, when its first step begins (`round_started` first for a new round),
and completed when its last step ends; steps begin in dependency order, so these events
come in (round, phase) order and the newest one names the debate's frontier.

Errors keep `DebateContext.gather`'s rule: a stop or budget stop lets steps in flight
finish and starts no more; any other error wins, and no step starts after it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field

from ..engine.gate import BudgetExhausted, StopRequested
from ..events import PhaseCompleted, PhaseStarted, RoundStarted
from ..models.terms import Phase
from .base import DebateContext


class _Halted(Exception):
    """A step not started because another one failed."""


@dataclass
class _Step:
    key: Hashable
    round: int
    phase: Phase
    body: Callable[[], Awaitable[None]]
    deps: tuple[Hashable, ...]


@dataclass
class CallGraph:
    ctx: DebateContext
    _steps: dict[Hashable, _Step] = field(default_factory=dict)
    _tasks: dict[Hashable, asyncio.Task[None]] = field(default_factory=dict)

    async def after(self, key: Hashable) -> None:
        """Inside a step: wait for step `key` too (a dependency only some outcomes have, such as
        a proposal that turns out not to be carried and so reads its agent's summary)."""
        task = self._tasks.get(key)
        if task is not None:
            await task

    def add(self, key: Hashable, step: int, phase: Phase, body: Callable[[], Awaitable[None]],
            deps: Sequence[Hashable] = ()) -> None:
        """A step: `body` runs once every step in `deps` (added before it) has finished; steps not
        in the graph (already done before a resume, or outside it) count as finished."""
        self._steps[key] = _Step(key, step, phase, body, tuple(d for d in deps if d in self._steps))

    async def run(self) -> None:
        ctx = self.ctx
        pending: dict[tuple[int, str], int] = {}
        for s in self._steps.values():
            pending[(s.round, s.phase)] = pending.get((s.round, s.phase), 0) + 1
        begun: set[tuple[int, str]] = set()
        failed: list[BaseException] = []
        tasks = self._tasks

        async def one(s: _Step) -> None:
            for d in s.deps:
                await tasks[d]  # a failed dependency fails this step too
            if failed:
                raise _Halted
            where = (s.round, s.phase)
            if where not in begun:
                begun.add(where)
                if ctx.state.current_round < s.round:
                    ctx.emit(RoundStarted(round=s.round))
                ctx.emit(PhaseStarted(round=s.round, phase=s.phase))
            try:
                await s.body()
            except BaseException as exc:
                failed.append(exc)
                raise
            pending[where] -= 1
            if pending[where] == 0:
                ctx.emit(PhaseCompleted(round=s.round, phase=s.phase))

        for s in self._steps.values():
            tasks[s.key] = asyncio.ensure_future(one(s))
        try:
            results = await asyncio.gather(*tasks.values(), return_exceptions=True)
        except asyncio.CancelledError:
            for t in tasks.values():
                t.cancel()
            raise
        errors = [r for r in results if isinstance(r, BaseException) and not isinstance(r, _Halted)]
        for e in errors:
            if not isinstance(e, (StopRequested, BudgetExhausted)):
                raise e
        if errors:
            raise errors[0]

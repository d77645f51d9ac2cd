"""The garbage collector, tuned while the app runs: fewer, shorter collections.

Why: streaming into a dozen panes allocates and keeps many small objects (Rich segments,
Textual strips and their caches), so CPython's default thresholds (700, 10, 10) ran
~12 full collections per 10 s at 12 agents × 400 tokens/s, each walking every object
the app holds — Textual, Rich, pydantic, the debate — for 70–300 ms of stall on the
event loop (bench/tui_stream.py: a quarter of the loop's CPU). Objects alive once the
app is mounted live as long as it does, so they are frozen (`gc.freeze()`: moved to a
generation that collections skip), and the youngest generation is collected less often.
Reference counting still frees everything that is not in a cycle at once; cycles are
still collected. Leaving the app unfreezes and restores the thresholds, so a process
that runs several apps (the tests) keeps the default behaviour between them.
"""

from __future__ import annotations

import gc

GEN0_THRESHOLD = 20_000
"""Allocations (less deallocations) of container objects between young collections."""


class QuietCollector:
    """`start` once the app is mounted, `stop` when it ends; either may be called twice."""

    def __init__(self, gen0: int = GEN0_THRESHOLD) -> None:
        self.gen0 = gen0
        self._saved: tuple[int, int, int] | None = None

    @property
    def active(self) -> bool:
        return self._saved is not None

    def start(self) -> None:
        if self._saved is not None:
            return
        saved = gc.get_threshold()
        self._saved = (saved[0], saved[1], saved[2])
        gc.freeze()
        gc.set_threshold(max(self.gen0, saved[0]), saved[1], saved[2])

    def stop(self) -> None:
        if self._saved is None:
            return
        gc.set_threshold(*self._saved)
        self._saved = None
        gc.unfreeze()

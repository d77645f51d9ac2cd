"""Main-thread CPU time by category, for the benchmarks: where a busy event loop spends it.

CPU time (`time.thread_time`) is what these figures are made of, not wall time: on a
shared, loaded machine wall figures move with the neighbours' work, CPU time of our own
thread hardly does. Each wrapped method's time is *exclusive* (a wrapped method called
inside another is counted in its own category only), and so is garbage collection,
timed through `gc.callbacks` and taken out of whatever it interrupted. What no category
claims is reported as the rest (Textual's message pumps, asyncio, input).
"""

from __future__ import annotations

import functools
import gc
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

GC = "garbage collection"


@dataclass
class GcStats:
    """Collections seen through `gc.callbacks`: count per generation, CPU time, longest one."""

    counts: list[int] = field(default_factory=lambda: [0, 0, 0])
    cpu: float = 0.0
    wall: float = 0.0
    longest: float = 0.0


class CpuMeter:
    """Exclusive main-thread CPU per category for wrapped methods; GC separately."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.gc = GcStats()
        self._stack: list[float] = []
        """Per open wrapped call: the CPU its nested wrapped calls (and collections) took."""
        self._gc_start: tuple[float, float] | None = None
        self.enabled = False

    # ------------------------------------------------------------------ gc

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if not self.enabled:
            return
        if phase == "start":
            self._gc_start = (time.thread_time(), time.perf_counter())
            return
        if self._gc_start is None:
            return
        cpu = time.thread_time() - self._gc_start[0]
        wall = time.perf_counter() - self._gc_start[1]
        self._gc_start = None
        self.gc.counts[info.get("generation", 0)] += 1
        self.gc.cpu += cpu
        self.gc.wall += wall
        self.gc.longest = max(self.gc.longest, wall)
        self.cpu[GC] += cpu
        if self._stack:
            self._stack[-1] += cpu

    def start(self) -> None:
        self.enabled = True
        if self._on_gc not in gc.callbacks:
            gc.callbacks.append(self._on_gc)

    def stop(self) -> None:
        self.enabled = False
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)

    # ------------------------------------------------------------------ categories

    @contextmanager
    def measure(self, category: str) -> Iterator[None]:
        """Count the CPU of the block (less what nested measured blocks took) in `category`."""
        if not self.enabled:
            yield
            return
        t0 = time.thread_time()
        self._stack.append(0.0)
        try:
            yield
        finally:
            spent = time.thread_time() - t0
            nested = self._stack.pop()
            self.cpu[category] += spent - nested
            self.calls[category] += 1
            if self._stack:
                self._stack[-1] += spent

    def wrap(self, owner: type, names: list[str], category: str) -> list[str]:
        """Replace `owner.name` (synchronous methods) by a measured version; returns the names
        not found (the code moved: the breakdown says so rather than silently missing it)."""
        missing = []
        for name in names:
            original = owner.__dict__.get(name)
            if not callable(original):
                missing.append(f"{owner.__name__}.{name}")
                continue
            setattr(owner, name, self._measured(original, category))
        return missing

    def _measured(self, fn: Callable[..., Any], category: str) -> Callable[..., Any]:
        meter = self

        @functools.wraps(fn)
        def measured(*args: Any, **kwargs: Any) -> Any:
            if not meter.enabled:
                return fn(*args, **kwargs)
            with meter.measure(category):
                return fn(*args, **kwargs)

        return measured

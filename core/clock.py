"""Time, behind one seam: wall time stamps events, monotonic time measures latency.

Tests and snapshots freeze both (`frozen_clock`), so nothing drawn or asserted
depends on how long a call really took.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Clock:
    wall: Callable[[], float] = time.time
    """Seconds since the epoch (event `ts`, elapsed time on screen)."""
    monotonic: Callable[[], float] = time.perf_counter
    """Seconds from an arbitrary start (call and summary latency)."""

    def elapsed_ms(self, since: float) -> int:
        return max(0, int((self.monotonic() - since) * 1000))


SYSTEM_CLOCK = Clock()


def frozen_clock(ts: float) -> Clock:
    """A clock that never moves: every event at `ts`, every latency 0 ms."""
    return Clock(wall=lambda: ts, monotonic=lambda: 0.0)

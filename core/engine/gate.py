"""The call boundary: where pause holds new calls, stop ends the debate and budget caps end spending."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from ..models.config import DebateSettings
from ..models.state import Usage


class StopRequested(Exception):
    """The user stopped the debate: it ends at this boundary (saved, resumable)."""


class BudgetExhausted(Exception):
    """The cost or token cap was reached: start no more calls, but the judge still synthesizes."""


class Gate:
    """Every call waits here first. Commands change it from outside (the TUI, `moot ctl`, a library
    user); they take effect at the next boundary, never in the middle of a call."""

    def __init__(self, settings: DebateSettings, totals: Callable[[], Usage]) -> None:
        self.settings = settings
        self.totals = totals
        self._running = asyncio.Event()
        self._running.set()
        self._halted = asyncio.Event()
        """Set while paused or stopping: what can be cut short (a tool call) waits on it."""
        self._stop = False
        self.spending_allowed = False
        """True while the judge synthesizes: the caps stop new work, not the final answer."""
        self.backlog: Callable[[], Awaitable[None]] | None = None
        """Waits while those who record the debate are far behind it (`EventBus.caught_up`)."""

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def stopping(self) -> bool:
        return self._stop

    def pause(self) -> bool:
        """Hold new calls; False when already paused."""
        if not self._running.is_set():
            return False
        self._running.clear()
        self._halted.set()
        return True

    def resume(self) -> bool:
        if self._running.is_set():
            return False
        self._running.set()
        if not self._stop:
            self._halted.clear()
        return True

    def stop(self) -> bool:
        if self._stop:
            return False
        self._stop = True
        self._running.set()
        self._halted.set()
        return True

    async def halted(self) -> None:
        """Return once a pause or a stop is asked for (at once if one is in force)."""
        await self._halted.wait()

    async def wait(self) -> None:
        """Pass the boundary: wait while paused, raise StopRequested or BudgetExhausted."""
        if self._stop:
            raise StopRequested
        if self.backlog is not None:
            await self.backlog()
        await self._running.wait()
        if self._stop:
            raise StopRequested
        if not self.spending_allowed:
            self.check_budget()

    def check_budget(self) -> None:
        s = self.settings
        t = self.totals()
        if s.max_cost_usd is not None and t.cost_usd >= s.max_cost_usd:
            raise BudgetExhausted(f"cost ${t.cost_usd:.4f} reached the cap of ${s.max_cost_usd:.4f}")
        if s.max_total_tokens is not None and t.total_tokens >= s.max_total_tokens:
            raise BudgetExhausted(f"{t.total_tokens} tokens reached the cap of {s.max_total_tokens}")

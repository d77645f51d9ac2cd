"""Each endpoint's limit of calls in flight, and the llama.cpp slots its speakers keep, held in
one place that several debates may share.

A debate alone owns its limits. A benchmark runs many debates at once in one event loop against
the same server: were each to keep its own limit, a server with 3 slots would get 3 requests
from every debate (the rest queue there, their deadlines running, and a killed run leaves them
to start after it). Given one `EndpointLimits`, all of them wait here for the same slots.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager, nullcontext


class EndpointLimits:
    def __init__(self) -> None:
        self._sems: dict[str, asyncio.Semaphore] = {}
        self._limits: dict[str, int] = {}
        self._slot_locks: dict[tuple[str, int], asyncio.Lock] = {}

    def limit(self, endpoint: str) -> int | None:
        """The endpoint's limit, once one is set."""
        return self._limits.get(endpoint)

    def set(self, endpoint: str, n: int) -> bool:
        """Limit `endpoint` to `n` calls in flight, unless a limit is already set (a semaphore some
        call may hold is never replaced: the first debate to know the limit sets it for all).
        True when this set it."""
        if endpoint in self._limits:
            return False
        self._limits[endpoint] = n
        self._sems[endpoint] = asyncio.Semaphore(n)
        return True

    def of(self, endpoint: str) -> AbstractAsyncContextManager[object]:
        """What a call to `endpoint` holds while in flight (nothing for an endpoint without a limit)."""
        sem = self._sems.get(endpoint)
        return sem if sem is not None else nullcontext()

    def slot(self, endpoint: str, slot: int | None) -> AbstractAsyncContextManager[object]:
        """What a speaker keeping llama.cpp slot `slot` holds while its request runs there: one
        request per slot, whichever debate sends it (nothing when it keeps none)."""
        if slot is None:
            return nullcontext()
        return self._slot_locks.setdefault((endpoint, slot), asyncio.Lock())

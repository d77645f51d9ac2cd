"""Where the debates run: `local` (one asyncio loop drives many debates at once) or `ray`
(each question × protocol a Ray task on a cluster, writing its debate into the shared state
dir). Both hand back the same result rows, read from the saved debates.

Ray is an extra (`pip install 'moot[ray]'`); it is imported only when asked for. `RAY_ADDRESS`
(or `ray.init`'s own default) picks the cluster; without one, Ray starts a local instance.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from typing import Any, Protocol

from ..engine.limits import EndpointLimits
from ..errors import ConfigError
from .ray_support import RayHeadLost, head_address, route_ray_output, watch_head
from .results import ResultRow
from .runner import Job, OnDone, OnStart, failed_row, run_job_safely

RAY_TASK_CPUS = 0.25
"""A debate mostly waits on its model server: four to a core."""


class Executor(Protocol):
    name: str

    async def run(self, jobs: Sequence[Job], on_start: OnStart, on_done: OnDone) -> None:
        """Run every job, at most `concurrency` at once, reporting each start and each row."""


class LocalExecutor:
    name = "local"

    def __init__(self, concurrency: int) -> None:
        self.concurrency = max(1, concurrency)

    async def run(self, jobs: Sequence[Job], on_start: OnStart, on_done: OnDone) -> None:
        queue = list(jobs)
        queue.reverse()
        # One limit per endpoint for all the debates at once: a server with 3 slots gets 3
        # requests from the whole run, not 3 from each debate in flight.
        limits = EndpointLimits()

        async def worker() -> None:
            while queue:
                job = queue.pop()
                on_start(job)
                on_done(job, await run_job_safely(job, limits))

        await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(jobs)))))


def ray_job(job: dict[str, Any]) -> dict[str, Any]:
    """A Ray task's body: one job in the worker's own event loop; the row as plain data."""
    row = asyncio.run(run_job_safely(Job(**job)))
    return row.model_dump(mode="json")


class RayExecutor:
    name = "ray"

    def __init__(self, concurrency: int, address: str | None = None) -> None:
        self.concurrency = max(1, concurrency)
        self.address = address or os.environ.get("RAY_ADDRESS") or None

    def _ray(self) -> Any:
        try:
            import ray
        except ImportError:
            raise ConfigError("--executor ray needs Ray: pip install 'moot[ray]'") from None
        route_ray_output()
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, logging_level=logging.WARNING,
                     log_to_driver=False)
        return ray

    async def run(self, jobs: Sequence[Job], on_start: OnStart, on_done: OnDone) -> None:
        ray = await asyncio.to_thread(self._ray)
        task = ray.remote(num_cpus=RAY_TASK_CPUS, max_retries=2)(ray_job)
        address = head_address(ray)
        watch = asyncio.create_task(watch_head(address)) if address else asyncio.create_task(asyncio.Event().wait())
        queue = list(jobs)
        queue.reverse()
        running: dict[asyncio.Future[Any], tuple[Job, Any]] = {}
        lost = False
        try:
            while queue or running:
                while queue and len(running) < self.concurrency:
                    job = queue.pop()
                    on_start(job)
                    ref = task.remote(job.as_dict())
                    running[asyncio.wrap_future(ref.future())] = (job, ref)
                done, _ = await asyncio.wait([*running, watch], return_when=asyncio.FIRST_COMPLETED)
                if watch in done:
                    lost = True
                    raise RayHeadLost(f"the Ray head at {address} stopped answering; the finished questions are "
                                      "saved: run the same command again to continue")
                for fut in done:
                    job, _ref = running.pop(fut)
                    try:
                        row = ResultRow.model_validate(fut.result())
                    except Exception as exc:  # noqa: BLE001 - a worker that died: the row says why
                        row = failed_row(job, f"ray task failed: {type(exc).__name__}: {exc}".splitlines()[0])
                    on_done(job, row)
        finally:  # interrupted: stop the tasks still running (their debates stay resumable)
            watch.cancel()
            for fut, (_job, ref) in running.items():
                fut.cancel()
                if not lost:  # with no head to ask, cancelling would wait on it
                    ray.cancel(ref, force=True)


def make_executor(name: str, concurrency: int) -> Executor:
    if name == "ray":
        return RayExecutor(concurrency)
    return LocalExecutor(concurrency)

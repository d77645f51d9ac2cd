"""What `--executor ray` needs around Ray itself: Ray's own output kept off the results, and a
head that died noticed in seconds.

Ray prints what its raylets report to the driver (a node marked dead, a worker killed for
memory) on the driver's stdout, coloured, whatever `log_to_driver` says; a headless bench's
stdout is its results table. Those lines go to stderr instead, one safe line each (no escape
codes), marked as Ray's.

When the head (its GCS) dies, a driver waiting on its tasks hears of it only when Ray's own
reconnection deadline runs out (tens of seconds). moot probes the head's port every second
instead; after a few refused or silent probes in a row the bench ends with one line saying so.
The debates that finished are saved and the same command continues the rest.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from ..errors import ExitCode, MootError
from ..safety.sanitize import one_line_safe

HEAD_PROBE_S = 1.0
HEAD_MISSES = 3
"""Probes in a row the head may miss before it counts as gone: a busy head answers a connect
within the second; three misses are no passing stall."""


class RayHeadLost(MootError):
    """The Ray cluster's head stopped answering while a bench ran on it."""

    exit_code = ExitCode.PROVIDER


def _to_stderr(data: dict[str, Any], *_: Any, **__: Any) -> None:
    for line in data.get("lines") or []:
        text = one_line_safe(str(line), 500)
        if text:
            print(f"ray: {text}", file=sys.stderr, flush=True)


def route_ray_output() -> None:
    """Send what Ray prints for the driver to stderr (see the module doc). Ray's printing
    functions are internal: where they are not found, there is nothing to reroute."""
    try:
        from ray._private import worker
    except ImportError:
        return
    for name in ("print_to_stdstream", "print_worker_logs"):
        if callable(getattr(worker, name, None)):
            setattr(worker, name, _to_stderr)


def head_address(ray: Any) -> str | None:
    """`host:port` of the connected cluster's GCS, or None where Ray does not say."""
    try:
        address = ray.get_runtime_context().gcs_address
    except Exception:  # noqa: BLE001 - an older or stranger Ray: no watch, Ray's own deadline holds
        return None
    return address if isinstance(address, str) and ":" in address else None


async def watch_head(address: str) -> None:
    """Return once the head at `address` has missed HEAD_MISSES probes in a row."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    misses = 0
    while misses < HEAD_MISSES:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), HEAD_PROBE_S)
        except (OSError, TimeoutError, ValueError):
            misses += 1
        else:
            misses = 0
            writer.close()
        await asyncio.sleep(HEAD_PROBE_S)

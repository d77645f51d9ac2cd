"""A stdio MCP server's process and the two message streams the SDK's `ClientSession` reads and
writes.

moot starts the process itself rather than through the SDK's `stdio_client`, for what it must
hold whatever the server does:

- The server runs in a process group of its own, and the whole group is ended when the server
  stops — the processes it started too, even when the server itself exits as soon as its stdin
  closes (the common case, and the one where only the leader would be waited for). A group left
  behind when moot exits without stopping it is ended at exit.
- Each message the server writes is capped in bytes while it is read, before anything is decoded
  or parsed: a server that writes more in one message is ended at once, and the cause is known.
- How the server ended (its exit status, a signal, an output over the cap) is kept, so that a
  failed call can say why in one line.

Nothing here imports the `mcp` package at import time: it is an extra.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from typing import IO, Any

from ..models.tools import McpServerConfig

MAX_MESSAGE_BYTES = 8 * 1024 * 1024
"""The most one message from a server may hold: the largest tool result moot keeps (200,000
characters) with room for JSON escaping and structured content, far from what would strain memory."""
READ_CHUNK = 64 * 1024
EXIT_GRACE_S = 2.0
"""How long a server has to exit on its own once its stdin is closed (the MCP shutdown sequence)."""
TERM_GRACE_S = 1.0
"""How long the group has between SIGTERM and SIGKILL."""
_POLL_S = 0.02

_live_groups: set[int] = set()


def _kill_group(pgid: int, sig: int) -> bool:
    """Signal a process group; False when no process of it is left."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


@atexit.register
def _end_left_groups() -> None:
    for pgid in list(_live_groups):
        _kill_group(pgid, signal.SIGKILL)
    _live_groups.clear()


class StdioPipe:
    """One running server process: its group, its stdout read under the cap, and how it ended."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.pgid = proc.pid  # start_new_session: the server leads a group of its own
        self.overflowed = False
        self.closed = asyncio.Event()  # its stdout ended (it exited, closed it, or went over the cap)
        _live_groups.add(self.pgid)

    def cause(self) -> str:
        """Why the server is gone, in words (empty while nothing is known)."""
        if self.overflowed:
            return f"it wrote more than {MAX_MESSAGE_BYTES // (1024 * 1024)} MiB in one message and was stopped"
        code = self.proc.returncode
        if code is None:
            return "it closed its output" if self.closed.is_set() else ""
        if code < 0:
            try:
                return f"it was ended by {signal.Signals(-code).name}"
            except ValueError:
                return f"it was ended by signal {-code}"
        return f"it exited with status {code}"

    async def settled(self, wait_s: float) -> None:
        """Give an ending process up to `wait_s` to be reaped, so that `cause` can name its status."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while self.proc.returncode is None and loop.time() < deadline:
            await asyncio.sleep(_POLL_S)

    def kill(self) -> None:
        """End the whole group at once (a server that never answered, or went over the cap)."""
        _kill_group(self.pgid, signal.SIGKILL)
        _live_groups.discard(self.pgid)

    async def end(self, grace_s: float = EXIT_GRACE_S) -> None:
        """Close stdin, let the server exit within `grace_s`, then SIGTERM and SIGKILL the group —
        which happens even when the server exited on its own, for the processes it left behind."""
        stdin = self.proc.stdin
        if stdin is not None:
            with contextlib.suppress(Exception):
                stdin.close()
        await self.settled(grace_s)
        if _kill_group(self.pgid, signal.SIGTERM):
            loop = asyncio.get_running_loop()
            deadline = loop.time() + TERM_GRACE_S
            while loop.time() < deadline and (self.proc.returncode is None or _group_alive(self.pgid)):
                await asyncio.sleep(_POLL_S)
        self.kill()
        await self.settled(TERM_GRACE_S)

    async def read_messages(self, out: Any) -> None:
        """Read stdout into `out` (the session's receive side) one message a line, each capped
        before it is parsed; a message over the cap ends the server."""
        from mcp.shared.message import SessionMessage
        from mcp.types import jsonrpc_message_adapter

        stdout = self.proc.stdout
        assert stdout is not None
        pending = bytearray()
        try:
            async with out:
                while True:
                    chunk = await stdout.read(READ_CHUNK)
                    if not chunk:
                        return
                    start = 0
                    while (end := chunk.find(b"\n", start)) >= 0:
                        if len(pending) + end - start > MAX_MESSAGE_BYTES:
                            return self._overflow()
                        pending += chunk[start:end]
                        start = end + 1
                        line, pending = bytes(pending), bytearray()
                        if not line.strip():
                            continue
                        try:
                            item: Any = SessionMessage(jsonrpc_message_adapter.validate_json(line))
                        except ValueError as exc:  # not JSON-RPC: the session surfaces it as an error
                            item = exc
                        await out.send(item)
                    pending += chunk[start:]
                    if len(pending) > MAX_MESSAGE_BYTES:
                        return self._overflow()
        except Exception:  # noqa: BLE001 - the session went away, or the pipe broke: the stream ends
            return
        finally:
            self.closed.set()

    def _overflow(self) -> None:
        self.overflowed = True
        self.kill()

    async def write_messages(self, source: Any) -> None:
        """Write what the session sends, one JSON line a message, until it stops or the pipe breaks."""
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            async with source:
                async for message in source:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    stdin.write(data.encode() + b"\n")
                    await stdin.drain()
        except Exception:  # noqa: BLE001 - a server that stopped reading: its calls fail or time out
            return


def _group_alive(pgid: int) -> bool:
    return _kill_group(pgid, 0)


@contextlib.asynccontextmanager
async def open_server(cfg: McpServerConfig, errlog: IO[bytes]) -> AsyncIterator[tuple[Any, Any, StdioPipe]]:
    """Start the server in a group of its own: (receive stream, send stream, pipe) for a
    `ClientSession`; on leaving, the group is ended (see `StdioPipe.end`)."""
    import anyio
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    proc = await asyncio.create_subprocess_exec(
        cfg.command, *cfg.args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=errlog,
        cwd=cfg.cwd, env=get_default_environment() | dict(cfg.env), start_new_session=True)
    pipe = StdioPipe(proc)
    to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    session_writes, to_server = anyio.create_memory_object_stream[SessionMessage](0)
    tasks = [asyncio.create_task(pipe.read_messages(to_session)),
             asyncio.create_task(pipe.write_messages(to_server))]
    try:
        yield session_reads, session_writes, pipe
    finally:
        try:
            await pipe.end()
        finally:
            pipe.kill()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for stream in (session_reads, session_writes):
                stream.close()

"""Lines of stdin for an asyncio program, read only when someone asks, never lost.

One daemon thread reads a line whenever a reader waits (a blocked read never keeps the process
alive after Ctrl-C); a line typed while nobody waits any more (a person's turn answered with
`moot ctl say` meanwhile) is kept for the next reader. Nothing is read from a terminal this
process does not own (a background job): that read would stop the process (SIGTTIN).
"""

from __future__ import annotations

import asyncio
import os
import queue
import sys
import threading


def can_read_stdin() -> bool:
    """stdin is a pipe or a file, or the terminal whose foreground this process is."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    try:
        if not os.isatty(fd):
            return True
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False


class StdinLines:
    def __init__(self) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        self._lock = threading.Lock()
        self._want = threading.Event()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._thread: threading.Thread | None = None
        self.eof = False

    async def readline(self) -> str:
        """The next line, with its newline; "" at the end of input."""
        while True:
            try:
                return self._lines.get_nowait()
            except queue.Empty:
                pass
            if self.eof:
                return ""
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()
            with self._lock:
                self._waiters.append((loop, waiter))
                self._want.set()
                if self._thread is None:
                    self._thread = threading.Thread(target=self._read, name="moot-stdin", daemon=True)
                    self._thread.start()
            try:
                await waiter
            finally:
                with self._lock:
                    self._waiters = [w for w in self._waiters if w[1] is not waiter]

    def _read(self) -> None:
        while True:
            self._want.wait()
            try:
                line = sys.stdin.readline()
            except (OSError, ValueError):
                line = ""
            if line:
                self._lines.put(line)
            else:
                self.eof = True
            with self._lock:
                for loop, waiter in self._waiters:
                    try:
                        loop.call_soon_threadsafe(_wake, waiter)
                    except RuntimeError:  # that loop has closed: nobody there waits any more
                        pass
                self._waiters = []
                self._want.clear()
            if self.eof:
                return


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


_shared: StdinLines | None = None


def stdin_lines() -> StdinLines:
    """The process's one reader of stdin (clarifying answers and a person's turns share it)."""
    global _shared
    if _shared is None:
        _shared = StdinLines()
    return _shared

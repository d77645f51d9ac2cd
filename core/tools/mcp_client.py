"""One stdio MCP server, through the official `mcp` SDK (`pip install 'moot[mcp]'`).

The SDK's session is an async context manager that must be entered and left by one task, so each
server has a task of its own: it starts the process (in a group of its own, its output capped:
see `mcp_stdio`), initializes the session, lists the tools once, then waits until the debate
ends or the server does.
Tool calls go through the session with a deadline each. A server that fails to start, dies,
hangs or answers something that is not a tool result makes every later call a tool error
naming the cause in one line (its last stderr line when it wrote one); the debate goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
from dataclasses import dataclass, field
from typing import IO, Any

from ..models.tools import McpServerConfig
from ..safety.sanitize import one_line_safe
from .mcp_stdio import StdioPipe
from .registry import ToolOutput

STOP_WAIT_S = 5.0
STATUS_WAIT_S = 0.5
"""How long a server whose output ended has to exit, so that its exit status can be named."""
MAX_OUTPUT_CHARS = 200_000


class McpUnavailable(Exception):
    """The `mcp` package is not installed."""


def require_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise McpUnavailable("MCP servers need the mcp package: pip install 'moot[mcp]'") from None


@dataclass(frozen=True)
class McpTool:
    """A tool as the server lists it."""

    name: str
    description: str
    parameters: dict[str, Any]
    read_only: bool
    destructive: bool


def _hint(annotations: Any, snake: str, camel: str) -> bool | None:
    if annotations is None:
        return None
    value = getattr(annotations, snake, None)
    if value is None:
        value = getattr(annotations, camel, None)
    return value if isinstance(value, bool) else None


def _tool(raw: Any) -> McpTool | None:
    name = getattr(raw, "name", None)
    if not isinstance(name, str) or not name:
        return None
    schema = getattr(raw, "input_schema", None) or getattr(raw, "inputSchema", None)
    if not isinstance(schema, dict):
        schema = {"type": "object", "properties": {}}
    notes = getattr(raw, "annotations", None)
    read_only = _hint(notes, "read_only_hint", "readOnlyHint") is True
    destructive = _hint(notes, "destructive_hint", "destructiveHint") is True
    description = getattr(raw, "description", None)
    return McpTool(name, description if isinstance(description, str) else "", schema, read_only, destructive)


def result_text(result: Any) -> tuple[str, bool]:
    """(text, is_error) of a `CallToolResult`; anything else is an error."""
    content = getattr(result, "content", None)
    if not isinstance(content, list):
        raise ValueError("the server's answer is not a tool result")
    parts: list[str] = []
    for block in content:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            parts.append(f"[{getattr(block, 'type', 'content')} not shown]")
    structured = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    error = getattr(result, "is_error", None)
    if error is None:
        error = getattr(result, "isError", False)
    return "\n".join(parts)[:MAX_OUTPUT_CHARS], bool(error)


@dataclass
class McpServer:
    """A running stdio MCP server (see the module doc)."""

    config: McpServerConfig
    tools: list[McpTool] = field(default_factory=list)
    error: str | None = None
    _session: Any = None
    _task: asyncio.Task[None] | None = None
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _stderr: IO[bytes] | None = None
    _pipe: StdioPipe | None = None

    @property
    def name(self) -> str:
        return self.config.name

    async def start(self) -> None:
        """Start the server and list its tools, within the config's deadline; sets `error` on failure.
        A server that does not answer by then is ended at once (its group killed), so the
        deadline is the whole wait."""
        require_sdk()
        quiet = logging.getLogger("mcp")  # what it would log, moot says in one line (a TUI owns the terminal)
        quiet.propagate = False
        if not quiet.handlers:
            quiet.addHandler(logging.NullHandler())
        self._stderr = tempfile.TemporaryFile()
        self._task = asyncio.create_task(self._serve(), name=f"mcp-{self.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), self.config.timeout_s)
        except TimeoutError:
            self.error = self._with_stderr(f"did not answer within {self.config.timeout_s:g}s")
            if self._pipe is not None:
                self._pipe.kill()
            await self.stop()

    async def _serve(self) -> None:
        from mcp import ClientSession

        from .mcp_stdio import open_server

        assert self._stderr is not None
        try:
            async with open_server(self.config, self._stderr) as (read, write, pipe):
                self._pipe = pipe
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    listed = await session.list_tools()
                    self.tools = [t for t in (_tool(x) for x in getattr(listed, "tools", []) or []) if t]
                    self._session = session
                    self._ready.set()
                    stop = asyncio.create_task(self._stop.wait())
                    closed = asyncio.create_task(pipe.closed.wait())
                    try:
                        await asyncio.wait({stop, closed}, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        stop.cancel()
                        closed.cancel()
                    if not self._stop.is_set():  # it ended on its own: say how, before the group is ended
                        await pipe.settled(STATUS_WAIT_S)
                        self.error = self.error or self._why(RuntimeError("it stopped"))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - any way a server fails is one line
            if self._pipe is not None:
                await self._pipe.settled(STATUS_WAIT_S)
            self.error = self.error or self._why(exc)
        finally:
            self._session = None
            if self.error is None and not self._stop.is_set():
                self.error = self._why(RuntimeError("it stopped"))
            self._ready.set()

    def _why(self, exc: BaseException) -> str:
        """One line: how the process ended when that is known (else the exception), and its last
        stderr line when it wrote one."""
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        cause = self._pipe.cause() if self._pipe is not None else ""
        text = cause or (f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        return self._with_stderr(text)

    def _with_stderr(self, text: str) -> str:
        last = self._last_stderr_line()
        return one_line_safe(text + (f" (stderr: {last})" if last else ""), 300)

    def _last_stderr_line(self) -> str:
        f = self._stderr
        if f is None:
            return ""
        try:
            f.flush()
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 4096))
            lines = [ln for ln in f.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        return lines[-1] if lines else ""

    async def call(self, tool: str, args: dict[str, Any]) -> ToolOutput:
        """Call one tool; every failure is a tool error the model reads."""
        session = self._session
        if session is None or self._task is None or self._task.done():
            why = self.error or self._why(RuntimeError("it is not running"))
            return ToolOutput(f"error: {self.name}/{tool} failed: {why}", False, f"{self.name} unavailable")
        try:
            result = await asyncio.wait_for(session.call_tool(tool, args), self.config.timeout_s)
            text, is_error = result_text(result)
        except TimeoutError:
            return ToolOutput(f"error: {self.name}/{tool} did not answer within {self.config.timeout_s:g}s", False,
                              "timed out")
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - a dead or garbled server is a tool error
            if self._pipe is not None and self._pipe.closed.is_set():
                await self._pipe.settled(STATUS_WAIT_S)
            return ToolOutput(f"error: {self.name}/{tool} failed: {self._why(exc)}", False, "server error")
        if is_error:
            return ToolOutput(f"error: {text}", False, one_line_safe(text, 120) or "tool error")
        lines = text.count("\n") + 1 if text else 0
        return ToolOutput(text or "(no output)", True, f"{lines} line{'s' if lines != 1 else ''} from {self.name}")

    async def stop(self) -> None:
        """Stop the server (its stdin closes, then it is terminated); never raises."""
        self._stop.set()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), STOP_WAIT_S)
            except (TimeoutError, Exception):  # noqa: BLE001
                task.cancel()
                await asyncio.wait({task}, timeout=STOP_WAIT_S)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

"""Connecting a debate's MCP servers and offering their tools to the agents that have them.

Each server is started once, however many agents use it. Its tools are offered as
`<server>__<tool>` (names that cannot collide with the built-in tools or with another
server's), and only those marked read-only (`readOnlyHint`, not `destructiveHint`) unless the
config's `allow` names them. A server that fails to start is a warning; its tools are absent.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..events import Event, Warning_
from ..models.tools import McpServerConfig, ToolServerInfo
from .mcp_client import McpServer, McpTool
from .registry import Tool, Toolbox, ToolOutput

_NAME = re.compile(r"[^A-Za-z0-9_-]")


def offered_name(server: str, tool: str) -> str:
    """The name a server's tool is offered under (OpenAI allows `^[A-Za-z0-9_-]{1,64}$`)."""
    return f"{server}__{_NAME.sub('_', tool)}"[:64]


def offered(server: McpServerConfig, tool: McpTool) -> bool:
    if server.allow is not None:
        return tool.name in server.allow
    return tool.read_only and not tool.destructive


def toolbox(server: McpServer) -> tuple[Toolbox, list[str]]:
    """The server's tools as offered, and the names of those withheld."""
    box = Toolbox()
    withheld: list[str] = []
    for tool in server.tools:
        if not offered(server.config, tool):
            withheld.append(tool.name)
            continue
        name = offered_name(server.name, tool.name)
        if box.get(name) is not None:
            continue
        description = (tool.description or f"{tool.name} from the {server.name} MCP server")[:1000]

        async def run(_: str, args: dict[str, Any], tool_name: str = tool.name) -> ToolOutput:
            return await server.call(tool_name, args)

        box.add(Tool(name, f"[{server.name}] {description}", tool.parameters, run, server=server.name))
    return box, withheld


@dataclass
class Started:
    """The servers a debate started: what each agent gets, what to record, how to stop them."""

    boxes: dict[str, Toolbox] = field(default_factory=dict)
    servers: list[ToolServerInfo] = field(default_factory=list)
    stoppers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)


async def start_servers(wanted: dict[str, list[McpServerConfig]], emit: Callable[[Event], Event]) -> Started:
    """Start every server some agent has (once each, all at once, so the start takes as long as
    the slowest server's deadline, not their sum): each agent's servers' tools (agent id →
    toolbox), what to record of each server, and how to stop them."""
    out = Started()
    servers: dict[str, McpServer] = {}
    for configs in wanted.values():
        for cfg in configs:
            if cfg.name not in servers:
                servers[cfg.name] = McpServer(cfg)
                out.stoppers.append(servers[cfg.name].stop)
    try:
        await asyncio.gather(*(server.start() for server in servers.values()))
    except BaseException:  # interrupted while starting: none is left running
        await asyncio.gather(*(server.stop() for server in servers.values()))
        raise
    for server in servers.values():
        box, withheld = toolbox(server)
        out.servers.append(ToolServerInfo(name=server.name, tools=box.names, withheld=withheld, error=server.error))
        if server.error is not None:
            emit(Warning_(message=f"MCP server {server.name} did not start: {server.error}; "
                                  "the debate goes on without its tools"))
    for agent_id, configs in wanted.items():
        mine = out.boxes.setdefault(agent_id, Toolbox())
        for cfg in configs:
            mine.merge(toolbox(servers[cfg.name])[0])
    return out

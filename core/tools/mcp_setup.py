"""Connecting a debate's MCP servers and offering their tools to the agents that have them.

Each server is started once, however many agents use it. Its tools are offered as
`<server>__<tool>` (names that cannot collide with the built-in tools or with another
server's), and only those marked read-only (`readOnlyHint`, not `destructiveHint`) unless the
config's `allow` names them. A server that fails to start is a warning; its tools are absent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..events import Event, Warning_
from ..models.tools import McpServerConfig, ToolServerInfo
from .mcp_client import McpServer, McpTool
from .registry import ToolDef, ToolOutput, Toolbox

if TYPE_CHECKING:
    from ..engine.grounding import Grounding

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

        box.add(ToolDef(name, f"[{server.name}] {description}", tool.parameters, "mcp", server.name), run)
    return box, withheld


async def start_servers(grounding: Grounding, emit: Callable[[Event], Event]) -> None:
    """Start every server some agent has (once each) and give each agent its servers' tools."""
    servers: dict[str, McpServer] = {}
    for agent_id, configs in grounding.mcp.items():
        for cfg in configs:
            server = servers.get(cfg.name)
            if server is None:
                server = servers[cfg.name] = McpServer(cfg)
                await server.start()
                grounding.stoppers.append(server.stop)
                box, withheld = toolbox(server)
                grounding.servers.append(ToolServerInfo(name=cfg.name, tools=box.names, withheld=withheld,
                                                        error=server.error))
                if server.error is not None:
                    emit(Warning_(message=f"MCP server {cfg.name} did not start: {server.error}; "
                                          "the debate goes on without its tools"))
            box, _ = toolbox(server)
            grounding.add_tools(agent_id, box)

"""A small stdio MCP server for the tests (the official SDK's server side): a ticket tracker with
a read-only lookup, a search, a destructive close, and tools that die or answer garbage."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

TICKETS = {
    "NOTES-12": "Compaction deletes notes that were restored after deletion; the journal replay skips them.",
    "NOTES-31": "Search results lag the journal by up to one compaction cycle on busy tenants.",
}

server = MCPServer("tickets")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup_ticket(ticket_id: str) -> str:
    """Look up one ticket of the notes service by its id (NOTES-12)."""
    return TICKETS.get(ticket_id, f"no ticket {ticket_id}")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def crash_server(reason: str) -> str:
    """Look up the crash report of a ticket (this test tool makes the server die)."""
    sys.stderr.write(f"tickets server: fatal: {reason}\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def garble(ticket_id: str) -> str:
    """Look up a ticket's history (this test tool answers with bytes that are not JSON-RPC)."""
    sys.stdout.write("\x1b]0;garbage\x07 this is not json\n")
    sys.stdout.flush()
    return "unreachable"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def close_ticket(ticket_id: str) -> str:
    """Close a ticket (destructive: never offered unless the config allows it by name)."""
    return f"closed {ticket_id}"


@server.tool()
def reopen_ticket(ticket_id: str) -> str:
    """Reopen a ticket (no hints at all: not offered by default)."""
    return f"reopened {ticket_id}"


if __name__ == "__main__":
    server.run()

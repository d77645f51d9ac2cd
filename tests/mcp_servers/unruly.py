"""A stdio MCP server that misbehaves the ways real ones do, each switched on by the environment
moot passes it (the official SDK's server side, like `tickets.py`):

- `UNRULY_HELPER_PIDFILE`: it starts a helper process (a `sleep`, as a server starts a watcher or
  an indexer) and writes the helper's pid there; the server itself exits when its stdin closes,
  the helper does not.
- `UNRULY_MEET` and `UNRULY_PEER`: before it answers anything it waits until the server named
  `UNRULY_PEER` has started too (each leaves a file in the `UNRULY_MEET` folder), as servers that
  share a lock or a port do; started one after the other, neither ever answers.
- `export_history` answers with the whole history of a ticket, many megabytes in one message.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

HISTORY_LINE = ("2026-03-14 09:12 NOTES-12 reassigned to the storage team after the journal replay skipped a "
                "restored note; compaction paused on tenant 4417 until the fix ships.\n")

server = MCPServer("unruly")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup_ticket(ticket_id: str) -> str:
    """Look up one ticket of the notes service by its id (NOTES-12)."""
    return f"{ticket_id}: compaction deletes notes that were restored after deletion."


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def export_history(ticket_id: str) -> str:
    """Export the full history of a ticket (every event since it was filed)."""
    return HISTORY_LINE * (int(os.environ.get("UNRULY_HISTORY_MB", "9")) * 1024 * 1024 // len(HISTORY_LINE))


def _meet(folder: Path, me: str, peer: str) -> None:
    (folder / me).write_text(str(os.getpid()))
    while not (folder / peer).exists():
        time.sleep(0.05)


if __name__ == "__main__":
    pidfile = os.environ.get("UNRULY_HELPER_PIDFILE")
    if pidfile:
        helper = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        Path(pidfile).write_text(str(helper.pid))
    meet = os.environ.get("UNRULY_MEET")
    if meet:
        _meet(Path(meet), os.environ["UNRULY_NAME"], os.environ["UNRULY_PEER"])
    server.run()

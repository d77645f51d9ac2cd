"""The user's MCP servers (`[[tools.mcp]]`) through the CLI: a real stdio server built on the
official `mcp` SDK, started and stopped by moot; its read-only tools offered beside the built-in
ones, a destructive one only when allowed by name; a server that dies, or never starts, is one
line and a tool error, and the debate goes on."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import LoopbackServer, cli
from tests.grounding_helpers import call, debate_id, events, first_turn_calls, is_proposal, make_refs, run, tool_messages

pytest.importorskip("mcp")  # the `mcp` extra (part of the test extra, so CI runs these)
SERVER = Path(__file__).parent / "mcp_servers" / "tickets.py"


def _config(*servers: str) -> Path:
    path = Path("moot.toml")
    path.write_text("".join(servers))
    return path


def _server(name: str = "tickets", command: str = sys.executable, args: list[str] | None = None,
            extra: str = "") -> str:
    return (f"[[tools.mcp]]\nname = {json.dumps(name)}\ncommand = {json.dumps(command)}\n"
            f"args = {json.dumps(args if args is not None else [str(SERVER)])}\ntimeout_s = 20\n{extra}\n")


def test_a_read_only_mcp_tool_is_offered_and_called_in_the_tool_loop(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    config = _config(_server())
    script = first_turn_calls(call("tickets__lookup_ticket", ticket_id="NOTES-12"), call("read_file", path="docs/plan.md"))
    with LoopbackServer(tool_calls=script) as server:
        result = run(server.base_url, refs, "-a", "architect", "-c", str(config))
        requests = server.requests
    assert result.returncode == 0, result.stderr
    names = {t["function"]["name"] for t in next(r for r in requests if r.get("tools"))["tools"]}
    assert names == {"list_files", "read_file", "search", "tickets__lookup_ticket", "tickets__crash_server",
                     "tickets__garble"}  # close_ticket (destructive) and reopen_ticket (no hint) withheld
    follow = next(r for r in requests if is_proposal(r) and tool_messages(r))
    texts = [m["content"] for m in tool_messages(follow)]
    assert texts[0].startswith("Compaction deletes notes that were restored")
    assert texts[1].startswith("docs/plan.md (lines 1–14 of 14)")
    show = cli("show", debate_id(), "--state-dir", "debates").stdout
    assert "MCP server tickets: tickets__lookup_ticket, tickets__crash_server, tickets__garble; not offered " \
           "(not read-only): close_ticket, reopen_ticket" in show
    report = cli("report", debate_id(), "--state-dir", "debates").stdout
    assert "[✓ tickets__lookup_ticket: Args: ticket_id=\"NOTES-12\"" in report


def test_allow_offers_a_tool_by_name_even_when_it_is_not_read_only(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    config = _config(_server(extra='allow = ["lookup_ticket", "close_ticket"]'))
    with LoopbackServer(tool_calls=first_turn_calls(call("tickets__close_ticket", ticket_id="NOTES-31"))) as server:
        result = run(server.base_url, refs, "-a", "architect", "-c", str(config))
        requests = server.requests
    assert result.returncode == 0, result.stderr
    names = {t["function"]["name"] for t in next(r for r in requests if r.get("tools"))["tools"]}
    assert {"tickets__lookup_ticket", "tickets__close_ticket"} <= names and "tickets__crash_server" not in names
    follow = next(r for r in requests if is_proposal(r) and tool_messages(r))
    assert tool_messages(follow)[0]["content"] == "closed NOTES-31"


def test_a_server_that_dies_mid_debate_is_a_tool_error_and_the_debate_goes_on(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    config = _config(_server())
    script = first_turn_calls(call("tickets__crash_server", reason="disk on fire"),
                              call("tickets__lookup_ticket", ticket_id="NOTES-12"))
    with LoopbackServer(tool_calls=script) as server:
        result = run(server.base_url, refs, "-a", "architect,kiss", "-c", str(config))
        requests = server.requests
    assert result.returncode == 0, result.stderr
    follows = [r for r in requests if is_proposal(r) and tool_messages(r)]
    texts = [m["content"] for r in follows for m in tool_messages(r)]
    assert all(t.startswith("error: tickets/") for t in texts)
    assert any("disk on fire" in t for t in texts)  # the server's last stderr line says why
    assert any(e["type"] == "debate_completed" for e in events())


def test_a_server_that_cannot_start_is_one_warning_and_the_debate_goes_on(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    config = _config(_server("broken", command=str(tmp_path / "no-such-program"), args=[]),
                     _server("silent", args=["-c", "import time; time.sleep(60)"], extra="").replace(
                         "timeout_s = 20", "timeout_s = 2"))
    with LoopbackServer() as server:
        result = run(server.base_url, refs, "-a", "architect", "-c", str(config))
        requests = server.requests
    assert result.returncode == 0, result.stderr
    warnings = [e["message"] for e in events() if e["type"] == "warning"]
    assert any(w.startswith("MCP server broken did not start: ") for w in warnings)
    assert any(w.startswith("MCP server silent did not start: did not answer within 2s") for w in warnings)
    names = {t["function"]["name"] for t in next(r for r in requests if r.get("tools"))["tools"]}
    assert names == {"list_files", "read_file", "search"}
    assert "MCP server broken: did not start" in cli("show", debate_id(), "--state-dir", "debates").stdout

"""The user's MCP servers (`[[tools.mcp]]`) through the CLI: a real stdio server built on the
official `mcp` SDK, started and stopped by moot; its read-only tools offered beside the built-in
ones, a destructive one only when allowed by name; a server that dies, or never starts, is one
line and a tool error, and the debate goes on."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import LoopbackServer, cli
from tests.grounding_helpers import call, debate_id, events, first_turn_calls, is_proposal, make_refs, run, tool_messages

pytest.importorskip("mcp")  # the `mcp` extra (part of the test extra, so CI runs these)
SERVER = Path(__file__).parent / "mcp_servers" / "tickets.py"
UNRULY = Path(__file__).parent / "mcp_servers" / "unruly.py"


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
    assert "failed: it exited with status 3 (stderr: tickets server: fatal: disk on fire)" in texts[-1]
    assert any(e["type"] == "debate_completed" for e in events())


WAITS_FOR_ITS_DATABASE = ("import sys, time\n"
                          "sys.stderr.write('tickets server: waiting for the database at db.internal:5432\\n')\n"
                          "sys.stderr.flush()\ntime.sleep(60)\n")


def test_a_server_that_cannot_start_is_one_warning_and_the_debate_goes_on(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    config = _config(_server("broken", command=str(tmp_path / "no-such-program"), args=[]),
                     _server("silent", args=["-c", WAITS_FOR_ITS_DATABASE], extra="").replace(
                         "timeout_s = 20", "timeout_s = 2"))
    with LoopbackServer() as server:
        result = run(server.base_url, refs, "-a", "architect", "-c", str(config))
        requests = server.requests
    assert result.returncode == 0, result.stderr
    warnings = [e["message"] for e in events() if e["type"] == "warning"]
    assert any(w.startswith("MCP server broken did not start: ") for w in warnings)
    assert "MCP server silent did not start: did not answer within 2s (stderr: tickets server: waiting for " \
           "the database at db.internal:5432); the debate goes on without its tools" in warnings
    names = {t["function"]["name"] for t in next(r for r in requests if r.get("tools"))["tools"]}
    assert names == {"list_files", "read_file", "search"}
    assert "MCP server broken: did not start" in cli("show", debate_id(), "--state-dir", "debates").stdout


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie has ended; only its parent has not read its status yet


def test_the_processes_a_server_started_end_with_it(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    pidfile = tmp_path / "helper.pid"
    config = _config(_server("unruly", args=[str(UNRULY)], extra=f"env = {{ UNRULY_HELPER_PIDFILE = "
                                                                   f"{json.dumps(str(pidfile))} }}"))
    with LoopbackServer() as server:
        result = run(server.base_url, refs, "-a", "architect", "-c", str(config))
    assert result.returncode == 0, result.stderr
    helper = int(pidfile.read_text())
    try:
        deadline = time.monotonic() + 5  # the group is signalled before the debate ends; this only lets it die
        while _alive(helper) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(helper), "the server's helper process outlived the debate"
    finally:
        if _alive(helper):
            os.kill(helper, signal.SIGKILL)


def test_a_result_over_the_byte_cap_ends_the_server_with_a_tool_error(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    config = _config(_server("unruly", args=[str(UNRULY)]))
    script = first_turn_calls(call("unruly__export_history", ticket_id="NOTES-12"),
                              call("unruly__lookup_ticket", ticket_id="NOTES-12"))
    with LoopbackServer(tool_calls=script) as server:
        result = run(server.base_url, refs, "-a", "architect", "-c", str(config))
        requests = server.requests
    assert result.returncode == 0, result.stderr
    follow = next(r for r in requests if is_proposal(r) and tool_messages(r))
    texts = [m["content"] for m in tool_messages(follow)]
    cause = "failed: it wrote more than 8 MiB in one message and was stopped"
    assert texts == [f"error: unruly/export_history {cause}", f"error: unruly/lookup_ticket {cause}"]
    assert any(e["type"] == "debate_completed" for e in events())


def test_servers_start_together(tmp_path: Path) -> None:
    # Each server answers only once the other has started: one after the other, neither would.
    refs = make_refs(tmp_path)
    meet = tmp_path / "meet"
    meet.mkdir()

    def env(me: str, peer: str) -> str:
        return (f"env = {{ UNRULY_MEET = {json.dumps(str(meet))}, UNRULY_NAME = \"{me}\", "
                f"UNRULY_PEER = \"{peer}\" }}")

    config = _config(*(_server(me, args=[str(UNRULY)], extra=env(me, peer)).replace("timeout_s = 20", "timeout_s = 5")
                       for me, peer in (("north", "south"), ("south", "north"))))
    with LoopbackServer() as server:
        result = run(server.base_url, refs, "-a", "architect", "-c", str(config))
        requests = server.requests
    assert result.returncode == 0, result.stderr
    assert [e["message"] for e in events() if e["type"] == "warning"] == []
    names = {t["function"]["name"] for t in next(r for r in requests if r.get("tools"))["tools"]}
    assert {"north__lookup_ticket", "south__lookup_ticket"} <= names

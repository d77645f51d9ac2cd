"""Grounded debates through the CLI against the loopback server: the tool loop over `--ref`.

The loopback streams `tool_calls` as real servers do (id and name first, arguments in small
fragments), the real `openai` SDK reads them, and the next request must carry the results."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import LoopbackServer, cli
from tests.grounding_helpers import (
    call,
    debate_id,
    events,
    first_turn_calls,
    is_proposal,
    make_refs,
    run,
    tool_messages,
)


def test_a_streamed_tool_call_is_run_and_its_result_reaches_the_next_request(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    script = first_turn_calls(call("read_file", path="docs/plan.md"), call("search", query="journal"))
    with LoopbackServer(tool_calls=script) as server:
        result = run(server.base_url, refs)
        requests = server.requests
    assert result.returncode == 0, result.stderr
    offered = [r for r in requests if r.get("tools")]
    assert offered and {t["function"]["name"] for t in offered[0]["tools"]} == {"list_files", "read_file", "search"}
    follow = [r for r in requests if is_proposal(r) and tool_messages(r)]
    assert len(follow) == 2  # one per agent
    results = tool_messages(follow[0])
    assert results[0]["content"].startswith("docs/plan.md (lines 1–14 of 14)")
    assert " 5| Notes are kept in SQLite" in results[0]["content"]
    assert "docs/plan.md:5:" in results[1]["content"] and "journal" in results[1]["content"]
    calls = [m for m in follow[0]["messages"] if m["role"] == "assistant"][-1]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["read_file", "search"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"path": "docs/plan.md"}  # reassembled from fragments

    log = events()
    kinds = [e["type"] for e in log]
    started = [e["view"] for e in log if e["type"] == "call_started" and e["view"].get("tools")]
    assert started and all(not v.get("tool_steps") for v in started)  # each step is logged once, in its event
    assert kinds.count("tool_called") == 4 and kinds.count("tool_returned") == 4 and kinds.count("call_continued") == 2
    ready = next(e for e in log if e["type"] == "tools_ready")["setup"]
    assert sorted(r["path"] for r in ready["references"]) == [".gitignore", "docs/plan.md", "src/store.py"]
    assert all(len(r["sha256"]) == 64 for r in ready["references"])
    proposal = next(e["contribution"] for e in log if e["type"] == "contribution_added"
                    and e["contribution"]["type"] == "proposal")
    assert any(r.startswith("[✓ read_file: File: docs/plan.md | Lines: 1–14 of 14 | Type: markdown | Headings: "
                            "Notes service plan; Storage") for r in proposal["reads"])
    assert "stderr" not in result.stderr.lower() or "⚒" in result.stderr
    assert "⚒ architect → read_file" in result.stderr


def test_moot_context_shows_the_tool_messages_as_sent(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    with LoopbackServer(tool_calls=first_turn_calls(call("read_file", path="src/store.py"))) as server:
        assert run(server.base_url, refs).returncode == 0
        sent = next(r for r in server.requests if is_proposal(r) and tool_messages(r)
                    and "Software Architect" in r["messages"][0]["content"])
    shown = cli("context", debate_id(), "--round", "1", "--agent", "architect", "--phase", "proposal", "--json",
                "--state-dir", "debates")
    assert shown.returncode == 0, shown.stderr
    view = json.loads(shown.stdout)[0]
    assert view["messages"] == sent["messages"]  # byte for byte what the server received
    assert view["tools"] == ["list_files", "read_file", "search"] and view["tool_steps"] == 1
    assert view["tokens"]["tools"] > 0 and view["tokens"]["references"] > 0
    assert any(m["content"].startswith("## References and tools\n\nThe user gave this debate 3 reference files")
               for m in view["messages"])
    text = cli("context", debate_id(), "--round", "1", "--agent", "architect", "--phase", "proposal",
               "--state-dir", "debates").stdout
    assert "[tool] tools ·" in text and "class NoteStore" in text and "→ " in text


def test_the_loop_stops_at_max_calls_and_asks_for_an_answer_without_tools(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)

    def always(body: dict, n: int) -> list[dict] | None:  # a model that would read forever
        return [call("read_file", path="docs/plan.md", start_line=len(tool_messages(body)) % 10 + 1)] \
            if is_proposal(body) else None

    (tmp_path / "moot.toml").write_text("[tools]\nmax_calls = 3\n")
    with LoopbackServer(tool_calls=always) as server:
        result = run(server.base_url, refs, "-a", "architect", "-c", str(tmp_path / "moot.toml"))
        proposals = [r for r in server.requests if is_proposal(r)]
    assert result.returncode == 0, result.stderr
    assert len(proposals) == 4  # three turns that called a tool, then the answer
    assert all(r.get("tools") for r in proposals[:3]) and not proposals[3].get("tools")
    assert "Do not call tools any more" in proposals[3]["messages"][-1]["content"]


def test_a_hundred_tool_calls_in_one_answer_run_only_up_to_the_cap(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    many = [dict(call("read_file", path="docs/plan.md", start_line=i + 1), id=f"c{i}") for i in range(100)]
    with LoopbackServer(tool_calls=first_turn_calls(*many)) as server:
        result = run(server.base_url, refs, "-a", "architect")
        follow = next(r for r in server.requests if is_proposal(r) and tool_messages(r))
    assert result.returncode == 0, result.stderr
    results = tool_messages(follow)
    assert len(results) == 100  # every call gets its answer (the API requires it)
    assert sum(1 for m in results if "at most 10 tool calls" in m["content"]) == 90
    assert not follow.get("tools")


def test_malformed_cut_and_unknown_calls_get_tool_errors_the_model_recovers_from(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    script = first_turn_calls(
        {"name": "read_file", "arguments": '{"path": "docs/plan.md"'},                 # malformed
        dict(call("read_file", path="docs/plan.md"), cut=True),                         # cut off mid-stream
        call("delete_everything", path="."),                                            # unknown tool
        {"name": "read_file", "arguments": '["docs/plan.md"]'},                          # not an object
    )
    with LoopbackServer(tool_calls=script) as server:
        result = run(server.base_url, refs, "-a", "architect")
        follow = next(r for r in server.requests if is_proposal(r) and tool_messages(r))
    assert result.returncode == 0, result.stderr
    texts = [m["content"] for m in tool_messages(follow)]
    assert texts[0].startswith("error: the arguments are not valid JSON")
    assert texts[1].startswith("error: the arguments are not valid JSON")
    assert texts[2].startswith("error: there is no tool named 'delete_everything'; the tools are: list_files")
    assert texts[3] == "error: the arguments must be a JSON object"
    log = events()
    assert [e["ok"] for e in log if e["type"] == "tool_returned"] == [False] * 4
    assert any(e["type"] == "debate_completed" for e in log)


def test_a_reply_that_is_only_a_json_call_is_taken_as_the_call(tmp_path: Path) -> None:
    """Qwen2.5-Coder-0.5B's habit: a fenced JSON object in the text, no `tool_calls`."""
    refs = make_refs(tmp_path)

    def reply(body: dict, n: int) -> str:
        if is_proposal(body) and not tool_messages(body):
            return '```json\n{"name": "read_file", "arguments": {"path": "docs/plan.md"}}\n```'
        return "## Position\n\nKeep the journal first, as the plan says, and compact it nightly."

    with LoopbackServer(reply) as server:
        result = run(server.base_url, refs, "-a", "architect")
        follow = next(r for r in server.requests if is_proposal(r) and tool_messages(r))
    assert result.returncode == 0, result.stderr
    assert tool_messages(follow)[0]["content"].startswith("docs/plan.md (lines 1–14 of 14)")
    called = next(e for e in events() if e["type"] == "tool_called")
    assert called["tool"]["from_text"] is True and called["tool"]["name"] == "read_file"
    assert "(written as text)" in result.stderr


def test_the_demo_provider_reads_the_references_offline(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    result = cli("run", "Design the storage journal", "--ref", str(refs), "--provider", "demo", "-r", "1",
                 "--headless", "--state-dir", "debates", "-o", "solution.md")
    assert result.returncode == 0, result.stderr
    for tool in ("list_files", "read_file", "search"):
        assert f"→ {tool}(" in result.stderr
    report = cli("report", debate_id(), "--state-dir", "debates").stdout
    assert "DEMO" in report and "What the agents read" in report and "[✓ read_file: File: docs/plan.md" in report
    show = cli("show", debate_id(), "--state-dir", "debates").stdout
    assert "references: 3 files" in show


def test_a_reference_that_does_not_exist_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = cli("run", "Design a cache", "--ref", "no/such/folder", "--provider", "demo", "--headless",
                 "--state-dir", "debates")
    assert result.returncode == 2
    assert result.stderr.strip() == "moot: --ref no/such/folder: no such file or folder"
    assert not Path("debates").exists() or not any(Path("debates").iterdir())


async def test_pause_and_stop_act_between_turns_of_the_tool_loop(tmp_path: Path) -> None:
    """A pause asked while a tool runs holds the call before its next model turn (and is reported
    effective: nothing is in flight); a stop there ends the debate, resumable, the call redone."""
    import asyncio

    from moot.core.config import Overrides, build_config
    from moot.core.events import Event
    from moot.core.session import SessionOptions, new_session, resume_session

    refs = make_refs(tmp_path)
    cfg = build_config({"debate": {"references": [str(refs)]}}, Overrides(rounds=1, provider="demo",
                                                                          roles=["architect"]))
    session = new_session("Design the storage journal", cfg, SessionOptions(state_dir=tmp_path / "d", demo_delay=0))
    orch = session.orchestrator
    loop = asyncio.get_running_loop()
    seen: list[str] = []

    def listen(event: Event) -> None:
        seen.append(event.type)
        if event.type == "tool_returned" and seen.count("tool_returned") == 1:
            orch.pause()
        if event.type == "control" and getattr(event, "effective", False):
            assert "contribution_added" not in seen  # held inside the call, between its turns
            loop.call_later(0.05, orch.resume)
        if event.type == "tool_returned" and seen.count("tool_returned") == 2:
            orch.stop()

    orch.bus.listen(listen)
    state = await session.run()
    assert state.status == "stopped"
    assert seen.count("call_continued") == 2 and "contribution_added" not in seen
    again = resume_session(state.id, SessionOptions(state_dir=tmp_path / "d", demo_delay=0))
    final = await again.run()
    assert final.status == "completed"
    proposal = next(c for c in final.all_contributions() if c.type == "proposal")
    assert len(proposal.reads) == 3  # the call was redone whole: list, read, search


def test_retries_cost_caps_and_traces_cover_the_loop(tmp_path: Path) -> None:
    from tests.loopback import Faults

    refs = make_refs(tmp_path)

    def always(body: dict, n: int) -> list[dict] | None:
        return [call("search", query=f"journal {len(tool_messages(body))}")] if is_proposal(body) else None

    # The loop's second turn meets a 500 and is retried (same call, a retry event); a token cap
    # reached inside the loop ends it with an answer, not a failure.
    with LoopbackServer(tool_calls=always, faults=Faults(status_script=[200, 500])) as server:
        result = run(server.base_url, refs, "-a", "architect", "--max-tokens", "6000")
        proposals = [r for r in server.requests if is_proposal(r)]
    assert result.returncode == 0, result.stderr
    log = events()
    retried = [e for e in log if e["type"] == "call_failed" and e["will_retry"]]
    first = next(e["view"]["call_id"] for e in log if e["type"] == "call_started")
    assert retried and retried[0]["call_id"] == first
    assert "spending cap is reached" in proposals[-1]["messages"][-1]["content"] and not proposals[-1].get("tools")
    assert any(e["type"] == "contribution_added" and e["contribution"]["type"] == "proposal" for e in log)
    trace = json.loads(cli("trace", debate_id(), "--state-dir", "debates").stdout)
    spans = [s for rs in trace["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    tools = [s for s in spans if s["name"] == "execute_tool search"]
    assert tools
    attrs = {a["key"]: a["value"] for a in tools[0]["attributes"]}
    assert attrs["gen_ai.tool.name"] == {"stringValue": "search"} and attrs["gen_ai.operation.name"] == {
        "stringValue": "execute_tool"}
    chat = next(s for s in spans if s["spanId"] == tools[0]["parentSpanId"])
    assert chat["name"].startswith("chat ")

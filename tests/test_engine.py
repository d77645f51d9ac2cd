"""The debate engine through its public surfaces: the CLI, the event log and the real SDK."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moot.core.models.state import DebateState
from tests.conftest import Faults, cli, make_server, moot, read_jsonl, run_debate


def _check_structure(state: DebateState, agents: list[str], rounds: int) -> None:
    assert state.status == "completed"
    assert len(state.rounds) == rounds
    n = len(agents)
    for rnd in state.rounds:
        by_type: dict[str, list] = {"proposal": [], "critique": [], "refinement": []}
        for c in rnd.contributions:
            by_type[c.type].append(c)
        assert sorted(c.agent_id for c in by_type["proposal"]) == sorted(agents)
        assert sorted(c.agent_id for c in by_type["refinement"]) == sorted(agents)
        pairs = {(c.agent_id, c.target_agent_id) for c in by_type["critique"]}
        assert len(by_type["critique"]) == n * (n - 1) == len(pairs)
        assert all(a != t and t in agents for a, t in pairs)
        ids = [c.id for c in rnd.contributions]
        assert len(ids) == len(set(ids))
    assert state.final_solution is not None
    assert state.final_solution.description


def test_cli_demo_run_headless(tmp_path: Path) -> None:
    proc = moot("run", "Design a URL shortener", "--provider", "demo", "--headless", "-r", "2",
                "--state-dir", str(tmp_path / "D"), env={"MOOT_DEMO_DELAY": "0"})
    assert proc.returncode == 0, proc.stderr
    folders = list((tmp_path / "D").iterdir())
    assert len(folders) == 1
    state = DebateState.model_validate_json((folders[0] / "state.json").read_text())
    _check_structure(state, ["architect", "performance", "kiss"], 2)
    raw = json.loads((folders[0] / "state.json").read_text())
    assert raw["final_solution"]["description"] and isinstance(raw["final_solution"]["confidence"], int)
    assert "Confidence:" in proc.stdout
    assert str(folders[0]) in proc.stderr
    assert "round 2" in proc.stderr and "critique" in proc.stderr


async def test_openai_provider_debate_uses_server_replies_and_usage(tmp_path: Path) -> None:
    replies: dict[str, int] = {}

    def reply(body: dict, n: int) -> str:
        last = body["messages"][-1]["content"]
        if "confidence" in last and "JSON" in last:
            return json.dumps({"solution": f"final {n}", "confidence": 77, "tradeoffs": ["a"],
                               "recommendations": ["b"], "unresolved": []})
        text = f"## Reply {n}\n\nServer answer number {n}."
        replies[text] = n
        return text

    srv = make_server(reply=reply, faults=Faults(status_script=[429], retry_after=0.2, usage_offset=1000))
    try:
        state, folder = await run_debate(tmp_path, rounds=2, provider="openai", base_url=srv.base_url,
                                         roles=["architect", "security"])
    finally:
        srv.stop()
    _check_structure(state, ["architect", "security"], 2)
    for c in state.all_contributions():
        assert c.content in replies
        if c.carried_from:  # a round-2 proposal carried from the refinement: no call, no tokens
            assert c.metadata.prompt_tokens == 0
            continue
        assert c.metadata.prompt_tokens >= 1000  # the server's number (offset), not a local count
        assert c.metadata.completion_tokens > 0
    assert state.final_solution.confidence == 77
    assert state.final_solution.description == "final " + state.final_solution.description.split()[-1]
    events = read_jsonl(folder.events_path)
    retries = [e for e in events if e["type"] == "call_failed" and e["will_retry"]]
    assert len(retries) == 1 and "429" in retries[0]["error"]
    bodies = srv.requests
    assert all(b["stream"] is True and b["stream_options"] == {"include_usage": True} for b in bodies)


def test_event_log_order_and_fields(tmp_path: Path) -> None:
    import asyncio

    state, folder = asyncio.run(run_debate(tmp_path, rounds=2))
    events = read_jsonl(folder.events_path)
    assert events[0]["type"] == "debate_started" and events[-1]["type"] == "debate_completed"
    assert all({"type", "ts", "debate_id"} <= e.keys() and isinstance(e["ts"], float) for e in events)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert not any(e["type"] == "token" for e in events)  # streamed deltas are not persisted
    started: set[str] = set()
    phase_order: list[tuple[int, str]] = []
    current_round = 0
    for e in events:
        if e["type"] == "round_started":
            assert e["round"] == current_round + 1
            current_round = e["round"]
        elif e["type"] == "phase_started":
            phase_order.append((e["round"], e["phase"]))
        elif e["type"] == "call_started":
            started.add(e["view"]["call_id"])
        elif e["type"] == "contribution_added" and not e["contribution"].get("carried_from"):
            assert e["contribution"]["metadata"]["call_id"] in started
            assert e["contribution"]["round"] == current_round
    expected = [(r, p) for r in (1, 2) for p in ("summarize", "proposal", "critique", "refinement")] + [(2, "synthesis")]
    assert phase_order == expected


def test_bad_input_exit_codes(tmp_path: Path) -> None:
    missing = cli("run", "-p", str(tmp_path / "nope.md"), "--headless", "--provider", "demo")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "not found" in missing.stderr
    empty = tmp_path / "empty.md"
    empty.write_text("  \n")
    r = cli("run", "-p", str(empty), "--headless", "--provider", "demo")
    assert r.returncode == 2 and "empty" in r.stderr and "Traceback" not in r.stderr
    binary = tmp_path / "bin.md"
    binary.write_bytes(b"\x00\x01\x02abc")
    r = cli("run", "-p", str(binary), "--headless", "--provider", "demo")
    assert r.returncode == 2 and "binary" in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"debate": {"rounds": "three"}}))
    r = cli("run", "x", "-c", str(bad), "--headless", "--provider", "demo")
    assert r.returncode == 4 and r.stderr.count("\n") == 1 and "debate.rounds" in r.stderr and "three" in r.stderr
    role = tmp_path / "role.json"
    role.write_text(json.dumps({"agents": [{"id": "a", "role": "wizard"}]}))
    r = cli("run", "x", "-c", str(role), "--headless", "--provider", "demo")
    assert r.returncode == 4 and "agents[0].role" in r.stderr and "wizard" in r.stderr
    r = cli("run", "x", "-a", "architect,wizard", "--headless", "--provider", "demo")
    assert r.returncode == 2 and "wizard" in r.stderr  # a bad argument (the README's exit 2); in a file it is 4
    r = cli("show", "no-such-debate", "--state-dir", str(tmp_path))
    assert r.returncode == 2 and "no debate" in r.stderr


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_config_file_formats_and_two_level_merge(tmp_path: Path, suffix: str) -> None:
    from moot.core.config import Overrides, load_config, resolve_agent

    data = {
        "debate": {"rounds": 4, "summarization": {"threshold": 3000, "method": "rule-based"}},
        "agents": [
            {"id": "arch", "role": "architect", "summarization": {"threshold": 9000}},
            {"id": "sec", "role": "security", "context": {"max_context_tokens": 2500}},
        ],
        "judge": {"id": "judge", "role": "generalist", "temperature": 0.1},
    }
    path = tmp_path / f"cfg{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(data))
    else:
        import tomli_w

        path.write_text(tomli_w.dumps(data))
    cfg = load_config(path, Overrides(model="m-1"))
    arch = resolve_agent(cfg.agents[0], cfg, "demo")
    sec = resolve_agent(cfg.agents[1], cfg, "demo")
    assert cfg.debate.rounds == 4
    assert arch.summarization.threshold == 9000 and arch.summarization.method == "rule-based"
    assert sec.summarization.threshold == 3000
    assert sec.context.max_context_tokens == 2500 and sec.context.reserve_output_tokens == 1000
    assert arch.model == sec.model == "m-1" == cfg.judge.model


def test_config_defaults_and_moot_toml(tmp_path: Path) -> None:
    from moot.core.config import load_config

    cfg = load_config(None, cwd=tmp_path)
    assert [a.role for a in cfg.agents] == ["architect", "performance", "kiss"]
    assert cfg.judge.role == "generalist" and cfg.debate.rounds == 3
    (tmp_path / "moot.toml").write_text('[debate]\nrounds = 5\n[[agents]]\nid = "t"\nrole = "testing"\n')
    cfg = load_config(None, cwd=tmp_path)
    assert cfg.debate.rounds == 5 and [a.id for a in cfg.agents] == ["t"]


@pytest.mark.parametrize(
    "data, fragment",
    [
        ({"debate": {"rounds": 0}}, "debate.rounds"),
        ({"agents": [{"id": "a"}, {"id": "a"}]}, "duplicate agent id"),
        ({"agents": [{"id": "a", "temperature": "hot"}]}, "agents[0].temperature"),
        ({"debate": {"summarization": {"method": "magic"}}}, "debate.summarization.method"),
        ({"agents": [{"id": "a", "summarization": {"treshold": 1}}]}, "treshold"),
        ({"debat": {}}, "unknown field 'debat'"),
        ({"debate": {"context": {"max_context_tokens": 1000, "reserve_output_tokens": 2000}}}, "reserve_output_tokens"),
    ],
)
def test_config_validation_messages(data: dict, fragment: str) -> None:
    from moot.core.config import ConfigError, Overrides, build_config

    with pytest.raises(ConfigError) as err:
        build_config(data, Overrides())
    assert fragment in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "reply, confidence, parsed",
    [
        ('{"solution": "S", "confidence": 88, "tradeoffs": ["t"]}', 88, True),
        ('Here you go:\n```json\n{"solution": "S", "confidence": "75%"}\n```', 75, True),
        ('{"solution": "S", "confidence": 0.9}', 90, True),
        ('{"solution": "S", "confidence": 250}', 100, True),
        ('{"solution": "S", "confidence": null}', None, True),
        ("Just prose, no JSON at all.", None, False),
        ('{"solution": "S", "confid', None, False),
        ("", None, False),
    ],
)
def test_judge_parsing_is_tolerant(reply: str, confidence: int | None, parsed: bool) -> None:
    from moot.core.judge import parse_solution

    sol = parse_solution(reply)
    assert sol.confidence == confidence and sol.parsed is parsed
    assert sol.description


async def test_judge_non_json_reply_is_kept_as_text(tmp_path: Path) -> None:
    srv = make_server(reply=lambda body, n: ("Plain prose verdict." if "confidence" in body["messages"][-1]["content"]
                                             else f"ok {n}"))
    try:
        state, folder = await run_debate(tmp_path, rounds=1, provider="openai", base_url=srv.base_url, roles=["kiss"])
    finally:
        srv.stop()
    assert state.status == "completed"
    assert state.final_solution.description == "Plain prose verdict." and state.final_solution.confidence is None
    assert any(e["type"] == "warning" and "not JSON" in e["message"] for e in read_jsonl(folder.events_path))


async def test_pause_resume_stop_at_call_boundaries(tmp_path: Path) -> None:
    import asyncio

    from moot.core.config import Overrides, build_config
    from moot.core.session import SessionOptions, new_session

    cfg = build_config({}, Overrides(rounds=3, provider="demo"))
    session = new_session("Design a cache", cfg, SessionOptions(state_dir=tmp_path / "d", demo_delay=0.002))
    orch = session.orchestrator
    task = asyncio.create_task(session.run())
    while not orch.state.all_contributions():
        await asyncio.sleep(0.005)
    orch.pause()
    await asyncio.sleep(0.2)  # calls in flight finish; no new call starts
    n = len(orch.state.all_contributions())
    await asyncio.sleep(0.3)
    assert len(orch.state.all_contributions()) == n
    orch.resume()
    while len(orch.state.all_contributions()) <= n:
        await asyncio.sleep(0.005)
    orch.stop()
    state = await asyncio.wait_for(task, 10)
    assert state.status == "stopped"
    saved = session.folder.load()
    assert saved.status == "stopped" and len(saved.all_contributions()) == len(state.all_contributions())


def test_slow_subscriber_never_stalls_or_loses_events(tmp_path: Path) -> None:
    import asyncio

    from moot.core.config import Overrides, build_config
    from moot.core.session import SessionOptions, new_session

    async def main() -> tuple[int, int, int]:
        cfg = build_config({}, Overrides(rounds=1, provider="demo"))
        session = new_session("Design a queue", cfg, SessionOptions(state_dir=tmp_path / "d", demo_delay=0))
        sub = session.bus.subscribe("slow")
        sub.TOKEN_BACKLOG = 50  # a small backlog so this short debate overflows it
        await session.run()  # the debate finishes though nobody read the slow queue
        seen = []
        while not sub.queue.empty():
            e = sub.queue.get_nowait()
            if e is not None and e.type != "token":
                seen.append(e.seq)
        on_disk = len(read_jsonl(session.folder.events_path))
        return len(seen), on_disk, sub.dropped_tokens

    seen, on_disk, dropped = asyncio.run(main())
    assert seen == on_disk  # every non-token event reached the slow subscriber
    assert dropped > 0  # while token deltas were shed


def test_list_and_show(tmp_path: Path) -> None:
    import asyncio

    state, folder = asyncio.run(run_debate(tmp_path, rounds=1))
    r = cli("list", "--state-dir", str(folder.path.parent))
    assert r.returncode == 0 and state.id in r.stdout and "completed" in r.stdout
    r = cli("show", state.id, "--state-dir", str(folder.path.parent))
    assert r.returncode == 0 and "Confidence" in r.stdout

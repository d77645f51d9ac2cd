"""`moot call`: one recorded call sent again, as it was or edited, saved as an experiment.

The debate runs against the loopback OpenAI-compatible server, which records each request,
so "exactly the recorded messages" is compared with what the server received.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LoopbackServer, cli, run_debate
from tests.prose import loopback_reply

KEY = "sk-test-experiment-key-4711"
CONFIG = {"agents": [{"id": "architect", "role": "architect"}, {"id": "performance", "role": "performance"},
                     {"id": "kiss", "role": "kiss"}]}


def _debate(tmp_path: Path, srv: LoopbackServer) -> tuple[str, Path]:
    state, folder = asyncio.run(run_debate(tmp_path, config=CONFIG, rounds=2, provider="openai",
                                           base_url=srv.base_url))
    assert state.status == "completed"
    return state.id, folder.path


def _log_hashes(folder: Path) -> dict[str, str]:
    return {n: hashlib.sha256((folder / n).read_bytes()).hexdigest() for n in ("events.jsonl", "state.json")}


def _view(debate: str, state_dir: Path, *where: str, target: str | None = None) -> dict[str, Any]:
    out = cli("context", debate, *where, "--json", "--state-dir", str(state_dir))
    assert out.returncode == 0, out.stderr
    (call,) = [c for c in json.loads(out.stdout) if target is None or c["target_agent_id"] == target]
    return dict(call)


def _experiments(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((folder / "experiments").glob("exp-*.json"))]


def test_call_sends_the_recorded_view_exactly_and_saves_an_experiment(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    where = ["--round", "2", "--agent", "architect", "--phase", "critique"]
    with LoopbackServer(reply=loopback_reply) as srv:
        debate, folder = _debate(tmp_path, srv)
        state_dir = folder.parent
        before = _log_hashes(folder)
        view = _view(debate, state_dir, *where, target="kiss")
        sent = len(srv.requests)
        out = cli("call", debate, *where, "--target", "kiss", "--state-dir", str(state_dir))
        assert out.returncode == 0, out.stderr
        (body,) = srv.requests[sent:]
    assert body["messages"] == view["messages"]  # byte for byte what `moot context` shows
    assert body["model"] == view["model"] and body["max_tokens"] == view["max_tokens"]
    assert _log_hashes(folder) == before  # the debate itself never changes
    (exp,) = _experiments(folder)
    reply = exp["replies"][0]["text"]
    assert reply and reply in out.stdout
    assert exp["messages"] == view["messages"] and exp["call_id"] == view["call_id"]
    assert exp["recorded_reply"] and exp["replies"][0]["diff"]
    assert exp["replies"][0]["prompt_tokens"] > 0
    assert KEY not in (folder / "experiments" / f"{exp['id']}.json").read_text()
    shown = cli("show", debate, "--state-dir", str(state_dir))
    assert f"experiment {exp['id']}: round 2 architect critique → kiss, as recorded" in shown.stdout


def test_call_sends_edited_messages_and_asks_k_times(tmp_path: Path) -> None:
    where = ["--round", "1", "--agent", "kiss", "--phase", "proposal"]
    with LoopbackServer(reply=loopback_reply) as srv:
        debate, folder = _debate(tmp_path, srv)
        state_dir = folder.parent
        view = _view(debate, state_dir, *where)
        edited = [dict(m) for m in view["messages"]]
        edited[-1]["content"] += "\n\nKeep the whole design to a single process and say what it gives up."
        path = tmp_path / "edited.json"
        path.write_text(json.dumps(edited))
        sent = len(srv.requests)
        out = cli("call", debate, *where, "--messages", str(path), "-n", "3", "--temperature", "0.9",
                  "--state-dir", str(state_dir))
        assert out.returncode == 0, out.stderr
        bodies = srv.requests[sent:]
    assert [b["messages"] for b in bodies] == [edited] * 3
    assert [b.get("seed") for b in bodies] == [1, 2, 3] and {b["temperature"] for b in bodies} == {0.9}
    (exp,) = _experiments(folder)
    assert exp["edited"] and len(exp["replies"]) == 3
    assert out.stdout.count("─── reply") == 3


def test_a_bad_message_file_is_refused_before_any_request(tmp_path: Path) -> None:
    where = ["--round", "1", "--agent", "kiss", "--phase", "proposal"]
    huge = [{"role": "user", "content": " ".join(f"The shard map moves key range {i} to node {i % 7}."
                                                 for i in range(40_000))}]
    bad = {"not-a-list.json": {"role": "user", "content": "A single message, not a list."},
           "no-role.json": [{"content": "Which store holds the short codes?"}],
           "too-long.json": huge}
    with LoopbackServer(reply=loopback_reply) as srv:
        debate, folder = _debate(tmp_path, srv)
        sent = len(srv.requests)
        for name, data in bad.items():
            path = tmp_path / name
            path.write_text(json.dumps(data))
            out = cli("call", debate, *where, "--messages", str(path), "--state-dir", str(folder.parent))
            assert out.returncode == 2, (name, out.stderr)
            assert len(out.stderr.strip().splitlines()) == 1 and name in out.stderr, out.stderr
        assert "more than" in out.stderr
        assert len(srv.requests) == sent
    assert not (folder / "experiments").exists()

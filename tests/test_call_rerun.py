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
    found = [json.loads(p.read_text()) for p in (folder / "experiments").glob("exp-*.json")]
    return sorted(found, key=lambda e: e["created_at"])


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


SUMMARIZED = {"agents": [{"id": "architect", "role": "architect"}, {"id": "performance", "role": "performance"},
                         {"id": "kiss", "role": "kiss", "context": {"max_context_tokens": 3000}}],
              "debate": {"summarization": {"method": "rule-based", "threshold": 1500}}}


def _summarized_call(tmp_path: Path, srv: LoopbackServer) -> tuple[str, Path, dict[str, Any], list[str]]:
    """A debate whose round-3 architect refinement read a summary, that call's view, and the flags naming it."""
    state, folder = asyncio.run(run_debate(tmp_path, config=SUMMARIZED, rounds=3, provider="openai",
                                           base_url=srv.base_url))
    assert state.status == "completed"
    where = ["--round", "3", "--agent", "architect", "--phase", "refinement"]
    view = _view(state.id, folder.path.parent, *where)
    assert view["summary_id"], "the refinement should have read a summary"
    return state.id, folder.path, view, where


def test_call_with_its_summary_replaced_or_removed(tmp_path: Path) -> None:
    with LoopbackServer(reply=loopback_reply) as srv:
        debate, folder, view, where = _summarized_call(tmp_path, srv)
        state_dir = folder.parent
        sent = len(srv.requests)
        out = cli("call", debate, *where, "--summary", "none", "--state-dir", str(state_dir))
        assert out.returncode == 0, out.stderr
        (bare,) = srv.requests[sent:]
        sent = len(srv.requests)
        out = cli("call", debate, *where, "--summary", "llm", "--state-dir", str(state_dir))
        assert out.returncode == 0, out.stderr
        summarizing, swapped = srv.requests[sent:]
    text = [m["content"] for m in bare["messages"]]
    assert not any(t.startswith("## Summary of your earlier debate") for t in text)
    assert "Round 1 · your proposal" in "\n".join(text)  # what the summary stood in for, verbatim
    assert bare["messages"][-1] == view["messages"][-1]  # the same task
    assert summarizing["messages"][-1]["content"].startswith("# Summarize your debate history")
    summary = next(m["content"] for m in swapped["messages"] if m["content"].startswith("## Summary of your"))
    assert summary != next(m["content"] for m in view["messages"] if m["content"].startswith("## Summary of your"))
    assert swapped["messages"][0] == view["messages"][0] and swapped["messages"][-1] == view["messages"][-1]
    none, llm = _experiments(folder)
    assert (none["summary"], llm["summary"]) == ("none", "llm")
    assert none["messages"] == bare["messages"] and llm["messages"] == swapped["messages"]


def test_summary_none_that_does_not_fit_is_refused_by_how_much(tmp_path: Path) -> None:
    with LoopbackServer(reply=loopback_reply) as srv:
        debate, folder, _, _ = _summarized_call(tmp_path, srv)
        where = ["--round", "3", "--agent", "kiss", "--phase", "refinement"]
        sent = len(srv.requests)
        out = cli("call", debate, *where, "--summary", "none", "--state-dir", str(folder.parent))
        assert len(srv.requests) == sent
    assert out.returncode == 2 and "more than a view may hold" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_call_edit_sends_what_the_editor_saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shlex
    import sys

    script = tmp_path / "editor.py"
    script.write_text("import json, sys\n"
                      "path = sys.argv[1]\n"
                      "messages = json.load(open(path))\n"
                      "messages[-1]['content'] += '\\n\\nAssume the team has one on-call engineer.'\n"
                      "json.dump(messages, open(path, 'w'))\n")
    monkeypatch.setenv("EDITOR", f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    monkeypatch.delenv("VISUAL", raising=False)
    where = ["--round", "1", "--agent", "kiss", "--phase", "proposal"]
    with LoopbackServer(reply=loopback_reply) as srv:
        debate, folder = _debate(tmp_path, srv)
        view = _view(debate, folder.parent, *where)
        sent = len(srv.requests)
        out = cli("call", debate, *where, "--edit", "--state-dir", str(folder.parent))
        assert out.returncode == 0, out.stderr
        (body,) = srv.requests[sent:]
        monkeypatch.setenv("EDITOR", f"{shlex.quote(sys.executable)} -c 'raise SystemExit(3)'")
        refused = cli("call", debate, *where, "--edit", "--state-dir", str(folder.parent))
        assert len(srv.requests) == sent + 1
    assert body["messages"][:-1] == view["messages"][:-1]
    assert body["messages"][-1]["content"] == view["messages"][-1]["content"] + \
        "\n\nAssume the team has one on-call engineer."
    assert refused.returncode == 2 and "exited with 3" in refused.stderr
    (exp,) = _experiments(folder)
    assert exp["edited"]


def test_experiments_show_in_the_reports_under_the_call_they_vary(tmp_path: Path) -> None:
    rerun = [False]
    hostile = ("I would keep a single region and move the counters into one queue <script>alert(1)</script> "
               "\x1b[31mbecause the write rate allows it\x1b[0m.")

    def answer(body: dict[str, Any], n: int) -> str:
        return hostile if rerun[0] else loopback_reply(body, n)

    where = ["--round", "1", "--agent", "kiss", "--phase", "proposal"]
    with LoopbackServer(reply=answer) as srv:
        debate, folder = _debate(tmp_path, srv)
        state_dir = folder.parent
        rerun[0] = True
        out = cli("call", debate, *where, "--temperature", "0.9", "--state-dir", str(state_dir))
        assert out.returncode == 0, out.stderr
    (exp,) = _experiments(folder)
    md = cli("report", debate, "--state-dir", str(state_dir))
    assert md.returncode == 0, md.stderr
    text = md.stdout
    head = f"Experiment {exp['id']}: as recorded"
    assert head in text and "\x1b" not in text
    # Under kiss's round-1 proposal: after its heading, before the next contribution's.
    at = text.index(head)
    assert text.rindex("\n### ", 0, at) + 1 == text.index("### Proposal: kiss")
    assert "move the counters into one queue" in text[at:] and "Word diff against the recorded reply" in text[at:]
    page = cli("report", debate, "--html", "--state-dir", str(state_dir)).stdout
    assert head in page and "<script>" not in page and "&lt;script&gt;" in page and "\x1b" not in page
    kiss = page.index('id="saw-kiss"') if 'id="saw-kiss"' in page else page.index(">kiss ·")
    assert kiss < page.index(head)

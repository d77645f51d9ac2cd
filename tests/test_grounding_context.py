"""Tool output as managed context: the retrieval tier where tools cannot be called, priority
trimming to extracts inside a call, and a resume that says which references changed."""

from __future__ import annotations

from pathlib import Path

from moot.core import tokens
from tests.conftest import LoopbackServer, cli
from tests.grounding_helpers import PROBLEM, call, events, is_proposal, make_refs, run, tool_messages
from tests.loopback import ModelServer


def _passages(body: dict) -> str:
    return next((m["content"] for m in body["messages"] if m["role"] == "user"
                 and m["content"].startswith("## Reference passages")), "")


def test_an_endpoint_that_refuses_tools_gets_the_retrieval_tier_and_is_not_offered_tools_again(
        tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    with LoopbackServer(refuse_tools=True) as server:
        result = run(server.base_url, refs)
        requests = server.requests
    assert result.returncode == 0, result.stderr
    offered = [i for i, r in enumerate(requests) if r.get("tools")]
    assert 1 <= len(offered) <= 2  # the two proposals start together; the refusal is remembered from then on
    assert not any(r.get("tools") for r in requests[max(offered) + 1:])
    after = next(r for r in requests[min(offered) + 1:] if is_proposal(r) and not r.get("tools"))
    passages = _passages(after)
    assert "### docs/plan.md · lines 1–" in passages and "Notes are kept in SQLite" in passages
    assert "hunter2" not in str(requests) and "generated output" not in str(requests)
    assert sum(1 for r in requests if _passages(r)) >= 4  # proposals, critiques, refinements all get them
    failed = [e for e in events() if e["type"] == "call_failed"]
    assert any("does not take tools" in e["error"] for e in failed)
    shown = cli("context", _id(), "--round", "1", "--agent", "architect", "--phase", "proposal", "--state-dir",
                "debates").stdout
    assert "[user] references ·" in shown
    assert (next(Path("debates").glob("*/search.sqlite"))).stat().st_size > 0  # the one search index holds them


def test_a_server_whose_props_say_no_tools_is_never_offered_them(tmp_path: Path) -> None:
    """llama.cpp reports `chat_template_caps.supports_tools: false` for SmolLM2's template."""
    refs = make_refs(tmp_path)
    with LoopbackServer(model=ModelServer(window=16000, supports_tools=False)) as server:
        result = run(server.base_url, refs, "-a", "architect")
        requests = server.requests
    assert result.returncode == 0, result.stderr
    assert not any(r.get("tools") for r in requests)
    proposal = next(r for r in requests if is_proposal(r))
    assert "docs/plan.md · lines" in _passages(proposal)


def test_retrieve_mode_by_config(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    Path("moot.toml").write_text("[tools]\nmode = \"retrieve\"\nreferences_tokens = 300\n")
    with LoopbackServer() as server:
        result = run(server.base_url, refs, "-a", "architect", "-c", "moot.toml")
        requests = server.requests
    assert result.returncode == 0, result.stderr
    assert not any(r.get("tools") for r in requests)
    passages = _passages(next(r for r in requests if is_proposal(r)))
    assert passages and tokens.count_text(passages, "gpt-4o-mini") <= 300


def test_the_oldest_results_give_way_to_extracts_and_no_request_passes_the_budget(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    lines = [f"Line {i}: the compaction job folds journal segment {i} into tenant table {i % 7} and records the "
             f"checkpoint it reached, so a restart resumes from segment {i}." for i in range(1, 121)]
    for name in ("a", "b", "c"):
        (refs / "docs" / f"{name}.md").write_text(f"# Segment notes {name}\n\n" + "\n".join(lines) + "\n")

    def script(body: dict, n: int) -> list[dict] | None:
        done = len(tool_messages(body))
        if is_proposal(body) and done < 3:
            return [call("read_file", path=f"docs/{'abc'[done]}.md")]
        return None

    Path("moot.toml").write_text("[debate.context]\nmax_context_tokens = 4000\nreserve_output_tokens = 500\n"
                                 "[tools]\nresult_tokens = 1000\n")
    with LoopbackServer(tool_calls=script) as server:
        result = run(server.base_url, refs, "-a", "architect", "-c", "moot.toml")
        proposals = [r for r in server.requests if is_proposal(r)]
    assert result.returncode == 0, result.stderr
    last = tool_messages(proposals[-1])
    assert last[0]["content"].startswith("[✓ read_file: File: docs/a.md | Lines: 1–")  # the oldest, as an extract
    assert last[-1]["content"].startswith("docs/c.md (lines 1–")  # the newest, in full
    for body in proposals:
        assert tokens.count_messages(body["messages"], "gpt-4o-mini") <= 3500
    steps = [e for e in events() if e["type"] == "call_continued"]
    assert steps[-1]["step"]["extracted"] and all(e["tokens"]["total"] <= 3500 for e in steps)


def test_a_resume_says_which_reference_files_changed(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    broken = {"on": True}

    def reply(body: dict, n: int) -> str:
        last = body["messages"][-1]["content"]
        if broken["on"] and "refine" in last.lower() and "critiques" in last.lower():
            raise RuntimeError("the refinement model is down")
        return "## Position\n\nKeep the journal first and compact it nightly, as the plan says."

    Path("moot.toml").write_text("[debate]\nmax_retries = 0\n")
    with LoopbackServer(reply) as server:
        first = run(server.base_url, refs, "-a", "architect,kiss", "-c", "moot.toml")
        assert first.returncode == 3, first.stderr
        (refs / "docs" / "plan.md").write_text("# Notes service plan\n\nNow with a write-ahead log.\n")
        broken["on"] = False
        again = cli("resume", _id(), "--headless", "--state-dir", "debates")
    assert again.returncode == 0, again.stderr
    assert "1 reference file changed since the debate started: docs/plan.md" in again.stderr
    assert sum(1 for e in events() if e["type"] == "tools_ready") == 2
    assert PROBLEM


def _id() -> str:
    return next(p.name for p in Path("debates").iterdir() if p.is_dir() and not p.name.startswith("."))


def test_what_an_agent_read_is_in_its_history_and_opens_its_summaries(tmp_path: Path) -> None:
    from moot.core.storage.folder import DebateFolder

    refs = make_refs(tmp_path)
    Path("moot.toml").write_text("[debate.summarization]\nthreshold = 500\nmethod = \"hybrid\"\n")
    result = cli("run", "Design the storage journal", "--ref", str(refs), "--provider", "demo", "-r", "2",
                 "-a", "architect,kiss", "--headless", "-c", "moot.toml", "--state-dir", "debates")
    assert result.returncode == 0, result.stderr
    state = DebateFolder(Path("debates") / _id()).load()
    summaries = [s for r in state.rounds for s in r.summaries.values() if s.agent_id == "architect"]
    assert summaries, "the low threshold makes round 2 summarize"
    # Under the block's label (append-only summaries), the summary opens with the sources read.
    body = summaries[-1].summary.split("\n\n", 1)[1] if summaries[-1].summary.startswith("### ") else summaries[-1].summary
    assert body.startswith("Sources read with tools:\n- [✓ list_files: Path: . | Entries: 3")
    assert "[✓ read_file: File: docs/plan.md" in summaries[-1].summary
    summarize = next(v for r in state.rounds for v in r.calls if v.agent_id == "architect" and v.phase == "summarize")
    shown = cli("context", _id(), "--round", str(summarize.round), "--agent", "architect", "--phase", "summarize",
                "--state-dir", "debates").stdout
    assert "Sources read with tools:\n- [✓ list_files: Path: ." in shown  # the LLM summarizer read it too
    assert "- [✓ read_file: File: docs/plan.md | Lines: 1–14 of 14" in shown

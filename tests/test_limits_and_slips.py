"""Limits and slips, through the CLI: non-finite durations, flags out
of range, resume while clarifying questions wait for answers, and the summaries a round
keeps (made once, all listed).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from moot.core.providers.demo import DEFAULT_DELAY_S, DemoProvider
from moot.core.storage.folder import DebateFolder
from tests.conftest import read_jsonl, run_debate
from tests.test_bad_input import _one_line, cli
from tests.test_resume import TRACEBACK, cli_env, only_debate


@pytest.fixture(autouse=True)
def _demo_speed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOOT_DEMO_DELAY", "0")


@pytest.mark.parametrize(("setting", "value"), [("timeout_s", "inf"), ("timeout_s", "nan"), ("timeout_s", "0"),
                                                ("max_cost_usd", "inf"), ("max_cost_usd", "nan")])
def test_non_finite_durations_and_caps_are_config_errors(tmp_path: Path, setting: str, value: str) -> None:
    """`timeout_s = inf` (valid TOML) ran, was saved as null and could not be resumed."""
    cfg = tmp_path / "moot.toml"
    cfg.write_text(f"[debate]\n{setting} = {value}\n")
    r = cli("run", "x", "-c", str(cfg), "--provider", "demo", "--headless", "--state-dir", str(tmp_path / "D"))
    _one_line(r, 4, f"debate.{setting}")
    assert not (tmp_path / "D").exists()


def test_a_config_that_runs_resumes(tmp_path: Path) -> None:
    cfg = tmp_path / "moot.toml"
    cfg.write_text("[debate]\ntimeout_s = 2.5\nmax_cost_usd = 1e9\nmax_retries = 0\n")
    sd = tmp_path / "D"
    assert cli("run", "x", "-c", str(cfg), "--provider", "demo", "--headless", "-r", "2", "-a", "kiss",
               "--state-dir", str(sd)).returncode == 0
    folder = only_debate(sd)
    lines = (folder / "events.jsonl").read_bytes().split(b"\n")
    (folder / "events.jsonl").write_bytes(b"\n".join(lines[: len(lines) // 2]) + b"\n")
    (folder / "state.json").unlink()
    r = cli("resume", folder.name, "--headless", "--state-dir", str(sd))
    assert r.returncode == 0, r.stderr
    saved = DebateFolder(folder).load().config["debate"]
    assert saved["timeout_s"] == 2.5 and saved["max_cost_usd"] == 1e9


@pytest.mark.parametrize("argv", [["-r", "100000"], ["-r", "0"], ["--turns", "100001"], ["--demo-delay", "inf"],
                                  ["--demo-delay", "nan"], ["--demo-delay", "-1"], ["--max-cost", "inf"]])
def test_flags_out_of_range_are_bad_arguments(tmp_path: Path, argv: list[str]) -> None:
    r = cli("run", "x", *argv, "--provider", "demo", "--headless", "--state-dir", str(tmp_path / "D"))
    _one_line(r, 2, argv[0])
    assert not (tmp_path / "D").exists()


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "soon"])
def test_a_non_finite_demo_delay_in_the_environment_keeps_the_default(monkeypatch: pytest.MonkeyPatch,
                                                                        value: str) -> None:
    monkeypatch.setenv("MOOT_DEMO_DELAY", value)
    delay = DemoProvider().delay_s
    assert delay == DEFAULT_DELAY_S


def test_resume_while_questions_wait_for_answers_never_asks_the_agents_again(tmp_path: Path) -> None:
    """Killed while `--clarify` waits for the user's answers: resume asks the user the recorded
    questions, never the agents (no new calls, no new cost)."""
    sd = tmp_path / "D"
    proc = subprocess.Popen([sys.executable, "-m", "moot", "run", "Design a URL shortener", "--provider", "demo",
                             "--headless", "--clarify", "-r", "1", "-a", "kiss,security", "--state-dir", str(sd)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=cli_env(MOOT_DEMO_DELAY="0"))
    deadline = time.monotonic() + 30
    while not (sd.is_dir() and any((p / "events.jsonl").exists() and b"clarifications_asked" in
                                   (p / "events.jsonl").read_bytes() for p in sd.iterdir())):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    folder = only_debate(sd)
    before = read_jsonl(folder / "events.jsonl")
    asked = next(e for e in before if e["type"] == "clarifications_asked")["questions"]
    calls_before = [e["view"]["call_id"] for e in before if e["type"] == "call_started"]
    assert asked and len(calls_before) == 2  # one clarify call per agent, then the wait

    r = subprocess.run([sys.executable, "-m", "moot", "resume", folder.name, "--headless", "--state-dir", str(sd)],
                       input="Postgres\n", capture_output=True, text=True, timeout=60,
                       env=cli_env(MOOT_DEMO_DELAY="0"))
    assert r.returncode == 0, r.stderr
    assert TRACEBACK not in r.stderr and asked[0]["question"] in r.stderr  # the user is asked again
    after = read_jsonl(folder / "events.jsonl")
    clarify_calls = [e for e in after if e["type"] == "call_started" and e["view"]["phase"] == "clarify"]
    assert len(clarify_calls) == 2  # the two calls before the kill; none after it
    state = DebateFolder(folder).load()
    assert [c.question for c in state.clarifications] == [q["question"] for q in asked]
    assert state.clarifications[0].answer == "Postgres"
    assert state.totals.calls == len([e for e in after if e["type"] == "call_started"])


def test_a_manual_summary_the_automatic_one_already_covers_is_not_made_twice(tmp_path: Path) -> None:
    """`/pause`, `/summarize architect`, `/resume` right after a round's automatic summaries:
    the architect's summary is made once, with a warning saying why."""

    def arm(session) -> None:  # noqa: ANN001
        def on_event(event) -> None:  # noqa: ANN001
            if event.type == "phase_started" and event.round == 2 and event.phase == "proposal":
                session.orchestrator.request_summary("architect")

        session.bus.listen(on_event)

    # Proposals are called for (not carried over), so the architect's next call follows the
    # automatic summary with nothing new in between.
    config = {"debate": {"summarization": {"threshold": 500}, "carry_refinements": False}}
    _, folder = asyncio.run(run_debate(tmp_path, config=config, rounds=2, before_run=arm))
    events = read_jsonl(folder.events_path)
    made = [e for e in events if e["type"] == "summary_added" and e["summary"]["agent_id"] == "architect"
            and e["summary"]["round"] == 2]
    assert [e["summary"]["trigger"] for e in made] == ["chars"]
    assert any(e["type"] == "warning" and "already covers its whole history" in e["message"] for e in events)


def test_show_and_report_list_every_summary_of_a_round(tmp_path: Path) -> None:
    """An automatic then a manual summary in one round (new material in between): both are kept,
    and `moot show` and `moot report` list both, the earlier one marked as replaced."""

    def arm(session) -> None:  # noqa: ANN001
        def on_event(event) -> None:  # noqa: ANN001
            if event.type == "phase_started" and event.round == 2 and event.phase == "critique":
                session.orchestrator.request_summary("architect")

        session.bus.listen(on_event)

    _, folder = asyncio.run(run_debate(tmp_path, config={"debate": {"summarization": {"threshold": 500}}},
                                       rounds=2, before_run=arm))
    sd = str(folder.path.parent)
    logged = [e for e in read_jsonl(folder.events_path) if e["type"] == "summary_added"]
    shown = cli("show", folder.id, "--state-dir", sd)
    line = next(ln for ln in shown.stdout.splitlines() if ln.startswith("round 2:"))
    assert line.count("→") == sum(e["summary"]["round"] == 2 and not e.get("judge") for e in logged)
    assert line.count("(replaced)") == 1
    report = cli("report", folder.id, "--state-dir", sd).stdout
    assert report.count("(replaced later this round)") == 1
    assert report.count("<summary>Summary for ") == len(logged)  # the judge's summary of the final round too
    assert json.loads(cli("show", folder.id, "--json", "--state-dir", sd).stdout)["rounds"][1]["replaced_summaries"]

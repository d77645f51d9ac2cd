"""The command's small promises: --version, `moot list`, role typos, what an interrupted run
says, stdout's first line, and `moot eval` without a config — each through `moot.cli.main`
or the real command in a subprocess."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from moot import __version__
from moot.core.safety.sanitize import UNSAFE
from tests.conftest import ROOT, cli, make_server, manual, moot, read_jsonl, run_debate

TRACEBACK = "Traceback (most recent call last)"
DEMO = {"MOOT_DEMO_DELAY": "0"}




def _one_error_line(r: SimpleNamespace, code: int) -> str:
    assert r.returncode == code, (r.returncode, r.stderr)
    assert TRACEBACK not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("moot: "), r.stderr
    return str(lines[0])


# ---------------------------------------------------------------- --version


def test_version_in_process_and_as_a_command() -> None:
    r = cli("--version")
    assert r.returncode == 0 and r.stdout == f"moot {__version__}\n"
    proc = subprocess.run([sys.executable, "-m", "moot", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == f"moot {__version__}" and not proc.stderr


def test_version_is_the_newest_release_in_the_changelog() -> None:
    """`moot --version`, the package's metadata and CHANGELOG.md's newest release say the same."""
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, re.M)
    assert releases and releases[0] == __version__, (releases[:1], __version__)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(rf'^version = "{re.escape(__version__)}"$', pyproject, re.M)


# ---------------------------------------------------------------- moot list


def test_list_has_a_header_newest_first_and_marks_demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    srv = make_server()
    try:
        older, folder = asyncio.run(run_debate(tmp_path, "Design a URL shortener", rounds=1))
        time.sleep(0.01)
        long = "Design a rate limiter \x1b]0;owned\x07for a public API " + "with many more words " * 20
        newer, _ = asyncio.run(run_debate(tmp_path, long, rounds=1, provider="openai", base_url=srv.base_url))
    finally:
        srv.stop()
    monkeypatch.setenv("COLUMNS", "80")
    r = cli("list", "--state-dir", str(folder.path.parent))
    assert r.returncode == 0 and not r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "PROGRESS", "PROVIDER", "PROBLEM"]
    assert [line.split()[0] for line in lines[1:]] == [newer.id, older.id]  # newest first
    new_row, old_row = lines[1:]
    assert re.search(r"\bDEMO\b", old_row) and "Design a URL shortener" in old_row
    assert "DEMO" not in new_row and re.search(r"\bopenai\b", new_row)
    assert "1/1 rounds" in new_row and "completed" in new_row
    # Aligned: every column starts where its header does; the long problem is cut to the width.
    for header in ("STATUS", "PROGRESS", "PROVIDER", "PROBLEM"):
        at = lines[0].index(header)
        assert all(line[at - 2:at] == "  " and line[at] != " " for line in lines[1:]), header
    assert len(new_row) == 80 and new_row.endswith("…")
    assert not UNSAFE.search(r.stdout) and "owned" not in r.stdout  # the problem's escape sequence is gone


# ---------------------------------------------------------------- role typos


def test_a_role_typo_gets_did_you_mean(tmp_path: Path) -> None:
    """A typo in `-a` is a bad argument (exit 2, as the README promises); in a config file, a
    configuration error (exit 4)."""
    line = _one_error_line(cli("run", "Design a cache", "-a", "architech,kiss", "--headless"), 2)
    assert "unknown role 'architech' (did you mean 'architect'?)" in line
    line = _one_error_line(cli("run", "Design a cache", "-a", "architect,wizard", "--headless"), 2)
    assert line.startswith("moot: argument -a/--agents: unknown role 'wizard'; expected one of architect")
    assert "named twice" in _one_error_line(cli("run", "Design a cache", "-a", "kiss,kiss", "--headless"), 2)
    cfg = tmp_path / "moot.toml"
    cfg.write_text('[[agents]]\nid = "a"\nrole = "architech"\n\n[judge]\nrole = "generalist"\n')
    line = _one_error_line(cli("run", "Design a cache", "-c", str(cfg), "--headless"), 4)
    assert "agents[0].role: unknown role (did you mean 'architect'?)" in line and "(got 'architech')" in line
    cfg.write_text('[judge]\nrole = "Securty"\n')
    assert "(did you mean 'security'?)" in _one_error_line(cli("run", "x", "-c", str(cfg), "--headless"), 4)
    line = _one_error_line(cli("run", "x", "-a", "zzzz", "--headless"), 2)  # nothing close: no guess
    assert "did you mean" not in line and "expected one of architect" in line
    assert not list(tmp_path.glob("debates/*"))  # refused before any folder was made


# ---------------------------------------------------------------- interrupted runs


def _wait_for(predicate: Any, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


@pytest.mark.slow
def test_an_interrupted_run_says_so_once_with_its_cause(tmp_path: Path) -> None:
    sd = tmp_path / "D"
    proc = subprocess.Popen([sys.executable, "-m", "moot", "run", "Design a cache", "--provider", "demo",
                             "--headless", "--demo-delay", "0.05", "--state-dir", str(sd)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        _wait_for(lambda: any(e["type"] == "contribution_added"
                              for p in sd.glob("*/events.jsonl") for e in read_jsonl(p)))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and TRACEBACK not in err
    (folder,) = sd.iterdir()
    assert err.replace(str(tmp_path), "").count("interrupted") == 1, err
    assert err.splitlines()[-1] == (f"moot: debate interrupted (SIGINT); saved in {folder}; "
                                    f"continue with `moot resume {folder.name} --state-dir {sd}`")
    assert out == ""
    show = cli("show", folder.name, "--state-dir", str(sd))
    assert "interrupted by: SIGINT" in show.stdout and "error:" not in show.stdout
    report = cli("report", folder.name, "--state-dir", str(sd)).stdout
    assert "**Status:** interrupted (resumable) — by SIGINT ·" in report
    watched = cli("watch", folder.name, "--headless", "--state-dir", str(sd)).stdout
    assert watched.splitlines()[-1] == "■ debate interrupted (SIGINT)"

    # A log from before the cause was recorded (reason "interrupted") says it once too.
    events = (folder / "events.jsonl").read_text().splitlines()
    last = json.loads(events[-1])
    assert last["type"] == "debate_interrupted"
    last["reason"] = "interrupted"
    (folder / "events.jsonl").write_text("\n".join([*events[:-1], json.dumps(last)]) + "\n")
    (folder / "state.json").unlink()
    show = cli("show", folder.name, "--state-dir", str(sd)).stdout
    assert "interrupted by" not in show and "error:" not in show
    report = cli("report", folder.name, "--state-dir", str(sd)).stdout
    assert "**Status:** interrupted (resumable) ·" in report


def test_a_users_stop_is_not_reported_twice(tmp_path: Path) -> None:
    state, folder = asyncio.run(run_debate(tmp_path, rounds=1, before_run=lambda s: s.orchestrator.stop()))
    assert state.status == "stopped" and state.error is None
    report = cli("report", state.id, "--state-dir", str(folder.path.parent)).stdout
    assert "**Status:** stopped by the user ·" in report


# ---------------------------------------------------------------- headless stdout


def test_headless_stdout_starts_with_the_solution(tmp_path: Path) -> None:
    r = moot("run", "Design a URL shortener", "--provider", "demo", "--headless", "-r", "1",
             "--state-dir", str(tmp_path / "D"), env=DEMO)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].strip(), r.stdout[:200]
    assert " started: 1 round, agents " in r.stderr.splitlines()[0]  # not "1 rounds"


def test_a_solution_that_opens_with_escapes_still_starts_stdout(tmp_path: Path) -> None:
    def reply(body: dict[str, Any], n: int) -> str:
        ask = str(body["messages"][-1]["content"]).lower()
        if "json" in ask and "confidence" in ask:
            return json.dumps({"solution": "\x1b[1m\n\n\x1b[0mUse a token bucket per key.", "confidence": 70})
        return f"Reply {n}: keep it simple."

    srv = make_server(reply=reply)
    try:
        r = cli("run", "Design a rate limiter", "--base-url", srv.base_url, "--headless", "-r", "1",
                "-a", "kiss", "--state-dir", str(tmp_path / "D"))
    finally:
        srv.stop()
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "Use a token bucket per key."


# ---------------------------------------------------------------- moot eval without -c


def test_eval_without_config_uses_the_debates_own_provider_offline(tmp_path: Path) -> None:
    state, folder = asyncio.run(run_debate(tmp_path, rounds=1))
    r = cli("eval", state.id, "--state-dir", str(folder.path.parent))
    assert r.returncode == 0, r.stderr
    assert "| Criterion | eval-1 | Average |" in r.stdout and "**DEMO**" in r.stdout
    assert "### eval-1 (demo: demo)" in r.stdout
    assert "debate's own provider (eval-1 demo:demo)" in r.stderr and TRACEBACK not in r.stderr


def test_eval_without_config_calls_the_debates_own_endpoint(tmp_path: Path) -> None:
    scores = {c: {"score": 7, "reason": "fine"} for c in ("functional_completeness", "performance", "security",
                                                         "maintainability", "testability",
                                                         "requirements_fulfilment", "overall")}

    def reply(body: dict[str, Any], n: int) -> str:
        if "Solution Evaluator" in str(body["messages"][0]["content"]):
            return json.dumps({"scores": scores})
        ask = str(body["messages"][-1]["content"]).lower()
        if "json" in ask and "confidence" in ask:
            return json.dumps({"solution": "Use a queue.", "confidence": 80})
        return f"Reply {n}."

    srv = make_server(reply=reply)
    try:
        state, folder = asyncio.run(run_debate(tmp_path, rounds=1, provider="openai", base_url=srv.base_url,
                                               roles=["kiss"], config={"judge": {"model": "judge-model"}}))
        before = srv.calls
        r = cli("eval", state.id, "--state-dir", str(folder.path.parent), "-o", str(tmp_path / "scores.json"))
        asked = srv.requests[before:]
        # A flag that moves a demo debate's evaluation to an endpoint takes that provider's default model.
        demo, _ = asyncio.run(run_debate(tmp_path, rounds=1))
        before = srv.calls
        moved = cli("eval", demo.id, "--base-url", srv.base_url, "--state-dir", str(folder.path.parent))
        moved_asked = srv.requests[before:]
    finally:
        srv.stop()
    assert moved.returncode == 0, moved.stderr
    assert [b["model"] for b in moved_asked] == ["gpt-4o-mini"] and "**DEMO**" not in moved.stdout
    assert r.returncode == 0, r.stderr
    # One evaluator per model the debate ran on, the judge's first, at the debate's endpoint.
    assert sorted(b["model"] for b in asked) == ["gpt-4o-mini", "judge-model"]
    data = json.loads((tmp_path / "scores.json").read_text())
    assert [(e["id"], e["model"]) for e in data["evaluators"]] == [("eval-1", "judge-model"),
                                                                   ("eval-2", "gpt-4o-mini")]
    assert data["averages"]["overall"] == 7 and not data["demo"]


def test_the_readmes_evaluator_file_works_without_a_key(tmp_path: Path) -> None:
    readme = manual()
    after = readme.split("Your own evaluators go in a file, `evaluators.toml`:", 1)[1]
    block = after.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "evaluators.toml").write_text(block)
    state, folder = asyncio.run(run_debate(tmp_path, rounds=1))
    r = cli("eval", state.id, "-c", "evaluators.toml", "--state-dir", str(folder.path.parent))  # cwd: tmp_path
    assert r.returncode == 0, r.stderr
    assert "| Criterion | eval-1 | eval-2 | Average |" in r.stdout and "**DEMO**" in r.stdout


# ---------------------------------------------------------------- -o solution.md


def test_the_solution_files_title_is_one_heading(tmp_path: Path) -> None:
    (tmp_path / "problem.md").write_text("# Design a cache\n\nFor a read-heavy API.\n")
    r = cli("run", "-p", "problem.md", "--provider", "demo", "--headless", "-r", "1", "-o", "solution.md")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "solution.md").read_text().splitlines()[0] == "# Design a cache"
    listed = cli("list").stdout.splitlines()[1]
    assert listed.endswith("  Design a cache") and "#" not in listed  # as the TUI header shows it


def test_list_says_running_only_while_a_process_runs_the_debate(tmp_path: Path) -> None:
    """A debate whose log stops mid-way (its process was killed) is "unfinished", not "running"."""
    from moot.core.storage.lock import DebateLock

    _, folder = asyncio.run(run_debate(tmp_path, "Design a URL shortener", rounds=1))
    lines = folder.events_path.read_text(encoding="utf-8").splitlines(keepends=True)
    folder.events_path.write_text("".join(lines[:5]), encoding="utf-8")  # killed after its first events
    (folder.path / "state.json").unlink(missing_ok=True)

    def status() -> str:
        r = cli("list", "--state-dir", str(folder.path.parent))
        assert r.returncode == 0, r.stderr
        return r.stdout.splitlines()[1].split()[1]

    assert status() == "unfinished"
    lock = DebateLock(folder.path / ".lock")
    lock.acquire()  # a process runs it (a resume, say)
    try:
        assert status() == "running"
    finally:
        lock.release()


def test_the_readmes_suite_timing_is_a_row_of_the_measurements_it_links() -> None:
    """The README's figures for the test suite contradicted each other; now it names one run,
    and that run must be a row of the table it links to."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    bench = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    section = readme.split("Run the whole test suite:", 1)[1].split("To run part of it:", 1)[0]
    anchor = re.search(r"\(bench/README\.md#([a-z0-9-]+)\)", section)
    assert anchor, section
    headings = [re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
                for h in re.findall(r"^###? (.+)$", bench, re.MULTILINE)]
    assert anchor.group(1) in headings
    latest = re.search(r"([\d,]+) tests in (\d+) s, .* at load ([\d–]+), (\d{4}-\d\d-\d\d)",
                       section.replace("\n", " "))
    assert latest, section
    tests, wall, load, day = latest.groups()
    rows = [r for r in bench.splitlines() if r.startswith("|") and day in r]
    assert any(f"| {tests} passed" in r and f"| {wall} s" in r and f"load {load}," in r for r in rows), rows

"""The CI scripts run under bash whatever shell starts them (`sh .ci/run` from a POSIX sh, a zsh
user's `bash .ci/run` or `.ci/run`), and stop at the first step that fails.

A stand-in `python3` that fails is put first on PATH: each script must reach it, under bash,
and exit with its status, without running a later step."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

STARTS = {"sh": ["sh"], "bash": ["bash"], "direct": []}


@pytest.fixture
def failing_python(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "calls.log"
    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$0 $*" >> "{log}"\nexit 3\n')
    fake.chmod(0o755)
    return fake, log


@pytest.mark.parametrize("start", list(STARTS))
def test_ci_run_runs_under_bash_and_stops_at_the_first_failing_step(
        start: str, failing_python: tuple[Path, Path]) -> None:
    if start == "sh" and shutil.which("sh") is None:
        pytest.skip("no sh")
    fake, log = failing_python
    env = {**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}", "MOOT_CI_BROWSER": "0"}
    r = subprocess.run([*STARTS[start], str(ROOT / ".ci" / "run")], capture_output=True, text=True, env=env,
                       cwd=fake.parent, timeout=120)
    assert "Illegal option" not in r.stderr and "not found" not in r.stderr, r.stderr
    assert log.read_text().splitlines() == [f"{fake} -m venv .venv"]  # reached, and nothing after it ran
    assert r.returncode == 3, (r.returncode, r.stdout[-500:], r.stderr[-500:])


@pytest.mark.parametrize("start", list(STARTS))
def test_ci_typecheck_runs_under_bash(start: str, failing_python: tuple[Path, Path]) -> None:
    fake, log = failing_python
    r = subprocess.run([*STARTS[start], str(ROOT / ".ci" / "typecheck")], capture_output=True, text=True,
                       env={**os.environ, "PYTHON": str(fake)}, timeout=120)
    assert "Illegal option" not in r.stderr, r.stderr
    assert log.read_text().splitlines()[0].startswith(f"{fake} -m mypy")
    assert r.returncode == 3

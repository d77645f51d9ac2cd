"""Shared fixtures: an isolated environment, a loopback server, and a debate runner."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

import pytest

from moot.core.config import Overrides, build_config
from moot.core.models.state import DebateState
from moot.core.session import SessionOptions, new_session
from moot.core.storage import archive
from moot.core.storage.folder import DebateFolder
from tests.loopback import Faults, LoopbackServer

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    """With workers (`-n`, the default), the controller rewrites the test modules' asserts once,
    before the workers start, and caches them (`__pycache__/*-pytest-*.pyc`) as each worker
    would: otherwise, in a fresh checkout, the four workers each rewrote all of them at once
    (about 5 s of CPU apiece). pytest's own functions do it, so the cache is the one the workers
    read; with another pytest, or `--assert=plain`, the workers rewrite as before."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    try:
        _rewrite_once(config)
    except (ImportError, AttributeError, KeyError, TypeError):
        return  # another pytest's private functions: the workers rewrite as before


def _rewrite_once(config: pytest.Config) -> None:
    from _pytest.assertion import rewrite

    state = config.stash[rewrite.assertstate_key]
    here = Path(__file__).resolve().parent
    for arg in config.args or [str(here)]:
        path = Path(arg.split("::")[0]).resolve()
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for fn in files:
            if fn.suffix != ".py" or here not in fn.parents:
                continue
            if not (fn.name.startswith("test_") or fn.name == "conftest.py"):
                continue
            pyc = rewrite.get_cache_dir(fn) / (fn.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(fn, pyc, state.trace) is None and rewrite.try_makedirs(pyc.parent):
                try:
                    source_stat, code = rewrite._rewrite_test(fn, config)
                except (SyntaxError, ValueError, OSError):
                    continue  # the worker that collects it reports it, as an error of that file
                rewrite._write_pyc(state, code, source_stat, pyc)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No real keys, no stray .env, no user settings, no collector: every test starts clean."""
    for var in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "MOOT_STATE_DIR", "MOOT_DEMO_DELAY",
                "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MOOT_CONFIG_DIR", str(tmp_path / "user-config"))
    monkeypatch.setenv("MOOT_WINDOW_CACHE", str(tmp_path / "windows.json"))  # what a server stated, per test
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def server():
    with LoopbackServer() as srv:
        yield srv


def make_server(**kwargs: Any) -> LoopbackServer:
    return LoopbackServer(**kwargs).start()


async def run_debate(
    tmp_path: Path,
    problem: str = "Design a URL shortener",
    config: dict[str, Any] | None = None,
    *,
    rounds: int | None = 2,
    provider: str = "demo",
    base_url: str | None = None,
    roles: list[str] | None = None,
    before_run: Any = None,
) -> tuple[DebateState, DebateFolder]:
    """Run a whole debate in-process with its event log on disk."""
    cfg = build_config(config or {}, Overrides(rounds=rounds, roles=roles, provider=provider, base_url=base_url))
    session = new_session(problem, cfg, SessionOptions(state_dir=tmp_path / "debates", demo_delay=0,
                                                       backoff_base_s=0.01))
    if before_run is not None:
        before_run(session)
    state = await session.run()
    return state, session.folder


def moot(*args: str, env: dict[str, str] | None = None, timeout: float = 120, cwd: Path | None = None,
         input_text: str | None = None) -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess (headless: stdout is a pipe)."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY")}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "moot", *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=cwd, input=input_text if input_text is not None else "")



def manual() -> str:
    """The README and every page of the docs site, one text: the examples tests run as written
    live in whichever page tells a person about them."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return "\n\n".join(p.read_text(encoding="utf-8") for p in pages)

def cli(*argv: str, stdin: IO[str] | None = None) -> SimpleNamespace:
    """`moot ARGV` in-process, like `moot()` without the interpreter start: exit code, stdout, stderr.
    `stdin`: what it reads there (default: an empty input, as `moot()` gives its process)."""
    from moot.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    sys.stdin = stdin if stdin is not None else io.StringIO("")
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:  # argparse: --version, --help, bad arguments
                # What the interpreter makes of it: None is 0, an int itself, anything else is said and 1.
                if exc.code is None or isinstance(exc.code, int):
                    code = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    code = 1
    finally:
        sys.stdin = saved
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    # split("\n"), not splitlines(): that also splits at U+2028 and U+2029, which a JSON line may hold raw
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


__all__ = ["Faults", "LoopbackServer", "cli", "make_server", "moot", "read_jsonl", "run_debate"]


@pytest.fixture
def small_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long debate's thresholds lowered (`storage.archive`) so that one of a few dozen steps
    lets go of most of them and reads them back from its log."""
    monkeypatch.setattr(archive, "HOLD", 24)
    monkeypatch.setattr(archive, "KEEP", 6)

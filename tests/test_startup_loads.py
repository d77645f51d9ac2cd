"""What `moot run` does before its first screen and before its first request, seen from a real
process: the first frame comes before the engine's views, token tables, markdown parser,
tracing and the screens a command opens are loaded (they load behind it, with the debate),
and no run reads moot's own source files to describe its config models.

Python runs one thread at a time, so whatever is loaded before the first frame delays it,
and whatever is done before the first request delays that (`bench/startup.py` times both).
"""

from __future__ import annotations

import fcntl
import json
import os
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = "Choose how the warehouse hears about new orders"

FIRST_FRAME = r"""
import os, sys

out, problem = sys.argv[1], sys.argv[2]
from textual.drivers.linux_driver import LinuxDriver

write = LinuxDriver.write


def first_frame(self, data):
    write(self, data)
    if problem in data:  # the header names the problem: what is loaded is what the frame needed
        with open(out, "w") as f:
            f.write("\n".join(sorted(sys.modules)))
        os._exit(0)


LinuxDriver.write = first_frame
from moot.cli import main

sys.exit(main(sys.argv[3:]))
"""

HEADLESS_RUN = r"""
import json, linecache, sys

out, root = sys.argv[1], sys.argv[2]
read = []
getlines = linecache.getlines


def reading(filename, module_globals=None):
    read.append(filename)
    return getlines(filename, module_globals)


linecache.getlines = reading
from moot.cli import main

code = main(sys.argv[3:])
with open(out, "w") as f:
    json.dump({"code": code, "read": sorted({f for f in read if f.startswith(root)}), "modules": sorted(sys.modules)}, f)
"""

NOT_BEFORE_THE_FIRST_FRAME = (
    "markdown_it",  # a reply's markdown: parsed when the first text arrives
    "rich.markdown",
    "tiktoken",  # token tables: the build's warm-up loads them
    "moot.core.context.view",  # the engine's views
    "moot.core.observe.otel",  # tracing, set up with the session
    "moot.core.search.debates",  # what /search and /compare-fork open
    "moot.core.fork_compare",
    "moot.tui.screens.search_results",
    "moot.tui.screens.context_overview",
    "openai",
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY", "CI")}
    env.update(TERM="xterm-256color", COLUMNS="120", LINES="36", MOOT_DEMO_DELAY="0.05")
    return env


@pytest.mark.slow
def test_the_first_frame_comes_before_the_engine_markdown_and_token_tables_are_loaded(tmp_path: Path) -> None:
    loaded = tmp_path / "loaded.txt"
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    args = ["run", PROBLEM, "-r", "1", "-a", "kiss", "--provider", "demo", "--state-dir", str(tmp_path / "s")]
    proc = subprocess.Popen([sys.executable, "-c", FIRST_FRAME, str(loaded), PROBLEM, *args], stdin=slave,
                            stdout=slave, stderr=slave, env=_env(), cwd=tmp_path, start_new_session=True,
                            close_fds=True)
    os.close(slave)
    screen = bytearray()

    def drain() -> None:  # the pseudo-terminal is read, or the app would block writing to it
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            screen.extend(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=60)  # a hang guard
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        reader.join(5)
        os.close(master)
    assert loaded.exists(), f"no frame named the problem:\n{bytes(screen[-3000:]).decode('utf-8', 'replace')}"
    modules = set(loaded.read_text().split())
    assert "moot.tui.screens.debate" in modules and "moot.core.events" in modules  # the frame itself
    early = [name for name in NOT_BEFORE_THE_FIRST_FRAME if name in modules]
    assert early == [], f"loaded before the first frame: {early}"


@pytest.fixture(scope="module")
def headless_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A whole headless debate without references: the files of moot's it read, what it loaded."""
    tmp = tmp_path_factory.mktemp("headless")
    out = tmp / "run.json"
    args = ["run", PROBLEM, "--headless", "-r", "1", "-a", "kiss,security", "--provider", "demo",
            "--demo-delay", "0", "--state-dir", str(tmp / "s")]
    done = subprocess.run([sys.executable, "-c", HEADLESS_RUN, str(out), str(ROOT), *args], capture_output=True,
                          text=True, env=_env(), cwd=tmp, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text())
    assert result["code"] == 0
    return result


def test_a_run_reads_no_source_of_its_own_to_describe_its_config(headless_run: dict[str, Any]) -> None:
    assert headless_run["read"] == []


def test_a_run_without_references_loads_no_gitignore_matcher(headless_run: dict[str, Any]) -> None:
    """pathspec (git's ignore rules, and the names that hold keys) is for reading references."""
    assert "moot.core.tools.references" in headless_run["modules"]  # the engine, as always
    assert "pathspec" not in headless_run["modules"]


def test_the_command_line_loads_no_event_loop_until_a_command_needs_one() -> None:
    """`import moot.cli` builds the parser of every subcommand; `moot list`, `moot show` and the
    rest never start an event loop, so none is loaded for them (`moot run` loads it with the app)."""
    code = "import sys, moot.cli; print(sorted(m for m in sys.modules if m.split('.')[0] == 'asyncio'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"

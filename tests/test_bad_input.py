"""Bad input through the CLI: one line on stderr, the right exit code, no
traceback, and nothing already saved is touched.

Exit codes: 2 bad arguments/input/files, 4 configuration. Most cases call the CLI's
`main()` in-process (an escaping exception would fail the test); a sample of each
kind also runs as a real subprocess.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from moot.core.config import ConfigError, load_config
from moot.core.models.state import DebateState
from tests.conftest import cli, moot
from tests.test_resume import TRACEBACK, check_complete, only_debate

IS_ROOT = os.geteuid() == 0
DEMO = {"MOOT_DEMO_DELAY": "0"}




@pytest.fixture(autouse=True)
def _demo_speed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOOT_DEMO_DELAY", "0")


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state dir holding one finished debate (copied per test)."""
    root = tmp_path_factory.mktemp("saved")
    r = moot("run", "Design a URL shortener", "--provider", "demo", "--headless", "-r", "1", "-a", "kiss,security",
             "--state-dir", str(root), env=DEMO)
    assert r.returncode == 0, r.stderr
    return root


@pytest.fixture
def state_dir(saved: Path, tmp_path: Path) -> Path:
    sd = tmp_path / "debates"
    shutil.copytree(saved, sd)
    return sd


def _one_line(r, code: int, fragment: str) -> str:  # type: ignore[no-untyped-def]
    assert TRACEBACK not in r.stderr
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("moot: "), r.stderr
    assert fragment in lines[0], lines[0]
    return lines[0]


def _write(path: Path, data: bytes | str) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


BIG = "word " * 20_000

# (id, files to create {name: bytes}, argv after `moot run`, exit code, fragment of the line)
RUN_CASES: list[tuple[str, dict[str, bytes | str], list[str], int, str]] = [
    ("missing problem file", {}, ["-p", "nope.md"], 2, "problem file not found: nope.md"),
    ("empty problem file", {"p.md": ""}, ["-p", "p.md"], 2, "problem file p.md is empty"),
    ("blank problem file", {"p.md": " \n\t\n"}, ["-p", "p.md"], 2, "problem file p.md is empty"),
    ("binary problem file", {"p.bin": b"\x7fELF\x00\x01\x02"}, ["-p", "p.bin"], 2, "looks binary"),
    ("non-UTF-8 problem file", {"p.md": b"caf\xe9 \xff"}, ["-p", "p.md"], 2, "is not UTF-8 text"),
    ("directory as problem file", {}, ["-p", "."], 2, "problem file . is a directory, not a file"),
    ("no problem", {}, [], 2, "no problem given"),
    ("empty problem", {}, [" "], 2, "the problem is empty"),
    ("non-UTF-8 problem argument", {}, ["caf\udce9"], 2, "the problem is not valid UTF-8 text"),
    ("text and file", {"p.md": "x"}, ["x", "-p", "p.md"], 2, "not both"),
    ("problem over the budget", {"p.md": BIG}, ["-p", "p.md"], 2,
     "the problem is 20000 tokens; the limit is 3500 (half the smallest agent budget of 7000)"),
    ("zero rounds", {}, ["x", "-r", "0"], 2, "must be ≥ 1"),
    ("wrong type", {"c.json": '{"debate": {"rounds": "three"}}'}, ["x", "-c", "c.json"], 4,
     "c.json: debate.rounds: Input should be a valid integer"),
    ("wrong type in agent override", {"c.json": '{"agents": [{"id": "a", "context": {"max_context_tokens": []}}]}'},
     ["x", "-c", "c.json"], 4, "agents[0].context"),
    ("reserve over the budget", {"c.json": '{"debate": {"context": {"max_context_tokens": 1000, '
                                           '"reserve_output_tokens": 1000}}}'},
     ["x", "-c", "c.json"], 4, "reserve_output_tokens (1000) must be below max_context_tokens (1000)"),
    ("unknown role in config", {"c.json": '{"agents": [{"id": "a", "role": "wizard"}]}'}, ["x", "-c", "c.json"], 4,
     "agents[0].role: unknown role; expected one of architect"),
    ("unknown role in -a", {}, ["x", "-a", "kiss,wizard"], 2, "unknown role 'wizard'"),  # an argument: exit 2
    ("duplicate agent ids", {"c.toml": '[[agents]]\nid = "a"\nrole = "kiss"\n[[agents]]\nid = "a"\nrole = "testing"\n'},
     ["x", "-c", "c.toml"], 4, "duplicate agent id 'a'"),
    ("agent id is the judge's", {"c.json": '{"agents": [{"id": "judge"}]}'}, ["x", "-c", "c.json"], 4,
     "agent id 'judge' is the judge's id"),
    ("unknown field", {"c.json": '{"debate": {"roundz": 2}}'}, ["x", "-c", "c.json"], 4,
     "unknown field 'debate.roundz'"),
    ("unknown top-level field", {"c.toml": 'agentz = []\n'}, ["x", "-c", "c.toml"], 4, "unknown field 'agentz'"),
    ("invalid JSON", {"c.json": '{"debate": '}, ["x", "-c", "c.json"], 4, "config file c.json is not valid JSON"),
    ("invalid TOML", {"c.toml": "[debate\nrounds = 2"}, ["x", "-c", "c.toml"], 4, "is not valid TOML"),
    ("config not an object", {"c.json": "[1, 2]"}, ["x", "-c", "c.json"], 4, "must hold an object"),
    ("config not UTF-8", {"c.json": b'{"a": "\xff"}'}, ["x", "-c", "c.json"], 4, "is not UTF-8 text"),
    ("missing config", {}, ["x", "-c", "nope.toml"], 4, "config file not found: nope.toml"),
    ("no enabled agent", {"c.json": '{"agents": [{"id": "a", "enabled": false}]}'}, ["x", "-c", "c.json"], 4,
     "at least one enabled agent"),
]


@pytest.mark.parametrize(("files", "argv", "code", "fragment"), [c[1:] for c in RUN_CASES],
                         ids=[c[0] for c in RUN_CASES])
def test_run_rejects_bad_input(tmp_path: Path, state_dir: Path, files: dict[str, bytes | str], argv: list[str],
                               code: int, fragment: str) -> None:
    for name, data in files.items():
        _write(tmp_path / name, data)
    before = _tree(state_dir)
    r = cli("run", *argv, "--provider", "demo", "--headless", "--state-dir", str(state_dir))
    _one_line(r, code, fragment)
    assert _tree(state_dir) == before  # no half-created debate, the saved one untouched


@pytest.mark.parametrize("case", ["binary problem file", "problem over the budget", "unknown field", "invalid TOML",
                                  "non-UTF-8 problem argument"])
def test_run_rejects_bad_input_in_a_real_process(tmp_path: Path, state_dir: Path, case: str) -> None:
    _, files, argv, code, fragment = next(c for c in RUN_CASES if c[0] == case)
    for name, data in files.items():
        _write(tmp_path / name, data)
    before = _tree(state_dir)
    r = moot("run", *argv, "--provider", "demo", "--headless", "--state-dir", str(state_dir), env=DEMO, cwd=tmp_path)
    _one_line(r, code, fragment)
    assert _tree(state_dir) == before


def test_toml_dates_are_a_config_error(tmp_path: Path) -> None:
    _write(tmp_path / "c.toml", "[debate]\nrounds = 1979-05-27\n")
    r = moot("run", "x", "-c", "c.toml", "--provider", "demo", "--headless", "--state-dir", "D", cwd=tmp_path)
    _one_line(r, 4, "debate.rounds")


SURROGATE_CONFIG = '{"agents": [{"id": "a", "role": "kiss", "name": "bad \\ud800 name"}]}'


def test_config_text_that_cannot_be_saved_never_breaks_the_log(tmp_path: Path) -> None:
    """A lone surrogate escape in a config string: refused (exit 4) or the debate stops
    before its first event is written (exit 2); one line either way."""
    _write(tmp_path / "c.json", SURROGATE_CONFIG)
    r = cli("run", "x", "-c", "c.json", "--provider", "demo", "--headless", "--state-dir", "D")
    assert r.returncode in (2, 4)
    errors = [line for line in r.stderr.splitlines() if line.startswith("moot:")]
    assert len(errors) == 1 and "surrogate" in errors[0]
    for folder in (tmp_path / "D").glob("*"):
        assert (folder / "events.jsonl").read_bytes() == b""


def test_config_text_that_cannot_be_saved_is_a_config_error(tmp_path: Path) -> None:
    _write(tmp_path / "c.json", SURROGATE_CONFIG)
    r = cli("run", "x", "-c", "c.json", "--provider", "demo", "--headless", "--state-dir", "D")
    _one_line(r, 4, "not valid Unicode")
    assert not (tmp_path / "D").exists()


@pytest.mark.skipif(IS_ROOT, reason="root reads files whatever their mode")
def test_unreadable_problem_file(tmp_path: Path) -> None:
    p = _write(tmp_path / "p.md", "secret problem")
    p.chmod(0)
    r = cli("run", "-p", str(p), "--provider", "demo", "--headless", "--state-dir", str(tmp_path / "D"))
    _one_line(r, 2, "cannot read problem file")


def test_problem_over_the_budget_with_allow_truncate(tmp_path: Path) -> None:
    _write(tmp_path / "p.md", BIG)
    r = cli("run", "-p", "p.md", "--allow-truncate", "--provider", "demo", "--headless", "-r", "1",
            "-a", "kiss,security", "--state-dir", "D")
    assert r.returncode == 0, r.stderr
    state = check_complete(only_debate(tmp_path / "D"), 1, ["kiss", "security"])
    assert re.search(r"\n\[problem truncated to fit the context budget: the first \d+ of its 20000 tokens, "
                     r"99999 characters\]\Z", state.problem), state.problem[-200:]
    assert len(state.problem) < len(BIG) / 2


def test_state_dir_under_a_regular_file(tmp_path: Path) -> None:
    _write(tmp_path / "afile", "x")
    r = moot("run", "x", "--provider", "demo", "--headless", "--state-dir", str(tmp_path / "afile" / "debates"))
    _one_line(r, 2, "Not a directory")


@pytest.mark.skipif(IS_ROOT, reason="root writes whatever the mode; the regular-file variant covers it")
def test_state_dir_without_write_permission(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        r = cli("run", "x", "--provider", "demo", "--headless", "--state-dir", str(ro))
        _one_line(r, 2, "permission denied")
    finally:
        ro.chmod(0o755)


@pytest.mark.parametrize("command", [["show", "nope"], ["resume", "nope", "--headless"],
                                     ["context", "nope", "--round", "1", "--agent", "kiss"], ["report", "nope"]])
def test_unknown_debate_id(state_dir: Path, command: list[str]) -> None:
    before = _tree(state_dir)
    r = cli(*command, "--state-dir", str(state_dir))
    _one_line(r, 2, f"no debate 'nope' in {state_dir}; try `moot list`")
    assert _tree(state_dir) == before


# ---------------------------------------------------------------- damaged debate folders


def _debate(state_dir: Path) -> Path:
    return only_debate(state_dir)


def test_corrupt_state_json_is_rebuilt_from_the_log(state_dir: Path) -> None:
    folder = _debate(state_dir)
    good = DebateState.model_validate_json((folder / "state.json").read_bytes())
    _write(folder / "state.json", b"\x00\x01 not json at all")
    r = cli("show", folder.name, "--state-dir", str(state_dir), "--json")
    assert r.returncode == 0, r.stderr
    rebuilt = DebateState.model_validate_json(r.stdout)
    assert rebuilt.status == "completed" and rebuilt.rounds == good.rounds
    assert rebuilt.final_solution == good.final_solution


@pytest.mark.parametrize("damage", ["truncated", "empty", "wrong shape"])
def test_damaged_state_json_never_a_traceback_on_show(state_dir: Path, damage: str) -> None:
    folder = _debate(state_dir)
    raw = (folder / "state.json").read_bytes()
    data = {"truncated": raw[: len(raw) // 3], "empty": b"", "wrong shape": b'{"id": 5, "rounds": "x"}'}[damage]
    _write(folder / "state.json", data)
    r = cli("show", folder.name, "--state-dir", str(state_dir))
    assert r.returncode == 0 and " · completed · " in r.stdout, r.stderr  # the log is the truth
    (folder / "events.jsonl").unlink()  # and with no log to fall back on: one line
    r = cli("show", folder.name, "--state-dir", str(state_dir))
    _one_line(r, 2, "holds no readable moot debate")


def test_resume_rebuilds_a_corrupt_state_json(state_dir: Path) -> None:
    folder = _debate(state_dir)
    lines = (folder / "events.jsonl").read_bytes().split(b"\n")
    (folder / "events.jsonl").write_bytes(b"\n".join(lines[:20]) + b"\n")  # killed after 20 events
    _write(folder / "state.json", b'{"id": "')
    r = moot("resume", folder.name, "--state-dir", str(state_dir), "--headless", env=DEMO)
    assert r.returncode == 0, r.stderr
    check_complete(folder, 1, ["kiss", "security"])


def _event(line: bytes, **change: object) -> bytes:
    data = json.loads(line)
    data.update(change)
    return json.dumps(data).encode()


# Each damage returns the damaged lines and the number of the line the error must name.
LOG_DAMAGE: dict[str, Callable[[list[bytes]], tuple[list[bytes], int]]] = {
    "garbage line in the middle": lambda ls: (ls[:5] + [b"}{ not an event"] + ls[5:], 6),
    "half a line in the middle": lambda ls: (ls[:5] + [ls[5][: len(ls[5]) // 2]] + ls[6:], 6),
    "foreign JSON line": lambda ls: (ls[:5] + [b'{"type": "something_else", "seq": 6}'] + ls[5:], 6),
    "a line twice": lambda ls: (ls[:6] + [ls[5]] + ls[6:], 7),
    "lines swapped": lambda ls: (ls[:5] + [ls[6], ls[5]] + ls[7:], 7),
    "impossible round": lambda ls: (ls + [_event(ls[1], seq=len(ls) + 1, round=10**9)], len(ls) + 1),
    "round zero": lambda ls: (ls + [_event(ls[1], seq=len(ls) + 1, round=0)], len(ls) + 1),
}


@pytest.mark.parametrize("damage", list(LOG_DAMAGE), ids=list(LOG_DAMAGE))
@pytest.mark.parametrize("command", ["show", "resume", "report"])
def test_corrupt_event_log_is_one_clear_line(state_dir: Path, damage: str, command: str) -> None:
    folder = _debate(state_dir)
    (folder / "state.json").unlink()  # no snapshot: what is there comes from the log
    lines = (folder / "events.jsonl").read_bytes().split(b"\n")[:-1]
    assert b'"type":"round_started"' in lines[1]  # the event the round damage copies
    damaged, bad = LOG_DAMAGE[damage](lines)
    (folder / "events.jsonl").write_bytes(b"\n".join(damaged) + b"\n")
    before = _tree(state_dir)
    argv = [command, folder.name, "--state-dir", str(state_dir)] + (["--headless"] if command == "resume" else [])
    # In-process for speed; the resume of the first damage also runs as a real process.
    real = command == "resume" and damage == next(iter(LOG_DAMAGE))
    r = moot(*argv, env=DEMO) if real else cli(*argv)
    line = _one_line(r, 2, f"{folder / 'events.jsonl'}: line {bad} ")
    assert "corrupt" in line
    assert _tree(state_dir) == before  # a corrupt log is reported, never rewritten


def test_folder_of_a_debate_killed_before_its_first_event(state_dir: Path) -> None:
    empty = state_dir / "20990101-000000-dead"
    empty.mkdir()
    (empty / ".lock").touch()
    r = cli("list", "--state-dir", str(state_dir))
    assert r.returncode == 0 and "dead" not in r.stdout
    for command in (["show"], ["resume", "--headless"]):
        r = cli(command[0], empty.name, *command[1:], "--state-dir", str(state_dir))
        _one_line(r, 2, "holds no readable moot debate")


def test_list_shows_an_unreadable_debate_as_such(state_dir: Path) -> None:
    folder = _debate(state_dir)
    (folder / "state.json").unlink()
    _write(folder / "events.jsonl", b"hello\nworld\n")
    r = cli("list", "--state-dir", str(state_dir))
    assert r.returncode == 0 and TRACEBACK not in r.stderr
    assert f"{folder.name}  unreadable" in r.stdout


def test_config_loader_direct(tmp_path: Path) -> None:
    """The library call the CLI makes: every problem is a ConfigError naming the file."""
    for name, data in [("a.json", "{"), ("b.toml", "x = [1,"), ("c.json", '{"judge": {"role": 5}}')]:
        with pytest.raises(ConfigError, match=name):
            load_config(_write(tmp_path / name, data))


def test_missing_api_key_leaves_no_empty_debate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = cli("run", "x", "--provider", "openai", "--headless", "--state-dir", "D")
    _one_line(r, 4, "no API key: set OPENAI_API_KEY")
    assert not (tmp_path / "D").exists()

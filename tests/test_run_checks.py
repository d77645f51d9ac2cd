"""What `moot run` refuses or says before a debate starts (and the
README's `[providers]` snippet): a problem with nothing visible, more agents than is sane, a
problem cut to fit, a config that leaves one agent alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from moot.core.models.state import DebateState
from moot.core.storage.folder import DebateFolder
from tests.conftest import cli, manual, moot
from tests.test_resume import TRACEBACK, only_debate


@pytest.fixture(autouse=True)
def _demo_speed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOOT_DEMO_DELAY", "0")


def _state(state_dir: Path) -> DebateState:
    return DebateFolder(only_debate(state_dir)).load()


def _agents_toml(n: int, role: str = "kiss") -> str:
    return "".join(f'[[agents]]\nid = "{role}-{i}"\nrole = "{role}"\n\n' for i in range(n))


@pytest.mark.parametrize("problem", ["\x1b[2J\x07\x01\r", "\x1b]0;title\x07 \t\n", "\u200b\u202e\u2066\ufeff"],
                         ids=["escapes and bells", "an OSC title and blanks", "zero-width and bidi"])
def test_a_problem_with_nothing_visible_is_refused(tmp_path: Path, problem: str) -> None:
    r = cli("run", problem, "--provider", "demo", "--headless", "--state-dir", "D")
    assert r.returncode == 2 and r.stderr == (
        "moot: the problem holds no visible text (only control or invisible characters)\n")
    (tmp_path / "p.md").write_text(problem + "\n")
    r = cli("run", "-p", "p.md", "--provider", "demo", "--headless", "--state-dir", "D")
    assert r.returncode == 2 and r.stderr == (
        "moot: problem file p.md holds no visible text (only control or invisible characters)\n")
    assert not (tmp_path / "D").exists()  # nothing stored, nothing sent


def test_a_real_process_refuses_it_too(tmp_path: Path) -> None:
    r = moot("run", "\x1b[2J\x07\x01\r", "--provider", "demo", "--headless", "--state-dir", "D")
    assert r.returncode == 2 and TRACEBACK not in r.stderr and len(r.stderr.splitlines()) == 1
    listed = moot("list", "--state-dir", "D")
    assert listed.returncode == 0 and listed.stdout == ""


def test_two_hundred_agents_are_refused_with_what_a_round_costs(tmp_path: Path) -> None:
    (tmp_path / "many.toml").write_text(_agents_toml(200))
    r = cli("run", "Design a cache", "-c", "many.toml", "--provider", "demo", "--headless", "--state-dir", "D")
    assert r.returncode == 4, r.stderr
    assert r.stderr == ("moot: 200 agents would cost 40,200 calls a round (200 proposals, 39,800 critiques, "
                        "200 refinements); the limit is 12 agents: pass --max-agents 200 to run them anyway, "
                        "or list fewer under [[agents]]\n")
    (tmp_path / "six.toml").write_text(_agents_toml(6))
    r = cli("run", "Design a cache", "-c", "six.toml", "--max-agents", "5", "--provider", "demo", "--headless",
            "--state-dir", "D")
    assert r.returncode == 4 and "6 agents would cost 42 calls a round" in r.stderr
    assert "raise --max-agents 6" in r.stderr
    assert not (tmp_path / "D").exists()


def test_the_override_runs_them_and_says_the_cost(tmp_path: Path) -> None:
    (tmp_path / "many.toml").write_text(_agents_toml(13))
    r = cli("run", "Design a cache", "-c", "many.toml", "--max-agents", "13", "--protocol", "conversation",
            "--turns", "1", "--provider", "demo", "--headless", "--state-dir", "D")
    assert r.returncode == 0, r.stderr
    assert "moot: 13 agents (--max-agents 13): 1 call a turn (each agent speaks once every 13 turns)\n" in r.stderr
    assert len(_state(tmp_path / "D").agents) == 13
    # Twelve need no flag and get no notice.
    (tmp_path / "twelve.toml").write_text(_agents_toml(12))
    r = cli("run", "Design a cache", "-c", "twelve.toml", "--protocol", "conversation", "--turns", "1",
            "--provider", "demo", "--headless", "--state-dir", "E")
    assert r.returncode == 0 and "agents (--max-agents" not in r.stderr


def test_a_truncated_problem_says_so_on_stderr_and_in_show(tmp_path: Path) -> None:
    text = " ".join(f"Requirement {i}: the catalogue service answers product lookups from the cache first."
                    for i in range(3000))
    (tmp_path / "big.md").write_text(text)
    r = cli("run", "-p", "big.md", "--allow-truncate", "--provider", "demo", "--headless", "-r", "1", "-a", "kiss",
            "--state-dir", "D")
    assert r.returncode == 0, r.stderr
    [note] = [line for line in r.stderr.splitlines() if "truncated" in line]
    found = re.fullmatch(r"moot: the problem was truncated to fit the context budget: the debate sees the first "
                         r"([\d,]+) of its ([\d,]+) tokens \(([\d,]+) of ([\d,]+) characters\)", note)
    assert found, note
    kept, total, kept_chars, chars = (int(g.replace(",", "")) for g in found.groups())
    assert kept < total and kept_chars < chars == len(text)
    state = _state(tmp_path / "D")
    shown = cli("show", state.id, "--state-dir", "D").stdout.splitlines()
    assert shown[2] == f"  ({note.removeprefix('moot: ')}; it was run with --allow-truncate)"
    # A problem that fits says nothing of the kind.
    r = cli("run", "Design a cache", "--allow-truncate", "--provider", "demo", "--headless", "-r", "1", "-a", "kiss",
            "--state-dir", "E")
    assert "truncated" not in r.stderr
    assert "truncated" not in cli("show", _state(tmp_path / "E").id, "--state-dir", "E").stdout


def test_the_readmes_providers_snippet_runs_three_agents_and_one_agent_is_named(tmp_path: Path) -> None:
    readme = manual()
    block = next(b for b in re.findall(r"```toml\n(.*?)```", readme, re.S) if "[providers." in b)
    (tmp_path / "moot.toml").write_text(block)
    r = cli("run", "Design a cache", "--provider", "demo", "--headless", "-r", "1", "--state-dir", "D")
    assert r.returncode == 0, r.stderr
    assert [(a.id, a.role) for a in _state(tmp_path / "D").agents] == [
        ("architect", "architect"), ("performance", "performance"), ("kiss", "kiss")]
    assert "debates alone" not in r.stderr
    (tmp_path / "moot.toml").write_text('[[agents]]\nid = "architect"\nrole = "architect"\nmax_concurrency = 2\n')
    r = cli("run", "Design a cache", "--provider", "demo", "--headless", "-r", "1", "--state-dir", "E")
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[0] == (
        "moot: moot.toml lists one agent (architect), so it debates alone (no critiques, no other answers); "
        "[[agents]] replaces the default agents architect, performance and kiss: list every agent you want")
    r = cli("run", "Design a cache", "-a", "kiss", "--provider", "demo", "--headless", "-r", "1", "--state-dir", "F")
    assert r.returncode == 0 and "debates alone" not in r.stderr  # asked for on the command line


def test_a_notice_never_comes_before_an_error(tmp_path: Path) -> None:
    """The notices wait until the debate is built: an error after them stays the only line."""
    (tmp_path / "one.toml").write_text('[[agents]]\nid = "kiss"\nrole = "kiss"\n')
    (tmp_path / "afile").write_text("not a folder")
    r = cli("run", "Design a cache", "-c", "one.toml", "--provider", "demo", "--headless",
            "--state-dir", str(tmp_path / "afile" / "D"))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "debates alone" not in r.stderr

"""The command's shape: one module per subcommand family, each registered once with a handler, and
shell completion generated from that same parser (run through bash as a user's shell would)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

import pytest

from moot import cli as moot_cli
from tests.conftest import ROOT, cli

COMMANDS = ROOT / "moot" / "commands"


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = moot_cli.build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_every_subcommand_has_a_handler_and_every_module_is_registered() -> None:
    subs = _subparsers()
    assert {"run", "resume", "list", "show", "context", "report", "trace", "eval", "watch", "replay", "ctl",
            "completion"} <= subs.keys()
    for name, parser in subs.items():
        assert callable(parser.get_default("handler")), name
    # A module with a `register` is a family; one that FAMILIES forgets would never be reachable.
    modules = {p.stem for p in COMMANDS.glob("*.py") if "\ndef register(" in p.read_text()}
    assert {m.__name__.rpartition(".")[2] for m in moot_cli.FAMILIES} == modules


def test_the_entry_module_stays_small() -> None:
    """cli.py builds the parser and dispatches; commands live in their own modules."""
    assert len((ROOT / "moot" / "cli.py").read_text().splitlines()) < 120
    for path in COMMANDS.glob("*.py"):
        assert len(path.read_text().splitlines()) <= 400, path.name


def test_an_unknown_shell_is_a_bad_argument() -> None:
    r = cli("completion", "powershell")
    assert r.returncode == 2 and r.stderr.startswith("moot: argument shell: invalid choice")


def _bash_complete(script: Path, words: list[str], cwd: Path, env: dict[str, str] | None = None) -> list[str]:
    """What bash offers for `words` (the last one is being typed), with the script sourced."""
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    program = (f"source {script}\nCOMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}\n"
               "_shtab_moot; printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    done = subprocess.run(["bash", "--norc", "-c", program], capture_output=True, text=True, cwd=cwd,
                          env={"PATH": "/usr/bin:/bin", **(env or {})}, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash on this machine")
def test_bash_completes_commands_flags_choices_files_and_debate_ids(tmp_path: Path) -> None:
    r = cli("completion", "bash")
    assert r.returncode == 0 and r.stdout.endswith("\n")
    script = tmp_path / "moot.bash"
    script.write_text(r.stdout)
    for name in ("20260101-090000-a1b2", "20260102-090000-c3d4"):
        (tmp_path / "D" / name).mkdir(parents=True)
        (tmp_path / "D" / name / "events.jsonl").write_text("")
    (tmp_path / "D" / ".20260103-090000-e5f6.tmp").mkdir()  # a debate being started: not offered
    (tmp_path / "D" / ".20260103-090000-e5f6.tmp" / "events.jsonl").write_text("")
    (tmp_path / "problem.md").write_text("Design a cache\n")

    assert _bash_complete(script, ["moot", "re"], tmp_path) == ["resume", "report", "replay"]
    assert _bash_complete(script, ["moot", "run", "--prot"], tmp_path) == ["--protocol"]
    assert _bash_complete(script, ["moot", "run", "--protocol", ""], tmp_path) == ["rounds", "conversation",
                                                                                   "simultaneous", "single", "vote",
                                                                                   "council", "adaptive"]
    assert _bash_complete(script, ["moot", "run", "-p", "prob"], tmp_path) == ["problem.md"]
    ids = ["20260101-090000-a1b2", "20260102-090000-c3d4"]
    assert _bash_complete(script, ["moot", "show", "--state-dir", "D", ""], tmp_path) == ids
    assert _bash_complete(script, ["moot", "report", "2026010"], tmp_path, {"MOOT_STATE_DIR": "D"}) == ids
    assert _bash_complete(script, ["moot", "ctl", "--state-dir", "D", ids[0], "p"], tmp_path) == ["pause", "pin"]
    assert _bash_complete(script, ["moot", "show", ""], tmp_path) == []  # no ./debates here


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash on this machine")
def test_bash_offers_only_ids_and_runs_nothing_a_folder_name_holds(tmp_path: Path) -> None:
    """A state dir is not trusted: `compgen -W` expanded the folders' names, so one named `$(cmd)`
    ran cmd at a tab, and a name with an escape sequence was printed to the terminal."""
    script = tmp_path / "moot.bash"
    script.write_text(cli("completion", "bash").stdout)
    for name in ("20260101-090000-a1b2", "$(touch PWNED)", "`touch PWNED2`", "2026\x1b]0;title\x07", "2026 x", "*"):
        (tmp_path / "D" / name).mkdir(parents=True)
        (tmp_path / "D" / name / "events.jsonl").write_text("")
    (tmp_path / "D" / "2026\x1b]0;real\x07").mkdir()
    (tmp_path / "D" / "2026\x1b]0;real\x07" / "events.jsonl").write_text("")
    assert _bash_complete(script, ["moot", "show", "--state-dir", "D", ""], tmp_path) == ["20260101-090000-a1b2"]
    assert _bash_complete(script, ["moot", "show", "--state-dir", "D", "2026"], tmp_path) == ["20260101-090000-a1b2"]
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "PWNED2").exists()

def test_zsh_script_names_the_command_and_completes_debate_ids(tmp_path: Path) -> None:
    r = cli("completion", "zsh")
    assert r.returncode == 0 and r.stdout.startswith("#compdef moot")
    assert "_moot_debate_ids()" in r.stdout and ":debate id (see \\`moot list\\`):_moot_debate_ids" in r.stdout
    zsh = shutil.which("zsh")
    if zsh is not None:  # the syntax, where zsh is installed
        (tmp_path / "_moot").write_text(r.stdout)
        check = subprocess.run([zsh, "-n", str(tmp_path / "_moot")], capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stderr

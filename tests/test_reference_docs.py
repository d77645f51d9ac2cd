"""The docs site's reference pages are generated from the code (`docs/gen_reference.py`); a page
that no longer matches what the code says fails here, with the command that rewrites it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from tests.conftest import ROOT

SCRIPT = ROOT / "docs" / "gen_reference.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_reference_is_what_the_code_says() -> None:
    pages = _generator().render()
    stale = [name for name, text in pages.items()
             if not (ROOT / "docs" / "reference" / name).is_file()
             or (ROOT / "docs" / "reference" / name).read_text("utf-8") != text]
    assert not stale, f"stale reference pages {stale}: run `python docs/gen_reference.py` and commit them"


def test_every_subcommand_key_and_command_is_in_the_reference() -> None:
    """The pages are complete: each subcommand, config key, event, slash command and screen is there."""
    from moot.cli import build_parser
    from moot.core.events import Event
    from moot.core.models.config import DebateSettings
    from moot.tui.commands.registry import COMMANDS

    pages = _generator().render()
    assert all(f"## moot {name}" in pages["cli.md"] for name in ("run", "init", "config", "doctor", "completion"))
    assert all(f"--{flag}" in pages["cli.md"] for flag in ("base-url", "schema", "timeout", "state-dir"))
    assert build_parser().prog == "moot"
    assert all(f"| `{name}` |" in pages["config.md"] for name in DebateSettings.model_fields)
    assert "## `[[agents]]`" in pages["config.md"] and "## `debate.context`" in pages["config.md"]
    import typing

    for cls in typing.get_args(typing.get_args(Event)[0]):
        assert f"## `{cls.model_fields['type'].default}`" in pages["events.md"]
    assert all(spec.usage.split()[0] in pages["slash-commands.md"] for spec in COMMANDS.values())
    assert "## DebateScreen" in pages["keys.md"] and "`Esc`" in pages["keys.md"]


def test_check_mode_names_a_stale_page(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and (tmp_path / "config.md").is_file()
    (tmp_path / "keys.md").write_text("# Keys\n\nWritten by hand, and out of date by now.\n")
    done = subprocess.run([sys.executable, str(SCRIPT), "--check", "--out", str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1 and done.stderr.startswith("stale: keys.md (run `python docs/gen_reference.py`)")

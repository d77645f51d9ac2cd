"""Modules that handle many kinds of event read them through the `events` namespace
(`from .. import events as ev`, `case ev.ContributionAdded():`) instead of repeating a block
that imports every event class one by one; mypy still checks each `match` is exhaustive."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MOST_NAMES = 20
"""More of the union's thirty-odd classes than this imported by name in one module is the
repeated block again (a module that handles a handful of kinds may name them)."""


def _imported_event_names(path: Path) -> int:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return max((len(node.names) for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "events"
                and node.level > 0), default=0)


def test_no_module_imports_the_event_classes_one_by_one() -> None:
    crowded = {str(p.relative_to(ROOT)): n for folder in ("core", "tui", "moot") for p in (ROOT / folder).rglob("*.py")
               if (n := _imported_event_names(p)) > MOST_NAMES}
    assert not crowded, f"import `events as ev` instead of each class: {crowded}"


def test_the_exhaustive_consumers_match_on_the_namespace() -> None:
    for name in ("core/storage/state.py", "core/context/index.py", "core/observe/describe.py",
                 "core/observe/tracing.py", "core/observe/plain.py"):
        text = (ROOT / name).read_text(encoding="utf-8")
        assert "import events as ev" in text and "case ev." in text, name

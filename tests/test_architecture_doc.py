"""ARCHITECTURE.md stays true where a test can tell: every file or folder its recipes name
exists, and its list of exhaustive event consumers is the code's."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "ARCHITECTURE.md").read_text("utf-8")
SOURCES = ("core", "tui", "moot")


def _named_paths() -> set[str]:
    """Backquoted names in the page that are paths: with a slash, or a file name with its suffix."""
    names = set()
    for token in re.findall(r"`([^`\s]+)`", DOC):
        if token.startswith(("/", ".")):  # a slash command, a bare suffix
            continue
        if re.fullmatch(r"[\w.<>/-]+", token) and ("/" in token or re.search(r"\.(py|md|toml|tcss)$", token)):
            names.add(token)
    return names


def _exists(name: str) -> bool:
    """At the root, or under core/, tui/ or tests/ (the page names files within a room by their
    path from the room's floor); `<name>` stands for any name."""
    pattern = re.sub(r"<[^>]+>", "*", name.rstrip("/"))
    bases = [ROOT, *(ROOT / d for d in (*SOURCES, "tests"))]
    return any(any(base.glob(pattern)) or any(base.glob(f"**/{pattern}")) for base in bases[1:]) or any(
        ROOT.glob(pattern))


def test_every_path_the_page_names_exists() -> None:
    named = _named_paths()
    assert len(named) > 30, "the page's paths were not found: did its format change?"
    missing = sorted(n for n in named if not _exists(n))
    assert missing == [], f"ARCHITECTURE.md names paths that do not exist: {missing}"


def _event_consumers() -> set[str]:
    """Modules with a `match event:` whose last case is `assert_never(event)`."""
    found = set()
    for folder in SOURCES:
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text("utf-8"))
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Match) and isinstance(node.subject, ast.Name)
                        and node.subject.id == "event"):
                    continue
                last = node.cases[-1].body
                if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "assert_never"
                       for stmt in last for n in ast.walk(stmt)):
                    found.add(path.relative_to(ROOT).as_posix())
    return found


def test_the_list_of_exhaustive_event_consumers_is_the_codes() -> None:
    recipe = DOC[DOC.index("- **An event**"):]
    recipe = recipe[:recipe.index("\n- **")]
    listed = set(re.findall(r"`((?:core|tui|moot)/[\w/]+\.py)`", recipe)) - {"core/events.py"}
    assert listed == _event_consumers()

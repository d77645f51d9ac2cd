"""Shared pieces of the grounding tests: a reference folder of realistic files, tool scripts for
the loopback server, and reading what a debate recorded."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import cli, read_jsonl

PROBLEM = "Design the storage layer for the notes service described in the plan"
PLAN = """# Notes service plan

## Storage

Notes are kept in SQLite with one table per tenant. The write path appends to a journal first,
so a crash between the journal and the table loses nothing; a nightly job compacts the journal.

## Search

Full-text search uses an FTS5 index rebuilt from the journal when it is missing or torn.

## Open questions

How long do we keep deleted notes before the compaction removes them for good?
"""
STORE = '''"""The notes store: a journal first, then the table."""


class NoteStore:
    def __init__(self, path):
        self.path = path

    def append(self, tenant, note):
        """Write to the journal, then to the tenant's table."""
        return (tenant, note)


def compact(store):
    """Fold the journal into the tables (run nightly)."""
    return store
'''


def make_refs(root: Path) -> Path:
    """A small project: a plan, some code, an ignored build folder and a secret."""
    refs = root / "project"
    (refs / "docs").mkdir(parents=True)
    (refs / "src").mkdir()
    (refs / "build").mkdir()
    (refs / "docs" / "plan.md").write_text(PLAN)
    (refs / "src" / "store.py").write_text(STORE)
    (refs / "build" / "generated.txt").write_text("generated output that git ignores\n")
    (refs / ".gitignore").write_text("build/\n*.log\n")
    (refs / "debug.log").write_text("a log line nobody should read\n")
    (refs / ".env").write_text("DATABASE_PASSWORD=hunter2-not-for-agents\n")
    return refs


def is_proposal(body: dict[str, Any]) -> bool:
    return any(m.get("role") == "user" and "write your proposal" in str(m.get("content", "")).lower()
               for m in body.get("messages", []))


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body.get("messages", []) if m.get("role") == "tool"]


def first_turn_calls(*calls: dict[str, Any]) -> Callable[[dict[str, Any], int], list[dict[str, Any]] | None]:
    """A script: a proposal's first request answers with `calls`; every later request with text."""

    def script(body: dict[str, Any], n: int) -> list[dict[str, Any]] | None:
        if is_proposal(body) and not tool_messages(body):
            return [dict(c) for c in calls]
        return None

    return script


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "arguments": json.dumps(args)}


def run(base_url: str, refs: Path, *extra: str, agents: str = "architect,kiss") -> Any:
    return cli("run", PROBLEM, "--ref", str(refs), "--base-url", base_url, "-r", "1", "-a", agents,
               "--headless", "--state-dir", "debates", *extra)


def events(state_dir: Path = Path("debates")) -> list[dict[str, Any]]:
    folder = next(p for p in sorted(state_dir.iterdir()) if p.is_dir() and not p.name.startswith("."))
    return read_jsonl(folder / "events.jsonl")


def debate_id(state_dir: Path = Path("debates")) -> str:
    return next(p.name for p in sorted(state_dir.iterdir()) if p.is_dir() and not p.name.startswith("."))

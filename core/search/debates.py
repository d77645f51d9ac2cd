"""Searching saved debates for people (`moot search`, the TUI's `/search`).

Each debate's own index answers (`SearchIndex.search`, BM25 over its texts); a debate whose
index is missing, behind or ahead of its log is synced first — unless a process runs the
debate now, which keeps its index current itself: that one is only read. Hits of several
debates are merged by score.

Start-up matters here (a person waits for the answer), so this module reads the debates'
folders and first log lines itself instead of loading their states (no pydantic import
when every index is current).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import StoreError
from ..storage.files import require_real_folder
from ..storage.lock import lock_held
from .index import INDEX_FILE, Hit, SearchIndex, open_index

EVENTS_FILE = "events.jsonl"
LOCK_FILE = ".lock"
HEAD_BYTES = 4 * 1024 * 1024
"""The first log line (`debate_started`) is read up to this size: it holds the problem and the prompts."""
OPEN = "\ue000"
CLOSE = "\ue001"
"""Marks around matched words in excerpts (private-use characters: no text a debate holds is
mistaken for one after `strip_marks`)."""


@dataclass(frozen=True)
class Debate:
    """What a hit's debate is: its id, problem, and who spoke."""

    id: str
    path: Path
    problem: str = ""
    protocol: str = "rounds"
    names: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Agent id → (display name, role)."""

    @property
    def step_word(self) -> str:
        return "turn" if self.protocol == "conversation" else "round"

    def speaker(self, agent_id: str) -> str:
        if not agent_id:
            return "moderator"
        name, role = self.names.get(agent_id, (agent_id, ""))
        return f"{name} ({role})" if role and role.lower() != name.lower() else name


@dataclass(frozen=True)
class DebateHit:
    debate: Debate
    hit: Hit


@dataclass
class Results:
    hits: list[DebateHit] = field(default_factory=list)
    searched: int = 0
    notes: list[str] = field(default_factory=list)
    """One line per debate that could not be searched, and why."""


def strip_marks(text: str) -> str:
    return text.replace(OPEN, "").replace(CLOSE, "")


def saved_debates(root: Path) -> list[Path]:
    """The debate folders of a state dir (as `moot list` finds them), by id."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir()
                  if not p.name.startswith(".") and p.is_dir() and (p / EVENTS_FILE).exists())


def find_debate(root: Path, debate_id: str) -> Path:
    """A debate by id or unique prefix; StoreError (one line) otherwise."""
    if not debate_id or "/" in debate_id or debate_id.startswith("."):
        raise StoreError(f"invalid debate id {debate_id!r}")
    path = root / debate_id
    if not path.is_dir():
        matches = [p for p in saved_debates(root) if p.name.startswith(debate_id)]
        if len(matches) != 1:
            raise StoreError(f"no debate {debate_id!r} in {root}" if not matches else
                             f"{debate_id!r} names {len(matches)} debates in {root}; give more of the id")
        path = matches[0]
    require_real_folder(path)
    if not (path / EVENTS_FILE).exists():
        raise StoreError(f"{path} holds no moot debate (no {EVENTS_FILE})")
    return path


def read_debate(path: Path) -> Debate:
    """The debate's id, problem and people, from the first line of its log."""
    try:
        with open(path / EVENTS_FILE, "rb") as fh:
            first = json.loads(fh.readline(HEAD_BYTES))
    except (OSError, ValueError, RecursionError):
        return Debate(path.name, path)
    if not isinstance(first, dict) or first.get("type") != "debate_started":
        return Debate(path.name, path)
    names: dict[str, tuple[str, str]] = {}
    for info in [*(first.get("agents") or []), first.get("judge") or {}]:
        if isinstance(info, dict) and isinstance(info.get("id"), str):
            names[info["id"]] = (str(info.get("name") or info["id"]), str(info.get("role") or ""))
    return Debate(path.name, path, str(first.get("problem") or ""), str(first.get("protocol") or "rounds"), names)


def debate_index(path: Path) -> SearchIndex:
    """A debate's index, current with its log: synced here, or read as it is while a process
    runs the debate (that process keeps it current)."""
    if lock_held(path / LOCK_FILE) and (path / INDEX_FILE).exists():
        return SearchIndex(path / INDEX_FILE, readonly=True)
    index = open_index(path)
    try:
        index.sync(path / EVENTS_FILE)
    except BaseException:
        index.close()
        raise
    return index


def search_debates(folders: list[Path], query: str, *, limit: int = 20, excerpt_tokens: int = 24) -> Results:
    """The best `limit` hits for `query` across `folders`, best first (see the module doc)."""
    out = Results()
    found: list[DebateHit] = []
    for path in folders:
        debate = read_debate(path)
        try:
            index = debate_index(path)
        except (StoreError, sqlite3.Error, OSError) as exc:
            out.notes.append(f"{path.name}: not searched ({str(exc) or type(exc).__name__})")
            continue
        try:
            hits = index.search(query, limit=limit, excerpt_tokens=excerpt_tokens, marks=(OPEN, CLOSE))
        except sqlite3.Error as exc:
            out.notes.append(f"{path.name}: not searched ({exc})")
            continue
        finally:
            index.close()
        out.searched += 1
        found += [DebateHit(debate, h) for h in hits]
    found.sort(key=lambda dh: (-dh.hit.score, dh.debate.id, dh.hit.step))
    out.hits = found[:limit]
    return out

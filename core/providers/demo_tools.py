"""The demo provider's scripted tool calls: list the references, read one file, search for a word
of the problem, then answer saying what it read. Offline and deterministic, so
`moot run "…" --ref . --provider demo` shows the whole tool flow with no key."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from .base import CallHint, Message, ToolCall
from .demo_text import problem_nouns

_LISTED = re.compile(r"^(\S.*?)  \(\d")
_PREFERRED = (".md", ".txt", ".rst", ".py", ".toml")


def wants_tools(hint: CallHint) -> bool:
    """The demo reads on an agent's first contribution only (a round-1 proposal or answer, the first
    turns of a conversation), so later rounds stay as quick as without references."""
    if hint.phase in ("proposal", "answer"):
        return hint.round == 1
    return hint.phase == "turn" and hint.round <= 3


def _offered(tools: Sequence[dict[str, Any]]) -> set[str]:
    return {str(t.get("function", {}).get("name")) for t in tools}


def _tool_messages(messages: Sequence[Message]) -> list[Message]:
    return [m for m in messages if m.get("role") == "tool"]


def _pick_file(listing: str) -> str | None:
    files = [m.group(1) for line in listing.splitlines() if (m := _LISTED.match(line))]
    for suffix in _PREFERRED:
        for f in files:
            if f.lower().endswith(suffix) and "/" not in f.strip("/"):
                return f
    for suffix in _PREFERRED:
        for f in files:
            if f.lower().endswith(suffix):
                return f
    return files[0] if files else None


def next_call(messages: Sequence[Message], hint: CallHint, tools: Sequence[dict[str, Any]]) -> ToolCall | None:
    """The script's next call given what the tool loop holds so far; None: time to answer."""
    if not tools or not wants_tools(hint):
        return None
    offered = _offered(tools)
    done = _tool_messages(messages)
    step = len(done)
    if step == 0 and "list_files" in offered:
        return ToolCall(id="demo-1", name="list_files", arguments=json.dumps({"path": "."}))
    if step <= 1 and "read_file" in offered:
        target = _pick_file(done[0]["content"]) if done else None
        if target:
            return ToolCall(id="demo-2", name="read_file", arguments=json.dumps({"path": target, "end_line": 60}))
    if step <= 2 and "search" in offered and not any("match" in m["content"].split("\n", 1)[0] for m in done):
        word = problem_nouns(hint.problem)[0]
        return ToolCall(id="demo-3", name="search", arguments=json.dumps({"query": word}))
    return None


def reading_note(messages: Sequence[Message]) -> str:
    """A closing section naming what the tool results said (empty when no tool ran)."""
    lines: list[str] = []
    for m in _tool_messages(messages):
        first = m["content"].split("\n", 1)[0].strip()
        if first.startswith("["):  # an extract that replaced the result
            lines.append(f"- {first[:160]}")
        elif first:
            lines.append(f"- {first[:160]}")
    if not lines:
        return ""
    return "\n## What I read in the references\n\n" + "\n".join(lines) + "\n"

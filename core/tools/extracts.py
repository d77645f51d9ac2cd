"""Rule-based extracts of tool results: a line of key facts per result, per tool (`Tool.facts`).

When a call's next model turn would not fit, the oldest tool results are replaced by these
(priority trimming); across calls they are what an agent's history keeps of what it read.
read_file: the path, the lines, the file type and its structure (definitions, headings);
search: the query, the number of matches, the files; list_files: the count and top entries;
recall: the query and the turns or rounds it brought back;
anything else (an MCP tool): its arguments, the size of its output and its first line.
Deterministic and offline: the same result always gives the same extract.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import PurePosixPath

MAX_EXTRACT_CHARS = 400
Facts = Callable[[dict[str, object], str], list[str]]
"""A tool's rule: its arguments and its result's text → the facts its extract keeps."""
_KINDS = {".py": "python", ".md": "markdown", ".rst": "text", ".txt": "text", ".ts": "typescript",
          ".tsx": "typescript", ".js": "javascript", ".jsx": "javascript", ".go": "go", ".rs": "rust",
          ".java": "java", ".kt": "kotlin", ".c": "c", ".h": "c", ".cc": "c++", ".cpp": "c++", ".rb": "ruby",
          ".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".json": "json", ".sql": "sql", ".sh": "shell"}
_DEFS = {
    "python": re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)"),
    "typescript": re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:function|class|interface|type|const)"
                             r"\s+(\w+)"),
    "javascript": re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:function|class|const)\s+(\w+)"),
    "go": re.compile(r"^func\s+(?:\([^)]*\)\s*)?(\w+)|^type\s+(\w+)"),
    "rust": re.compile(r"^\s*(?:pub\s+)?(?:fn|struct|enum|trait|impl)\s+(\w+)"),
    "java": re.compile(r"^\s*(?:public|private|protected)?\s*(?:static\s+)?(?:class|interface|enum)\s+(\w+)"),
    "sql": re.compile(r"^\s*create\s+(?:table|view|index)\s+(?:if\s+not\s+exists\s+)?(\w+)", re.I),
    "toml": re.compile(r"^\s*\[+([^\]]+)\]+"),
}
_NUMBERED = re.compile(r"^\s*\d+\| ?(.*)$")
_HEADING = re.compile(r"^(#{1,3})\s+(.+)")
_LINES = re.compile(r"\(lines (\d+)–(\d+) of (\d+)\)")
_MATCH = re.compile(r"^(.+?):(\d+): ")
_RECALLED = re.compile(r"^### ((?:Turn|Round) \d+)")


def _args(arguments: str) -> dict[str, object]:
    try:
        value = json.loads(arguments or "{}")
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _join(facts: list[str], name: str, ok: bool) -> str:
    text = f"[{'✓' if ok else '✗'} {name}: {' | '.join(facts)}]"
    return text if len(text) <= MAX_EXTRACT_CHARS else text[: MAX_EXTRACT_CHARS - 2] + "…]"


def read_facts(args: dict[str, object], content: str) -> list[str]:
    path = str(args.get("path") or "?")
    facts = [f"File: {path}"]
    m = _LINES.search(content.split("\n", 1)[0])
    if m:
        facts.append(f"Lines: {m.group(1)}–{m.group(2)} of {m.group(3)}")
    kind = _KINDS.get(PurePosixPath(path).suffix.lower(), "text")
    facts.append(f"Type: {kind}")
    body = [mm.group(1) for line in content.splitlines()[1:] if (mm := _NUMBERED.match(line))]
    pattern = _DEFS.get(kind)
    if pattern is not None:
        names = [next(g for g in d.groups() if g) for line in body if (d := pattern.match(line))]
        if names:
            facts.append(f"Defines: {', '.join(dict.fromkeys(names[:8]))}" + (" …" if len(names) > 8 else ""))
    if kind in ("markdown", "text"):
        heads = [h.group(2).strip() for line in body if (h := _HEADING.match(line))]
        if heads:
            facts.append(f"Headings: {'; '.join(heads[:6])}" + (" …" if len(heads) > 6 else ""))
        elif body:
            first = next((line.strip() for line in body if line.strip()), "")
            if first:
                facts.append(f"Starts: {first[:80]}")
    return facts


def search_facts(args: dict[str, object], content: str) -> list[str]:
    query = str(args.get("query") or "")[:80]
    matches = [m for line in content.splitlines()[1:] if (m := _MATCH.match(line))]
    head = content.split("\n", 1)[0]
    total = re.match(r"(\d+) match", head)
    files = list(dict.fromkeys(m.group(1) for m in matches))
    facts = [f'Query: "{query}"', f"Matches: {total.group(1) if total else len(matches)}", f"Files: {len(files)}"]
    if files:
        facts.append(f"Top files: {', '.join(files[:3])}")
    return facts


def list_facts(args: dict[str, object], content: str) -> list[str]:
    lines = content.splitlines()
    m = re.match(r"(\d+) files?", lines[0] if lines else "")
    entries = [line.split("  (", 1)[0] for line in lines[1:] if not line.startswith("[")]
    facts = [f"Path: {args.get('path') or '.'}", f"Entries: {m.group(1) if m else len(entries)}"]
    if entries:
        facts.append(f"Top: {', '.join(entries[:5])}")
    return facts


def recall_facts(args: dict[str, object], content: str) -> list[str]:
    found = list(dict.fromkeys(m.group(1) for line in content.splitlines() if (m := _RECALLED.match(line))))
    facts = [f'Query: "{str(args.get("query") or "")[:80]}"', f"Matches: {len(found)}"]
    if found:
        facts.append(f"From: {', '.join(found[:5])}")
    return facts


def other_facts(args: dict[str, object], content: str) -> list[str]:
    shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)[:40]}" for k, v in list(args.items())[:3])
    lines = content.splitlines()
    facts = [f"Args: {shown or '(none)'}", f"Output: {len(lines)} lines"]
    first = next((line.strip() for line in lines if line.strip()), "")
    if first:
        facts.append(f"First: {first[:100]}")
    return facts


def extract(name: str, arguments: str, content: str, ok: bool, facts: Facts | None = None) -> str:
    """The one-line extract of a tool result (`[✓ read_file: File: a.py | Lines: 1–80 of 120 | …]`);
    `facts`: the tool's own rule (`Tool.facts`), else the one for any tool."""
    if not ok:
        return _join([content.removeprefix("error: ").strip()[:200]], name, False)
    return _join((facts or other_facts)(_args(arguments), content), name, True)

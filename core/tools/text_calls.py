"""Tool calls that small local models write as text instead of sending them as `tool_calls`.

Qwen2.5-Coder-0.5B behind llama-server has a tool-calling template, yet it answers
```` ```json {"name": "read_file", "arguments": {"path": "notes/plan.md"}} ``` ```` without the
template's `<tool_call>` tags, so the server sees text. When tools were offered and a reply is
nothing but such an object naming an offered tool, the engine treats it as the call (and
records that it was parsed from text). A reply with anything else in it is an answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```$", re.S)
_TAGS = re.compile(r"^<tool_call>\s*(.*?)\s*</tool_call>$", re.S)
MAX_TEXT_CALL_CHARS = 4000


def parse_text_call(content: str, offered: Collection[str]) -> tuple[str, str] | None:
    """(tool name, arguments as JSON) when `content` is only a call of an offered tool, else None."""
    text = content.strip()
    if not text or len(text) > MAX_TEXT_CALL_CHARS:
        return None
    for pattern in (_FENCE, _TAGS):
        m = pattern.match(text)
        if m:
            text = m.group(1).strip()
    m = _TAGS.match(text)
    if m:
        text = m.group(1).strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # {"type": "function", "function": {...}}
        value = value["function"]
    name = value.get("name")
    if not isinstance(name, str) or name not in offered:
        return None
    args = value.get("arguments", value.get("parameters", {}))
    if isinstance(args, str):
        return name, args
    if not isinstance(args, dict):
        return None
    return name, json.dumps(args, ensure_ascii=False)

"""Untrusted text made safe for a terminal.

Text from a model, a server, a config or a file can hold escape sequences that a
terminal obeys: `ESC]0;…BEL` sets the window title, `ESC[2J` clears the screen,
OSC 8 hides a link, OSC 52 writes the clipboard. Every place that prints or renders
such text passes it through `terminal_safe` first (the event log keeps the raw
text: it is the audit trail). Newlines and tabs are kept; everything else in C0
(0x00–0x1F), DEL (0x7F) and C1 (0x80–0x9F) goes, escape sequences as a whole.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel

_T = TypeVar("_T")

# ESC-introduced sequences, whole: CSI (ESC [ … final), OSC / DCS / SOS / PM / APC strings
# (ESC ] … BEL or ST), and two-character escapes. Their 8-bit C1 forms too.
_ESCAPES = re.compile(
    r"""
    (?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]              # CSI … final byte
  | (?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])       # OSC, DCS, SOS, PM, APC …
      [^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?        # … up to BEL or ST (or the end)
  | \x1b[ -/]*[0-~]                                # two-character escapes (ESC c, ESC 7, …)
    """,
    re.VERBOSE,
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""What `terminal_safe` never leaves behind (tests assert on it)."""


def terminal_safe(text: str) -> str:
    """`text` without escape sequences and control characters (newline and tab kept).

    A carriage return becomes a newline when it ends a line (CRLF), else it goes:
    a bare CR would let text overwrite what came before it on the same line."""
    if not text:
        return text
    text = text.replace("\r\n", "\n")
    if "\x1b" in text or any("\x90" <= ch <= "\x9f" for ch in text):
        text = _ESCAPES.sub("", text)
    return _CONTROLS.sub("", text)


def one_line_safe(text: str, limit: int | None = None) -> str:
    """Safe text on one line (whitespace runs become one space), cut to `limit` with an ellipsis."""
    text = " ".join(terminal_safe(text).split())
    if limit is not None and len(text) > limit:
        return text[: max(0, limit - 1)] + "…"
    return text


_JSON_UNSAFE = re.compile(r"[\x7f-\x9f]")


def json_safe(document: str) -> str:
    """A JSON document with DEL and C1 characters written as `\\u00XX` escapes.

    JSON serializers escape C0 controls inside strings, but not DEL (0x7F) or C1
    (0x80–0x9F), which some terminals obey (0x9B is CSI). Those can only sit inside
    strings, so escaping them keeps the document valid and its values unchanged."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


def safe_copy(value: _T) -> _T:
    """`value` (a pydantic model, or lists, tuples and dicts of them) with every string made
    `terminal_safe`: what a view folds and shows. The original is never changed (the event
    log keeps the raw text); parts that need no change are shared, not copied."""
    return _clean(value)


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, BaseModel):
        changes = {}
        for name in type(value).model_fields:
            old = getattr(value, name)
            new = _clean(old)
            if new is not old:
                changes[name] = new
        return value.model_copy(update=changes) if changes else value
    if isinstance(value, (list, tuple)):
        items = [_clean(v) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return type(value)(items) if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        pairs = [(_clean(k), _clean(v)) for k, v in value.items()]
        if all(k2 is k and v2 is v for (k2, v2), (k, v) in zip(pairs, value.items())):
            return value
        return dict(pairs)
    return value

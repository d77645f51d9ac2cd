"""Untrusted text made safe for a terminal.

Text from a model, a server, a config or a file can hold escape sequences that a
terminal obeys: `ESC]0;…BEL` sets the window title, `ESC[2J` clears the screen,
OSC 8 hides a link, OSC 52 writes the clipboard. Every place that prints or renders
such text passes it through `terminal_safe` first (the event log keeps the raw
text: it is the audit trail). Newlines and tabs are kept; everything else in C0
(0x00–0x1F), DEL (0x7F) and C1 (0x80–0x9F) goes, escape sequences as a whole.
Invisible characters that reorder or hide what is shown (bidi overrides, zero-width
characters: "Trojan Source") go too; the letters of every script stay.
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

# Invisible characters that reorder or hide text (Trojan Source, CVE-2021-42574): bidi
# embeddings, overrides and isolates (U+202A–202E, U+2066–2069), the implicit marks (LRM, RLM,
# ALM), zero-width space and no-break space (U+200B, U+FEFF), word joiner and invisible
# operators (U+2060–2064), deprecated format controls (U+206A–206F), the soft hyphen, the
# Mongolian vowel separator, interlinear annotation (U+FFF9–FFFB) and the tag characters
# (U+E0000–E007F, which spell hidden ASCII). Letters of any script are never touched: Arabic
# and Hebrew render right to left by their own nature, not through these.
_HIDDEN = ("\u00ad\u061c\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
           "\ufff9-\ufffb\U000e0000-\U000e007f")
# Two joiners are kept where they do their job: ZWJ between emoji (👩‍💻 is one glyph), ZWNJ
# after a letter or mark and before a letter (Persian and Indic spelling needs it).
_EMOJI = ("\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u21aa\u231a-\u23ff\u24c2\u25aa-\u27bf"
          "\u2934\u2935\u2b05-\u2b55\u3030\u303d\u3297\u3299\ufe0f\U0001f000-\U0001faff")
_SPELLING = "\\w\u0300-\u036f\u0590-\u0dff"
_STRAY_JOINERS = (f"(?<![{_EMOJI}])\u200d|\u200d(?![{_EMOJI}])"
                  f"|(?<![{_SPELLING}])\u200c|\u200c(?!\\w)")
_INVISIBLE = re.compile(f"[{_HIDDEN}]|{_STRAY_JOINERS}")
_LINE_SEPARATORS = re.compile("[\u2028\u2029]")
"""Unicode's line and paragraph separators: line breaks, shown as one."""

UNSAFE = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\u2028\u2029{_HIDDEN}]|{_STRAY_JOINERS}")
"""What `terminal_safe` never leaves behind (tests assert on it)."""


_C1 = re.compile("[\x90-\x9f]")
"""A C1 control that starts a string sequence (DCS, OSC, …): never in ASCII text."""


def terminal_safe(text: str) -> str:
    """`text` without escape sequences, control characters and invisible reordering or
    zero-width characters (newline and tab kept; U+2028/2029 become newlines).

    A carriage return becomes a newline when it ends a line (CRLF), else it goes:
    a bare CR would let text overwrite what came before it on the same line."""
    if not text:
        return text
    text = text.replace("\r\n", "\n")
    if "\x1b" in text or (not text.isascii() and _C1.search(text)):
        text = _ESCAPES.sub("", text)
    text = _CONTROLS.sub("", text)
    if text.isascii():
        return text
    return _INVISIBLE.sub("", _LINE_SEPARATORS.sub("\n", text))


def one_line_safe(text: str, limit: int | None = None) -> str:
    """Safe text on one line (whitespace runs become one space), cut to `limit` with an ellipsis."""
    text = " ".join(terminal_safe(text).split())
    if limit is not None and len(text) > limit:
        # A joiner kept between two emoji must not end up beside the ellipsis, joining nothing.
        return text[: max(0, limit - 1)].rstrip("\u200c\u200d") + "…"
    return text


_JSON_UNSAFE = re.compile(f"[\\x7f-\\x9f\u200c\u200d\u2028\u2029{_HIDDEN}]")


def _json_escape(ch: str) -> str:
    n = ord(ch)
    if n < 0x10000:
        return f"\\u{n:04x}"
    n -= 0x10000  # a UTF-16 surrogate pair, as JSON writes characters past the BMP
    return f"\\u{0xd800 + (n >> 10):04x}\\u{0xdc00 + (n & 0x3ff):04x}"


def json_safe(document: str) -> str:
    """A JSON document with DEL, C1 and the invisible reordering characters written as
    `\\uXXXX` escapes.

    JSON serializers escape C0 controls inside strings, but not DEL (0x7F) or C1
    (0x80–0x9F), which some terminals obey (0x9B is CSI), nor bidi overrides or zero-width
    characters, which reorder or hide what a terminal shows. Those can only sit inside
    strings, so escaping them keeps the document valid and its values unchanged."""
    if document.isascii() and "\x7f" not in document:  # DEL is ASCII too
        return document
    return _JSON_UNSAFE.sub(lambda m: _json_escape(m.group()), document)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def csv_cell(value: object) -> object:
    """An untrusted value as a CSV cell: terminal-safe (a bare CR, which the CSV writer leaves
    unquoted, would split the row), and never a spreadsheet formula: a string starting with
    = + - @ (or a tab or CR) is one to Excel, LibreOffice and Sheets (`=HYPERLINK(…)` sends data
    away, `=cmd|…` runs a program), so it gets a leading single quote (OWASP's advice). A plain
    number (-12, +3.5) is no formula and stays a number; values that are not text stay as they are."""
    if not isinstance(value, str):
        return value
    value = terminal_safe(value)
    if value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


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

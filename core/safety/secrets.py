"""Keep API keys out of anything we show, log or save.

Error texts from servers and SDKs can echo the key ("Incorrect API key provided:
sk-abc..."), a proxy can send it back as the model's name, a user can paste it into a
problem or a base URL. Every writer (the event log, the state, reports, eval output,
error lines) passes text through `redact`, the one function that masks keys:
- every configured key, whole, and without its common prefix (`sk-`, `sk-proj-`, …), and
  both of those as a server may echo them encoded: Base64 (standard or URL-safe, wherever
  the key sits in the encoded text), hex, reversed, URL-encoded (`encoded_forms`);
- anything shaped like a key (`sk-…`, `Bearer …`, `Basic …`);
- the userinfo of URLs (`http://user:KEY@host` → `http://***@host`).
Masking happens before any truncation, so a cut never leaves half a key.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote

from .sanitize import one_line_safe, terminal_safe

MASK = "sk-***"

KEY_NAMES = ("OPENAI_API_KEY", "OPENROUTER_API_KEY")
"""The environment variables that hold API keys; the providers read keys from them (`providers/keys.py`)."""

# OpenAI ("sk-", "sk-proj-"), OpenRouter ("sk-or-v1-"), Anthropic ("sk-ant-") and
# the partly starred forms servers echo back ("sk-abc1****wxyz").
_KEY_RE = re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-*.]{6,}")
_BEARER_RE = re.compile(r"(?i)((?:bearer|basic)\s+)[^\s\"',;]+")
"""An Authorization header's credentials: a bearer key, or `user:password` in Base64 (what an
HTTP client sends for a base URL with userinfo)."""
_USERINFO_RE = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{0,15}://)[^/\s@?#]+@")
_PREFIXES = ("sk-proj-", "sk-or-v1-", "sk-ant-api03-", "sk-ant-", "sk-")
_MIN_SECRET_LEN = 4
"""Shorter 'secrets' would blank out ordinary words; no real key is that short."""
_MIN_BARE_LEN = 8
"""A key without its prefix is masked only when what is left is this long (and its encoded
forms only when the key is: shorter ones would match ordinary text)."""
_URLSAFE = str.maketrans("+/", "-_")


def secret_variants(secrets: Iterable[str]) -> list[str]:
    """Every form of each secret worth masking, longest first."""
    return list(_variants(tuple(secrets)))


@lru_cache(maxsize=64)
def _variants(secrets: tuple[str, ...]) -> tuple[str, ...]:
    out: set[str] = set()
    for s in secrets:
        s = (s or "").strip()
        if len(s) < _MIN_SECRET_LEN:
            continue
        forms = [s]
        for prefix in _PREFIXES:
            if s.startswith(prefix) and len(s) - len(prefix) >= _MIN_BARE_LEN:
                forms.append(s[len(prefix):])
                break
        for form in forms:
            out.add(form)
            if len(form) >= _MIN_BARE_LEN:
                out.update(encoded_forms(form))
    return tuple(sorted(out, key=len, reverse=True))


def encoded_forms(secret: str) -> set[str]:
    """How a server may echo `secret` encoded: reversed, hex (either case), URL-encoded, and
    Base64 (standard and URL-safe) wherever it sits in the encoded text.

    Base64 turns 3 bytes into 4 characters, so the key's characters depend on where the key
    starts modulo 3 (`Basic base64(user:key)` puts it anywhere). For each of the 3 offsets,
    the run of characters made of the key's bits alone is masked; the one or two characters
    at each end that mix in neighbouring bytes carry at most 4 bits of it."""
    raw = secret.encode("utf-8")
    forms = {secret[::-1], raw.hex(), raw.hex().upper(), quote(secret, safe="")}
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
        start = -(-8 * offset // 6)  # the first character holding key bits only
        end = 8 * (offset + len(raw)) // 6  # past the last such character
        forms.add(encoded[start:end])
        forms.add(encoded[start:end].translate(_URLSAFE))
    return {f for f in forms if len(f) >= _MIN_BARE_LEN and f != secret}


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """`text` with every key-like token, every form of each secret and URL userinfo masked."""
    if not text:
        return text
    for secret in secret_variants(secrets):
        text = text.replace(secret, MASK)
    text = _USERINFO_RE.sub(lambda m: m.group(1) + "***@", text)
    text = _BEARER_RE.sub(lambda m: m.group(1) + MASK, text)
    return _KEY_RE.sub(MASK, text)


_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-*.+/=%:@")
"""What keys, their encoded forms and URL userinfo are made of: streamed text ending in a run of
these may still grow into one."""
_AUTH_TAIL = re.compile(r"(?i)(?:bearer|basic)\s+\Z")
HOLD_MAX = 4096
"""A run without a break longer than this is let through but for its last `HOLD_KEEP` characters."""
HOLD_KEEP = 1024


class StreamRedactor:
    """`redact` for text that arrives in pieces (a streamed reply): a key split across two
    deltas is masked too. Each piece is let through up to the start of a run that could
    still be part of a key, and that run is held until a character that ends it arrives
    (prose is delayed by a word at most)."""

    def __init__(self, secrets: Sequence[str] = ()) -> None:
        self._secrets = tuple(secrets)
        self._held = ""

    def feed(self, delta: str) -> str:
        """What of the text so far can be shown, masked."""
        text = self._held + delta
        cut, stop = len(text), max(0, len(text) - HOLD_MAX - 1)
        while cut > stop and text[cut - 1] in _KEY_CHARS:
            cut -= 1
        if cut == stop and stop > 0:  # a run longer than any key: let most of it through
            cut = len(text) - HOLD_KEEP
        else:
            auth = _AUTH_TAIL.search(text, max(0, cut - 64), cut)  # `Bearer KEY` is masked as a whole
            cut = auth.start() if auth else cut
        self._held = text[cut:]
        return redact(text[:cut], self._secrets)

    def flush(self) -> str:
        """The rest, masked (at the end of the stream)."""
        text, self._held = self._held, ""
        return redact(text, self._secrets)

    def reset(self) -> None:
        """The stream starts over: what is held is dropped with what was shown."""
        self._held = ""


def one_line(text: str, limit: int | None = None, secrets: Sequence[str] = ()) -> str:
    """Made terminal-safe, then masked, then put on one line and cut: the shape of every error line.
    Cleaning comes first because a key split by a control character is whole only once it is gone;
    cutting comes last because a key cut in two is no longer found to be masked."""
    return one_line_safe(redact(terminal_safe(text), secrets), limit)


def strip_userinfo(url: str | None) -> str | None:
    """A base URL without `user:password@` (what a saved config may hold)."""
    if not url:
        return url
    return _USERINFO_RE.sub(lambda m: m.group(1), url)


def known_secrets(dotenv_path: str | Path | None = ".env") -> list[str]:
    """Every configured API key (environment and `.env`), for masking error lines."""
    found = [os.environ.get(name, "") for name in KEY_NAMES]
    if dotenv_path is not None:
        try:
            if Path(dotenv_path).is_file():
                from dotenv import dotenv_values

                values = dotenv_values(dotenv_path)
                found += [values.get(name) or "" for name in KEY_NAMES]
        except Exception:  # noqa: BLE001 - an unreadable .env must not hide the real error
            pass
    return [s.strip() for s in found if s and s.strip()]

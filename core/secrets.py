"""Keep API keys out of anything we show, log or save.

Error texts from servers and SDKs can echo the key ("Incorrect API key provided:
sk-abc..."), so every message that leaves a provider goes through `redact`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

MASK = "sk-***"

# OpenAI ("sk-", "sk-proj-"), OpenRouter ("sk-or-v1-"), Anthropic ("sk-ant-") and
# the partly starred forms servers echo back ("sk-abc1****wxyz").
_KEY_RE = re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-*.]{6,}")
_BEARER_RE = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")
_MIN_SECRET_LEN = 4
"""Shorter 'secrets' would blank out ordinary words; no real key is that short."""


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """`text` with every key-like token and every exact secret replaced by `sk-***`."""
    if not text:
        return text
    # Longest first, so a secret that contains another is masked whole.
    for secret in sorted({s for s in secrets if s and len(s) >= _MIN_SECRET_LEN}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    text = _BEARER_RE.sub(lambda m: m.group(1) + MASK, text)
    return _KEY_RE.sub(MASK, text)


KEY_NAMES = ("OPENAI_API_KEY", "OPENROUTER_API_KEY")


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

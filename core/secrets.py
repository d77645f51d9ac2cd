"""Keep API keys out of anything we show, log or save.

Error texts from servers and SDKs can echo the key ("Incorrect API key provided:
sk-abc..."), so every message that leaves a provider goes through `redact`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

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

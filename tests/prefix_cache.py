"""A provider's prompt cache, modelled: how much of a request repeats the start of an earlier one.

Real servers keep what they computed for a prompt and reuse it for the next request that
starts the same way: llama.cpp per slot (`cache_prompt`), vLLM per block of tokens,
OpenAI per prefix of at least 1,024 tokens. Modelled here the way the issue measures it:
a request is served from cache for the longest prefix (in tokens) it shares with the
previous request of the same speaker; a speaker is a llama.cpp slot when the request
names one (`id_slot`), else its system message (each agent has its own).

The prompt is tokenized as a chat template lays it out: per message a start marker, the
role, the content's tokens and an end marker; so two requests share a prefix through
every identical message and into the first one that differs, up to where its text does.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from moot.core.tokens import encoding_for_model

_START, _END = -1, -2
"""Marker tokens around each message (no real token id is negative)."""


def prompt_tokens(messages: Sequence[Mapping[str, Any]], model: str = "") -> list[int]:
    """The request's prompt as one token sequence (see the module doc)."""
    encoding = encoding_for_model(model)
    out: list[int] = []
    for m in messages:
        content = m.get("content")
        text = content if isinstance(content, str) else ""
        out += [_START, *encoding.encode(str(m.get("role", ""))), *encoding.encode(text, disallowed_special=()),
                _END]
    return out


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def speaker_of(body: Mapping[str, Any]) -> str:
    """Whose cache a request uses: its llama.cpp slot when it names one, else its system message."""
    slot = body.get("id_slot")
    if isinstance(slot, int) and slot >= 0:
        return f"slot:{slot}"
    messages = body.get("messages") or []
    first = messages[0] if messages else {}
    text = first.get("content") if isinstance(first, Mapping) and first.get("role") == "system" else ""
    return "system:" + hashlib.sha256(str(text).encode()).hexdigest()[:16]


class PrefixCache:
    """Per speaker, the previous request's tokens; `lookup` says how many of a new one are cached."""

    def __init__(self) -> None:
        self._last: dict[str, list[int]] = {}
        self._lock = threading.Lock()

    def lookup(self, body: Mapping[str, Any]) -> tuple[int, int]:
        """(cached tokens, prompt tokens) of `body` in this cache's token sequence, and remember it.
        At least the last token is always computed, as a real server does."""
        tokens = prompt_tokens(body.get("messages") or [], str(body.get("model") or ""))
        key = speaker_of(body)
        with self._lock:
            previous = self._last.get(key)
            self._last[key] = tokens
        cached = common_prefix(previous, tokens) if previous is not None else 0
        return min(cached, max(0, len(tokens) - 1)), len(tokens)


def cache_share(bodies: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """(cached, prompt) tokens summed over `bodies` in arrival order, by `PrefixCache`'s rule."""
    cache = PrefixCache()
    cached = total = 0
    for body in bodies:
        c, t = cache.lookup(body)
        cached += c
        total += t
    return cached, total

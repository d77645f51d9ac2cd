"""Windows servers stated, remembered between runs, so that a second run starts without probing.

One small JSON file (`$MOOT_WINDOW_CACHE`, default `windows.json` in moot's cache folder, beside
the token tables): per endpoint and model, the window and slot count the server stated, or
that it stated none, and when. An entry is trusted for `MAX_AGE_S`; a server restarted with
another window within that time is corrected by its first refusal (`engine.windows`), as any
wrong window is. The file is a cache: unreadable or foreign, it is ignored and rewritten;
written atomically (a temporary file renamed), so a crash or two runs at once never leave half of
one. Nothing an address or a model's name holds is stored, only a hash of the two: a base URL
may carry a password (`https://user:pass@host/v1`) and a hostile server may name its model after
the key it was sent.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import openai

from ..storage.files import write_atomic
from ..tokens import cache_dir
from .discovery import Stated, discover

MAX_AGE_S = 24 * 3600.0
"""How long a stated window is used without asking again."""
MAX_ENTRIES = 256
"""The oldest entries beyond this many are dropped (the file stays small)."""
VERSION = 3
"""2: an entry also says whether the server is llama.cpp's (its request fields, a kept slot);
3: entries are filed under a hash of endpoint and model."""


async def discover_remembered(client: openai.AsyncOpenAI, base_url: str, model: str, deadline_s: float) -> Stated:
    """`discovery.discover`, asked at most once per `MAX_AGE_S` for an endpoint and model: what the
    server stated is remembered, and so is its saying nothing (not a probe that got no answer)."""
    known = recall(base_url, model)
    if known is not None:
        return known
    stated = await discover(client, base_url, model, deadline_s)
    if stated.window is not None or stated.answered:
        remember(base_url, model, stated)
    return stated


def cache_file() -> Path:
    explicit = os.environ.get("MOOT_WINDOW_CACHE")
    return Path(explicit) if explicit else cache_dir() / "windows.json"


def entry_key(base_url: str, model: str) -> str:
    """The entry's name: a hash of the endpoint and the model, never their text."""
    return hashlib.sha256(f"{base_url.rstrip('/')}\n{model}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _read(path: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads(path.read_bytes()[: 1 << 20])
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("entries"), dict):
        return {}
    return {k: v for k, v in data["entries"].items() if isinstance(k, str) and isinstance(v, dict)}


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def recall(base_url: str, model: str, now: float | None = None) -> Stated | None:
    """What the server at `base_url` stated for `model` less than `MAX_AGE_S` ago, if remembered."""
    entry = _read(cache_file()).get(entry_key(base_url, model))
    if entry is None:
        return None
    at = entry.get("at")
    now = time.time() if now is None else now
    if not isinstance(at, (int, float)) or not 0 <= now - at < MAX_AGE_S:
        return None
    return Stated(_count(entry.get("window")), _count(entry.get("slots")), entry.get("llama_cpp") is True)


def remember(base_url: str, model: str, stated: Stated, now: float | None = None) -> None:
    """Keep what the server stated (best effort: a cache that cannot be written is left alone)."""
    path = cache_file()
    entries = _read(path)
    entries[entry_key(base_url, model)] = {"window": stated.window, "slots": stated.slots, "llama_cpp": stated.llama_cpp,
                                      "at": time.time() if now is None else now}
    if len(entries) > MAX_ENTRIES:
        newest = sorted(entries.items(), key=lambda kv: kv[1].get("at") or 0, reverse=True)  # type: ignore[arg-type, return-value]  # checked as numbers on read
        entries = dict(newest[:MAX_ENTRIES])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({"version": VERSION, "entries": entries}, indent=1).encode("utf-8"))
    except OSError:
        pass

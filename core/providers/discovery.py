"""Asking an OpenAI-compatible server for a model's context window, without ever waiting on it.

Servers say it in different places: llama.cpp `GET /props` (a slot's `n_ctx`, and
`total_slots`), vLLM `max_model_len`, OpenRouter `context_length` and llama.cpp `meta.n_ctx`
in `GET /models`, Ollama `POST /api/show` (`num_ctx` when set). OpenAI's own API says none.

The probes run at once, each under the same whole-request deadline (from the request to the
last byte, however slowly the server drips) and a byte cap (`capped.read_cap`): a server
that never ends an answer, or answers with megabytes, costs at most the deadline and the cap.
A probe that fails, times out or is cut means "not stated here"; the window is then unknown,
never a hang.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import openai

from .capped import read_cap

PROBE_DEADLINE_S = 3.0
"""Each probe, whole; as they run at once, also what discovery costs a run at most
(lower when `debate.timeout_s` is)."""
PROBE_CAPS = {"props": 256 << 10, "models": 4 << 20, "api/show": 1 << 20}
"""Bytes read of each answer. llama.cpp's `/props` carries the chat template (tens of KB);
OpenRouter's `/models` lists every model it serves (about 1.5 MB in 2025); Ollama's
`/api/show` carries the model's licence."""


@dataclass(frozen=True)
class Stated:
    """What a server stated about a model."""

    window: int | None = None
    slots: int | None = None
    llama_cpp: bool = False
    """`GET /props` answered as llama.cpp's server does (its slots and their settings): the
    endpoint takes llama.cpp's own request fields (`cache_prompt`, `id_slot`)."""
    answered: bool = True
    """Every probe had an answer (a refusal such as 404 counts): none was cut short by its
    deadline, its cap or a broken connection, so "no window stated" is the server's word."""


async def discover(client: openai.AsyncOpenAI, base_url: str, model: str, deadline_s: float) -> Stated:
    """The window (and llama.cpp's slot count) the server at `base_url` states for `model`."""
    base = base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    api = client.with_options(timeout=deadline_s, max_retries=0)
    at_root = api.with_options(base_url=root + "/")
    deadline = asyncio.get_running_loop().time() + deadline_s

    unanswered: list[str] = []

    async def probe(name: str, send: Callable[[], Awaitable[object]]) -> dict[str, Any] | None:
        try:
            async with asyncio.timeout_at(deadline):
                with read_cap(PROBE_CAPS[name]):
                    data = await send()
        except Exception as exc:  # noqa: BLE001 - a probe that fails in any way states nothing
            if not isinstance(exc, openai.APIStatusError):
                unanswered.append(name)
            return None
        return data if isinstance(data, dict) else None

    props, models, show = await asyncio.gather(
        probe("props", lambda: at_root.get("props", cast_to=object)),
        probe("models", lambda: api.get("models", cast_to=object)),
        probe("api/show", lambda: at_root.post("api/show", body={"model": model}, cast_to=object)),
    )
    slots = _slots(props) if props else None
    llama = props is not None and isinstance(props.get("default_generation_settings"), dict) and slots is not None
    for data, read in ((props, _from_props), (models, _from_models), (show, _from_ollama)):
        try:
            found = read(data, model) if data is not None else None
        except (ValueError, TypeError, KeyError, AttributeError):
            found = None
        if found is not None and 256 <= found <= 10_000_000:
            return Stated(found, slots, llama)
    return Stated(None, slots, llama, answered=not unanswered)


def _number(value: object) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _slots(data: dict[str, Any]) -> int | None:
    slots = data.get("total_slots")
    return slots if isinstance(slots, int) and not isinstance(slots, bool) and 0 < slots <= 256 else None


def _from_props(data: dict[str, Any], model: str) -> int | None:
    settings = data.get("default_generation_settings") or {}
    n = settings.get("n_ctx") if isinstance(settings, dict) else None
    return _number(n or data.get("n_ctx"))


def _from_models(data: dict[str, Any], model: str) -> int | None:
    entries = [e for e in data.get("data") or [] if isinstance(e, dict)]
    entry = next((e for e in entries if e.get("id") == model), entries[0] if len(entries) == 1 else None)
    if entry is None:
        return None
    meta: dict[str, Any] = entry["meta"] if isinstance(entry.get("meta"), dict) else {}
    top: dict[str, Any] = entry["top_provider"] if isinstance(entry.get("top_provider"), dict) else {}
    for value in (entry.get("max_model_len"), meta.get("n_ctx"), entry.get("context_length"),
                  top.get("context_length"), entry.get("context_window"), entry.get("max_context_length")):
        if _number(value) is not None:
            return _number(value)
    return None


def _from_ollama(data: dict[str, Any], model: str) -> int | None:
    m = re.search(r"(?m)^\s*num_ctx\s+(\d+)", str(data.get("parameters") or "")[:PROBE_CAPS["api/show"]])
    return int(m.group(1)) if m else None

"""Whether an endpoint's model can call tools, when the server says so.

llama.cpp's `GET /props` reports `chat_template_caps.supports_tools`: false for a model whose
chat template ignores tools (SmolLM2's: it accepts `tools` with HTTP 200 and never calls
one). Other servers do not say; then the first refusal of a request with `tools` tells.
"""

from __future__ import annotations

from typing import Any

import openai

try:  # openai 3.x runs on httpx2; older releases on httpx
    import httpx2 as _httpx
except ImportError:  # pragma: no cover
    import httpx as _httpx  # type: ignore[no-redef, import-not-found, unused-ignore]  # older SDKs

PROBE_TIMEOUT_S = 3.0


async def probe_tool_support(client: openai.AsyncOpenAI, base_url: str) -> bool | None:
    """True/False when `/props` states the template's tool support, else None. Never raises."""
    base = base_url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    api = client.with_options(timeout=PROBE_TIMEOUT_S, max_retries=0, base_url=root + "/")
    try:
        data: Any = await api.get("props", cast_to=object)
    except (openai.APIError, _httpx.HTTPError, ValueError, TypeError, KeyError, AttributeError):
        return None
    caps = data.get("chat_template_caps") if isinstance(data, dict) else None
    value = caps.get("supports_tools") if isinstance(caps, dict) else None
    return value if isinstance(value, bool) else None

"""Driving a provider's typed stream from tests: items recorded in order, as a view sees them."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from moot.core.errors import ProviderError
from moot.core.providers.base import (
    CallHint,
    ChatRequest,
    Completion,
    Finished,
    JsonAnswer,
    Message,
    Provider,
    Restart,
    RetryNotice,
    TextDelta,
)

RESTART = Restart()
"""What `on_delta` receives for a Restart item (deltas are text, or this)."""


async def complete(provider: Provider, messages: list[Message] | list[dict[str, str]], *, model: str,
                   temperature: float, max_tokens: int, hint: CallHint,
                   on_delta: Callable[[Any], Any] | None = None, on_retry: Callable[[str], Any] | None = None,
                   fallback_models: Sequence[str] = (), json_answer: JsonAnswer | None = None) -> Completion:
    """Stream one request; text deltas (and RESTART) go to `on_delta`, retry notices to `on_retry`."""
    request = ChatRequest(messages=list(messages), model=model, temperature=temperature,  # type: ignore[arg-type]
                          max_tokens=max_tokens, hint=hint, fallback_models=tuple(fallback_models),
                          json_answer=json_answer)

    async def call(fn: Callable[[Any], Any] | None, value: Any) -> None:
        if fn is not None:
            result = fn(value)
            if inspect.isawaitable(result):
                await result

    async for item in provider.stream(request):
        if isinstance(item, TextDelta):
            await call(on_delta, item.text)
        elif isinstance(item, Restart):
            await call(on_delta, RESTART)
        elif isinstance(item, RetryNotice):
            await call(on_retry, item.reason)
        elif isinstance(item, Finished):
            return item.completion
    raise ProviderError("the stream ended without a completion")

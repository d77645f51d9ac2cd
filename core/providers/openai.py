"""The real provider: any OpenAI-compatible server through the official `openai` SDK.

The SDK's own retries are off (`max_retries=0`): it does not retry a stream that
breaks half-way, and every retry has to be reported through `on_retry` and undo
the text already shown (RESTART). So retries, backoff and fallbacks live here.
"""

from __future__ import annotations

import asyncio
import inspect
import ipaddress
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import openai
from dotenv import dotenv_values

try:  # openai 3.x runs on httpx2; older releases on httpx
    import httpx2 as _httpx
except ImportError:  # pragma: no cover
    import httpx as _httpx  # type: ignore[no-redef]

from core.providers.base import RESTART, CallHint, Completion, DeltaCallback, Message, ProviderError
from core.secrets import redact
from core.tokens import count_messages, count_text

LOCAL_PLACEHOLDER_KEY = "not-needed"
"""Sent to local servers (Ollama, vLLM, LM Studio) that ignore the key but the SDK wants one."""
RETRY_AFTER_CAP_S = 60.0
ERROR_TEXT_MAX = 200
DEFAULT_HOST = "api.openai.com"


def is_local_url(base_url: str | None) -> bool:
    """True for loopback, localhost and private-network hosts, where no key is needed."""
    if not base_url:
        return False
    host = (urlsplit(base_url if "//" in base_url else f"//{base_url}").hostname or "").lower()
    if host in ("localhost", "host.docker.internal") or host.endswith((".localhost", ".local")):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified


def resolve_api_key(
    base_url: str | None,
    *,
    env: Mapping[str, str] | None = None,
    dotenv_path: str | Path | None = ".env",
) -> str | None:
    """The key for `base_url`: OPENROUTER_API_KEY for OpenRouter, else OPENAI_API_KEY.

    Each name is looked up in the process environment, then in `.env` (read, never
    loaded into os.environ); the other provider's name is the fallback.
    """
    env = os.environ if env is None else env
    names = ["OPENAI_API_KEY", "OPENROUTER_API_KEY"]
    if base_url and "openrouter" in base_url.lower():
        names.reverse()
    file_values: Mapping[str, str | None] = {}
    if dotenv_path is not None and Path(dotenv_path).is_file():
        file_values = dotenv_values(dotenv_path)
    for name in names:
        for source in (env, file_values):
            value = (source.get(name) or "").strip()
            if value:
                return value
    return None


@dataclass(eq=False)
class _Failure(Exception):
    """One failed attempt. `reason` is a short safe line; `retryable` decides what happens next."""

    reason: str
    retryable: bool
    status: int | None = None
    detail: str = ""
    retry_after: float | None = None
    shown: bool = False
    """Deltas of this attempt were already delivered (the next one must send RESTART)."""


def _retry_after(response: _httpx.Response) -> float | None:
    """Seconds from `retry-after-ms` or `Retry-After` (seconds form only), capped."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = response.headers.get(name)
        if raw:
            try:
                seconds = float(raw) * scale
            except ValueError:
                continue
            if seconds >= 0:
                return min(seconds, RETRY_AFTER_CAP_S)
    return None


def _server_message(exc: openai.APIError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        inner = body.get("error")
        message = body.get("message") or (inner.get("message") if isinstance(inner, Mapping) else inner)
        if isinstance(message, str) and message:
            return message
    if isinstance(body, str) and body.strip():
        return body
    return exc.message


def _classify(exc: Exception, timeout_s: float) -> _Failure:
    """Map an SDK/transport exception to a failure we can report and decide on."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retryable = status in (408, 429) or status >= 500
        retry_after = _retry_after(exc.response) if status == 429 or status == 503 else None
        return _Failure(f"{status} from server", retryable, status, _server_message(exc), retry_after)
    if isinstance(exc, (openai.APITimeoutError, _httpx.TimeoutException)):
        return _Failure(f"no answer within {timeout_s:g}s", True, detail="timed out")
    if isinstance(exc, (openai.APIConnectionError, _httpx.TransportError)):
        cause = exc.__cause__ or exc
        return _Failure("connection error", True, detail=f"{type(cause).__name__}: {cause}")
    if isinstance(exc, openai.APIError):  # an error event inside the stream
        return _Failure("error in stream", True, detail=_server_message(exc))
    return _Failure("unexpected error", False, detail=f"{type(exc).__name__}: {exc}")


def _clean(text: str) -> str:
    """Text that can be saved as UTF-8: a server can send lone surrogates (a bad
    `\\ud83d` escape, an emoji split across chunks), which no JSON log line can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _one_line(text: str, limit: int = ERROR_TEXT_MAX) -> str:
    text = " ".join(_clean(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def _emit(on_delta: DeltaCallback | None, text: str) -> None:
    if on_delta is not None:
        result = on_delta(text)
        if inspect.isawaitable(result):
            await result


class OpenAIProvider:
    """Streams chat completions from OpenAI, OpenRouter or any compatible server."""

    name = "openai"

    def __init__(
        self,
        api_key: str,
        base_url: str | None,
        *,
        timeout_s: float = 120,
        max_retries: int = 3,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30,
    ) -> None:
        if not api_key and not is_local_url(base_url):
            raise ProviderError(
                "no API key: set OPENAI_API_KEY (or OPENROUTER_API_KEY for OpenRouter) "
                "in the environment or in .env"
            )
        self._key = api_key or LOCAL_PLACEHOLDER_KEY
        self.base_url = base_url
        self.host = urlsplit(base_url).netloc if base_url else DEFAULT_HOST
        self.label = f"openai · {self.host}"
        self.timeout_s = timeout_s
        self.max_retries = max(0, max_retries)
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self._client = openai.AsyncOpenAI(
            api_key=self._key, base_url=base_url, max_retries=0, timeout=timeout_s
        )

    def _secrets(self) -> tuple[str, ...]:
        return (self._key,)

    def _backoff(self, attempt: int, failure: _Failure) -> float:
        """Retry-After when the server sent one, else full-jitter exponential backoff."""
        if failure.retry_after is not None:
            return failure.retry_after
        cap = min(self.backoff_max_s, self.backoff_base_s * 2**attempt)
        return random.uniform(0, max(0.0, cap))

    async def complete(
        self,
        messages: list[Message],
        *,
        model: str,
        temperature: float,
        max_tokens: int,
        hint: CallHint,
        on_delta: DeltaCallback | None = None,
        on_retry: Callable[[str], None] | None = None,
        fallback_models: Sequence[str] = (),
    ) -> Completion:
        """Stream one completion, retrying transient failures and then the fallbacks."""
        del hint  # only the demo provider writes from it
        started = time.monotonic()
        models = list(dict.fromkeys([model, *fallback_models]))
        total = self.max_retries + 1
        attempts = 0
        last: _Failure | None = None
        shown = False  # deltas of a failed attempt are on screen

        def report(line: str) -> None:
            if on_retry is not None:
                on_retry(redact(_one_line(line), self._secrets()))

        for index, current in enumerate(models):
            if index > 0 and last is not None:
                report(f"{models[index - 1]} failed ({last.reason}), falling back to {current}")
            for attempt in range(total):
                if shown:
                    await _emit(on_delta, RESTART)
                    shown = False
                attempts += 1
                try:
                    content, prompt, completion, reported = await self._attempt(
                        messages, current, temperature, max_tokens, on_delta
                    )
                except _Failure as failure:
                    last, shown = failure, failure.shown
                    if not failure.retryable:
                        raise self._error(failure, models[: index + 1], attempts) from None
                    if attempt + 1 < total:
                        delay = self._backoff(attempt, failure)
                        report(f"{failure.reason}, retrying in {delay:.1f}s (attempt {attempt + 2}/{total})")
                        await asyncio.sleep(delay)
                    continue
                return Completion(
                    content=content,
                    prompt_tokens=prompt,
                    completion_tokens=completion,
                    model=reported or current,
                    latency_ms=int((time.monotonic() - started) * 1000),
                    attempts=attempts,
                )
        assert last is not None
        raise self._error(last, models, attempts)

    def _error(self, failure: _Failure, tried: Sequence[str], attempts: int) -> ProviderError:
        """One safe line: what failed, where, and what the server said."""
        where = f"{' → '.join(tried)} at {self.host}"
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        detail = f": {_one_line(failure.detail)}" if failure.detail else ""
        line = redact(_one_line(f"{failure.reason} ({where}){tries}{detail}", 400), self._secrets())
        return ProviderError(line, retryable=failure.retryable, status=failure.status)

    async def _attempt(
        self,
        messages: list[Message],
        model: str,
        temperature: float,
        max_tokens: int,
        on_delta: DeltaCallback | None,
    ) -> tuple[str, int, int, str | None]:
        """One streamed request: (content, prompt_tokens, completion_tokens, reported model)."""
        parts: list[str] = []
        usage = None
        reported: str | None = None
        finished = False
        streaming = False
        try:
            stream = await self._client.chat.completions.create(
                model=model,
                messages=messages,  # type: ignore[arg-type]
                temperature=temperature,
                max_tokens=max_tokens,
                stream=True,
                stream_options={"include_usage": True},
            )
            streaming = True
            async with stream:
                async for chunk in stream:
                    reported = reported or (_clean(chunk.model) if chunk.model else None)
                    if chunk.usage is not None:
                        usage = chunk.usage
                    for choice in chunk.choices[:1]:
                        text = choice.delta.content if choice.delta else None
                        if text:
                            text = _clean(text)
                            parts.append(text)
                            await _emit(on_delta, text)
                        if choice.finish_reason:
                            finished = True
        except (openai.APIError, _httpx.TransportError) as exc:
            if not finished:  # an error after the finish only costs us the usage chunk
                failure = _classify(exc, self.timeout_s)
                if streaming and failure.reason == "connection error":
                    failure.reason = "stream broke off mid-reply"
                failure.shown = bool(parts)
                raise failure from None
        if not finished:
            raise _Failure("stream ended before the reply was complete", True, shown=bool(parts))
        content = "".join(parts)
        if usage is not None:
            return content, usage.prompt_tokens, usage.completion_tokens, reported
        counted_as = reported or model
        return content, count_messages(messages, counted_as), count_text(content, counted_as), reported

    async def aclose(self) -> None:
        await self._client.close()

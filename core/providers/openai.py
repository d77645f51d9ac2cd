"""The real provider: any OpenAI-compatible server through the official `openai` SDK.

The SDK's own retries are off (`max_retries=0`): it does not retry a stream that
breaks half-way, and every retry has to be reported (`RetryNotice`) and undo the
text already shown (`Restart`). So retries, backoff and fallbacks live here.

What a server sends is untrusted: a chunk that is not JSON, has no `choices`, or
carries content that is not text is a failed attempt (retried like a cut stream);
usage that is missing, negative or not a number is replaced by moot's own count and
marked estimated. `timeout_s` is a deadline for each attempt, from the request to
its last byte, however slowly the server drips.

Over 400 lines: one attempt's stream (deltas, tool_calls fragments, usage, cached tokens,
llama.cpp's fields, reply caps) and the retry loop around it read as one protocol; the probes,
caps and remembered windows already live in `discovery`, `capped` and `window_cache`.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

import openai
from openai.types.chat import ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat

try:  # openai 3.x runs on httpx2; older releases on httpx
    import httpx2 as _httpx
except ImportError:  # pragma: no cover
    import httpx as _httpx  # type: ignore[no-redef, import-not-found, unused-ignore]  # older SDKs

from ..errors import ContextTooLong, ProviderError
from ..models.provider_kinds import OPENAI
from ..safety.secrets import one_line, redact
from ..tokens import count_messages, count_text
from .base import (
    ChatRequest,
    Completion,
    Finished,
    JsonAnswer,
    JsonMode,
    Restart,
    RetryNotice,
    StreamItem,
    TextDelta,
)
from .capped import ReadCapExceeded, capped_http_client, cut_utf8, read_cap, reply_text_cap, reply_wire_cap
from .discovery import PROBE_DEADLINE_S
from .slots import kept_slots
from .tool_deltas import ToolDeltas, tools_refusal
from .window_cache import discover_remembered

RETRY_AFTER_CAP_S = 60.0
ERROR_TEXT_MAX = 200
DEFAULT_HOST = "api.openai.com"


# OpenAI `context_length_exceeded`, vLLM "maximum context length", llama.cpp "exceeds the
# available context size", LM Studio "context length of only N tokens", TGI "must be <= N",
# and their kin.
_CONTEXT_REFUSAL = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|exceeds? the (?:available )?context size|"
    r"context (?:window|length) (?:of only|exceeded|is too)|too many tokens|prompt is too long|"
    r"input (?:is )?too long|exceed_context_size", re.I)
_WINDOW = (
    re.compile(r"maximum context length is (\d+)", re.I),
    re.compile(r"context size \((\d+) tokens?\)", re.I),
    re.compile(r"context (?:length|window) of (?:only )?(\d+)", re.I),
    re.compile(r"\bn_ctx\W{1,4}(\d+)", re.I),
    re.compile(r"must be <= (\d+)", re.I),
)
_FORMAT_REFUSAL = re.compile(r"response_format|json_schema|json_object|guided|grammar|structured output", re.I)


_PROMPT = (
    re.compile(r"request \((\d+) tokens?\)", re.I),
    re.compile(r"messages resulted in (\d+) tokens", re.I),
    re.compile(r"\((\d+) in the messages", re.I),
    re.compile(r"n_prompt_tokens\W{1,4}(\d+)", re.I),
)


def stated_prompt(message: str) -> int | None:
    """How many tokens a refusal says the request had ("request (3082 tokens) exceeds …")."""
    for pattern in _PROMPT:
        m = pattern.search(message)
        if m:
            return int(m.group(1))
    return None


def stated_window(message: str) -> int | None:
    """The context window a refusal names ("maximum context length is 8192 tokens"), if any."""
    for pattern in _WINDOW:
        m = pattern.search(message)
        if m:
            n = int(m.group(1))
            if 64 <= n <= 10_000_000:
                return n
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
    """Deltas of this attempt were already delivered (the next one must start with Restart)."""


@dataclass
class _Attempt:
    """What one attempt produced besides its text."""

    parts: list[str] = field(default_factory=list)
    usage: tuple[int, int] | None = None
    usage_valid: bool = True
    reported_model: str | None = None
    finish_reason: str | None = None
    tools: ToolDeltas = field(default_factory=ToolDeltas)
    text_bytes: int = 0
    clipped_at: int | None = None
    """Reading stopped at this byte cap (`capped`): the text is what came before it."""
    cached: int | None = None
    """Prompt tokens the server served from its cache, when it said."""
    truncated: bool = False
    """The server said the reply ended because its window was full (llama.cpp `truncated`)."""

    def keep(self, text: str, text_cap: int) -> str:
        """Keep `text` within the reply's byte cap; what was kept (to stream on). Past the cap, the
        part that fits is kept and `clipped_at` set: far past max_tokens, the server would send until
        the deadline and all of it would be kept, so the caller reads no more."""
        size = len(text.encode("utf-8"))
        if self.text_bytes + size > text_cap:
            text = cut_utf8(text, text_cap - self.text_bytes)
            self.clipped_at = text_cap
        self.text_bytes += size
        if text:
            self.parts.append(text)
        return text


def _retry_after(response: _httpx.Response) -> float | None:
    """Seconds from `retry-after-ms` or `Retry-After` (seconds form only), capped."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = response.headers.get(name)
        if raw:
            try:
                seconds = float(raw) * scale
            except ValueError:
                continue
            if 0 <= seconds < float("inf"):
                return min(seconds, RETRY_AFTER_CAP_S)
    return None


def _server_message(exc: openai.APIError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        inner = body.get("error")
        message = body.get("message") or (inner.get("message") if isinstance(inner, Mapping) else inner)
        code = inner.get("code") if isinstance(inner, Mapping) else None
        if isinstance(message, str) and message:
            return f"{message} ({code})" if isinstance(code, str) and code and code not in message else message
        return json.dumps(body)  # cut only once masked (`_safe`): a key may straddle any cut
    if isinstance(body, str) and body.strip():
        return body
    return exc.message


def _classify(exc: Exception, timeout_s: float) -> _Failure:
    """Map an SDK/transport exception to a failure we can report and decide on."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retryable = status in (408, 429) or status >= 500
        retry_after = _retry_after(exc.response) if status in (429, 503) else None
        return _Failure(f"{status} from server", retryable, status, _server_message(exc), retry_after)
    if isinstance(exc, (openai.APITimeoutError, _httpx.TimeoutException, TimeoutError)):
        return _Failure(f"no complete answer within {timeout_s:g}s", True, detail="timed out")
    if isinstance(exc, (openai.APIConnectionError, _httpx.TransportError)):
        cause = exc.__cause__ or exc
        return _Failure("connection error", True, detail=f"{type(cause).__name__}: {cause}")
    if isinstance(exc, openai.APIError):  # an error event inside the stream
        return _Failure("error in stream", True, detail=_server_message(exc))
    # JSON that does not parse, chunks of the wrong shape: the server (or a proxy) sent
    # something no OpenAI server would. Another attempt may well get a sane answer.
    return _Failure("malformed stream data", True, detail=f"{type(exc).__name__}: {exc}")


def _text(value: object) -> str:
    """Text that can be saved as UTF-8: a server can send lone surrogates (a bad
    `\\ud83d` escape, an emoji split across chunks), which no JSON log line can hold."""
    if not isinstance(value, str):
        raise TypeError(f"content is {type(value).__name__}, not text")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "replace").decode("utf-8")
    return value


def _usage_number(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value != value or value < 0 or value > 100_000_000:
        return None
    return int(value)


def _field(obj: object, name: str) -> object:
    """`obj.name` or `obj[name]`: the SDK types known fields and leaves a server's own as dicts."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def response_format(answer: JsonAnswer, mode: JsonMode) -> dict[str, Any] | None:
    """The `response_format` parameter for a JSON answer in the endpoint's current mode."""
    if mode == "schema":
        return {"type": "json_schema", "json_schema": {"name": answer.name, "schema": answer.schema}}
    if mode == "object":
        return {"type": "json_object"}
    return None


class OpenAIProvider:
    """Streams chat completions from OpenAI, OpenRouter or any compatible server."""

    name = OPENAI.name
    kind = OPENAI

    def __init__(
        self,
        api_key: str,
        base_url: str | None,
        *,
        timeout_s: float = 120,
        max_retries: int = 3,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30,
        secrets: Sequence[str] = (),
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self._key = api_key
        self._secrets = tuple(s for s in (api_key, *secrets) if s)
        self.base_url = base_url
        self.host = redact(urlsplit(base_url).hostname or base_url, self._secrets) if base_url else DEFAULT_HOST
        port = urlsplit(base_url).port if base_url else None
        if port:
            self.host += f":{port}"
        self.label = f"openai · {self.host}"
        self.timeout_s = timeout_s
        self.max_retries = max(0, max_retries)
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.slots: int | None = None
        """Requests the server runs at once, when it says (llama.cpp `/props` `total_slots`)."""
        self.llama_cpp = False
        """The server is llama.cpp's (its `/props` said so): requests ask it to keep the prompt in
        its cache (`cache_prompt`) and name the speaker's slot (`id_slot`) when moot chose one."""
        self.json_mode: JsonMode = "schema"
        """How this endpoint takes JSON answers; lowered (schema → object → off) when it refuses one."""
        self.supports_tools: bool | None = None
        """Function calling here: False once the endpoint refused `tools` or said it has none."""
        self._sleep = sleep
        self._client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s,
                                          http_client=capped_http_client(timeout_s))

    def _backoff(self, attempt: int, failure: _Failure) -> float:
        """Retry-After when the server sent one, else full-jitter exponential backoff."""
        if failure.retry_after is not None:
            return failure.retry_after
        cap = min(self.backoff_max_s, self.backoff_base_s * 2**attempt)
        return random.uniform(0, max(0.0, cap))

    def _safe(self, text: str, limit: int = ERROR_TEXT_MAX) -> str:
        """One line, masked before it is cut (a key straddling the cut is never half-shown)."""
        return one_line(redact(text, self._secrets), limit)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamItem]:
        """Stream one completion, retrying transient failures and then the fallbacks."""
        models = list(dict.fromkeys([request.model, *request.fallback_models]))
        total = self.max_retries + 1
        attempts = 0
        last: _Failure | None = None
        shown = False  # deltas of a failed attempt are on screen

        for index, current in enumerate(models):
            if index > 0 and last is not None:
                yield RetryNotice(self._safe(f"{models[index - 1]} failed ({last.reason}), falling back to {current}"))
            attempt = 0
            while attempt < total:
                if shown:
                    yield Restart()
                    shown = False
                attempts += 1
                result = _Attempt()
                fmt = response_format(request.json_answer, self.json_mode) if request.json_answer else None
                try:
                    async for text in self._attempt(request, current, fmt, result):
                        yield TextDelta(text)
                except _Failure as failure:
                    last, shown = failure, failure.shown
                    if fmt is not None and failure.status in (400, 422) and _FORMAT_REFUSAL.search(failure.detail):
                        # The endpoint does not take this response_format: ask less of it from now on
                        # (remembered for the run) and try again at once; not a failed attempt.
                        self.json_mode = "object" if self.json_mode == "schema" else "off"
                        yield RetryNotice(self._safe(f"{self.host} refused response_format ({failure.status}); "
                                                     + ("asking for a JSON object instead" if self.json_mode == "object"
                                                        else "parsing the answer instead")))
                        attempts -= 1
                        continue
                    if request.tools and (refused := tools_refusal(failure.status, failure.detail, self._error_line(
                            failure, models[: index + 1], attempts))) is not None:
                        self.supports_tools = False  # remembered for the run, as json_mode is
                        raise refused from None
                    if failure.status in (400, 413) and _CONTEXT_REFUSAL.search(failure.detail):
                        raise ContextTooLong(self._error_line(failure, models[: index + 1], attempts),
                                             stated_window(failure.detail), status=failure.status,
                                             prompt_tokens=stated_prompt(failure.detail)) from None
                    if not failure.retryable:
                        raise self._error(failure, models[: index + 1], attempts) from None
                    attempt += 1
                    if attempt < total:
                        delay = self._backoff(attempt - 1, failure)
                        yield RetryNotice(self._safe(
                            f"{failure.reason}, retrying in {delay:.1f}s (attempt {attempt + 1}/{total})"))
                        await self._sleep(delay)
                    continue
                content = "".join(result.parts)
                estimated = result.usage is None
                if result.usage is not None:
                    prompt, completion = result.usage
                else:
                    counted_as = result.reported_model or current
                    prompt, completion = count_messages(request.messages, counted_as), count_text(content, counted_as)
                yield Finished(Completion(
                    content=content,
                    prompt_tokens=prompt,
                    completion_tokens=completion,
                    model=result.reported_model or current,
                    attempts=attempts,
                    finish_reason=result.finish_reason,
                    usage_estimated=estimated,
                    json_constrained=fmt is not None,
                    tool_calls=result.tools.result(),
                    clipped_at=result.clipped_at,
                    cached_tokens=min(result.cached or 0, prompt) if not estimated else 0,
                    truncated=result.truncated,
                ))
                return
        assert last is not None
        raise self._error(last, models, attempts)

    def _error_line(self, failure: _Failure, tried: Sequence[str], attempts: int) -> str:
        where = f"{' → '.join(tried)} at {self.host}"
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        detail = f": {self._safe(failure.detail)}" if failure.detail else ""
        return self._safe(f"{failure.reason} ({where}){tries}{detail}", 400)

    def _error(self, failure: _Failure, tried: Sequence[str], attempts: int) -> ProviderError:
        """One safe line: what failed, where, and what the server said."""
        return ProviderError(self._error_line(failure, tried, attempts), retryable=failure.retryable,
                             status=failure.status)

    async def _attempt(
        self, request: ChatRequest, model: str, fmt: dict[str, Any] | None, result: _Attempt
    ) -> AsyncIterator[str]:
        """One streamed request; yields text deltas and fills `result`. Raises _Failure.

        The whole attempt must finish before its deadline: each wait below gets only
        the time that is left (never a yield inside the timeout, so the deadline can
        only ever cancel our own reads)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        text_cap = reply_text_cap(request.max_tokens)
        finished = False
        streaming = False
        try:
            async with asyncio.timeout_at(deadline):
                with read_cap(reply_wire_cap(request.max_tokens)):
                    stream = await self._client.chat.completions.create(
                        model=model,
                        messages=cast("list[ChatCompletionMessageParam]", request.messages),
                        temperature=request.temperature,
                        max_tokens=request.max_tokens,
                        stream=True,
                        stream_options={"include_usage": True},
                        response_format=cast("ResponseFormat", fmt) if fmt is not None else openai.omit,
                        tools=cast("Any", list(request.tools)) if request.tools else openai.omit,
                        seed=request.seed if request.seed is not None else openai.omit,
                        extra_body=self._extra_body(request) or None,
                    )
            streaming = True
            try:
                chunks = stream.__aiter__()
                while True:
                    async with asyncio.timeout_at(deadline):
                        try:
                            chunk = await chunks.__anext__()
                        except StopAsyncIteration:
                            break
                    text = self._read_chunk(chunk, result)
                    if text:
                        if text := result.keep(text, text_cap):
                            yield text
                        if result.clipped_at is not None:
                            finished = True
                            break
                    if result.finish_reason is not None:
                        finished = True
            finally:
                await stream.close()
        except _Failure:
            raise
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except ReadCapExceeded as exc:
            if not streaming:  # an error body of megabytes: nothing worth reading again
                raise _Failure(str(exc), False, detail="answer too large") from None
            result.clipped_at, finished = exc.cap, True  # events past the wire cap (junk, or reasoning without end)
        except Exception as exc:  # noqa: BLE001 - every way a server can misbehave is a failed attempt
            if not finished:  # an error after the finish only costs us the usage chunk
                failure = _classify(exc, self.timeout_s)
                if streaming and failure.reason == "connection error":
                    failure.reason = "stream broke off mid-reply"
                failure.shown = bool(result.parts)
                raise failure from None
        if not finished:
            raise _Failure("stream ended before the reply was complete", True, shown=bool(result.parts))
        if not result.usage_valid:
            result.usage = None

    def _extra_body(self, request: ChatRequest) -> dict[str, Any]:
        """llama.cpp's own fields: keep the prompt cached, on the speaker's slot when it has one."""
        if not self.llama_cpp:
            return {}
        return {"cache_prompt": True, **({"id_slot": request.slot} if request.slot is not None else {})}

    @staticmethod
    def _read_chunk(chunk: Any, result: _Attempt) -> str:
        """The text of one chunk, recording its model, usage and finish reason.

        Raises (TypeError, AttributeError, ValueError) for a chunk no OpenAI server sends."""
        model = getattr(chunk, "model", None)
        if result.reported_model is None and isinstance(model, str) and model:
            result.reported_model = _text(model)  # cut by its users only after masking (a key may be in it)
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            prompt = _usage_number(getattr(usage, "prompt_tokens", None))
            completion = _usage_number(getattr(usage, "completion_tokens", None))
            if prompt is None or completion is None:
                result.usage_valid = False
            else:
                result.usage = (prompt, completion)
            details = getattr(usage, "prompt_tokens_details", None)
            cached = _usage_number(_field(details, "cached_tokens"))
            if cached is not None:
                result.cached = cached
        timings = getattr(chunk, "timings", None)  # llama.cpp, beside (or instead of) the usage details
        cache_n = _usage_number(_field(timings, "cache_n"))
        if cache_n is not None and result.cached is None:
            result.cached = cache_n
        if getattr(chunk, "truncated", None) is True:
            result.truncated = True
        choices = chunk.choices
        if choices is None:
            if usage is None:
                raise ValueError("a chunk without choices")
            return ""
        if not isinstance(choices, list):
            raise TypeError("choices is not a list")
        text = ""
        for choice in choices[:1]:
            delta = choice.delta
            content = getattr(delta, "content", None) if delta is not None else None
            if content is not None:
                text = _text(content)
            result.tools.add(delta)
            if choice.finish_reason:
                result.finish_reason = str(choice.finish_reason)[:40]
        return text

    async def discover_window(self, model: str) -> int | None:
        """The window the server states (see `discovery`); None when none says, or when it
        does not answer in time or within the caps. Never raises, never waits past
        `PROBE_DEADLINE_S` (or `timeout_s`, when lower). OpenAI's own API states none."""
        if not self.base_url or self.host == DEFAULT_HOST:
            return None
        stated = await discover_remembered(self._client, self.base_url, model, min(PROBE_DEADLINE_S, self.timeout_s))
        if stated.slots is not None:
            self.slots = stated.slots
        self.llama_cpp = stated.llama_cpp
        return stated.window

    async def discover_tools(self) -> None:
        """Whether the endpoint has function calling, when it says (llama.cpp `/props`); never raises."""
        if self.supports_tools is None and self.base_url and self.host != DEFAULT_HOST:
            from .tool_support import probe_tool_support

            self.supports_tools = await probe_tool_support(self._client, self.base_url)

    def keep_slots(self, speakers: Sequence[str]) -> dict[str, int]:
        return kept_slots(self.llama_cpp, self.slots, speakers)

    async def aclose(self) -> None:
        await self._client.close()

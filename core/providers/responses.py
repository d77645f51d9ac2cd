"""A provider on OpenAI's Responses API (`POST /responses`), through the official `openai` SDK.

The Responses API is where OpenAI puts what Chat Completions does not get (reasoning models'
own settings, server-side state); a server that speaks it streams typed events
(`response.output_text.delta` … `response.completed` with the usage) instead of chat chunks.
Everything around one request is `OpenAIProvider`'s, unchanged: retries with backoff, the
fallback models, the deadline of each attempt, reply caps, context-length refusals, the JSON
modes lowered when a server refuses one, keys masked in every line. Only the attempt differs:
the request's shape (`input`, `max_output_tokens`, `text.format`) and the events it reads.

What it leaves out: function calling (its tools and results take another shape in this API,
so an agent with references gets the retrieval tier's passages instead) and the request's
`seed` and llama.cpp's slots (the API has neither).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

import openai

from ..models.provider_kinds import RESPONSES
from .base import ChatRequest
from .capped import ReadCapExceeded, read_cap, reply_text_cap, reply_wire_cap
from .openai import OpenAIProvider, _Attempt, _classify, _Failure, _field, _text, _usage_number

_FINISH = {"max_output_tokens": "length", "content_filter": "content_filter"}


def text_format(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """Chat Completions' `response_format` as the Responses API's `text.format`."""
    if response_format is None:
        return None
    if response_format.get("type") == "json_schema":
        inner = response_format["json_schema"]
        return {"type": "json_schema", "name": inner["name"], "schema": inner["schema"]}
    return {"type": response_format["type"]}


class ResponsesProvider(OpenAIProvider):
    """Streams replies from the Responses API of OpenAI or a server that speaks it."""

    name = RESPONSES.name
    kind = RESPONSES

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.label = f"openai responses · {self.host}"
        self.supports_tools = False

    async def discover_tools(self) -> None:
        """Nothing to learn: see the module's doc (no function calling here)."""

    def keep_slots(self, speakers: Sequence[str]) -> dict[str, int]:
        return {}

    async def _attempt(
        self, request: ChatRequest, model: str, fmt: dict[str, Any] | None, result: _Attempt
    ) -> AsyncIterator[str]:
        """One streamed request; yields text deltas and fills `result`. Raises _Failure (the
        deadline and caps as in `OpenAIProvider._attempt`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        text_cap = reply_text_cap(request.max_tokens)
        finished = streaming = False
        format_ = text_format(fmt)
        try:
            async with asyncio.timeout_at(deadline):
                with read_cap(reply_wire_cap(request.max_tokens)):
                    stream = await self._client.responses.create(
                        model=model,
                        input=cast("Any", [{"role": m["role"], "content": m["content"]} for m in request.messages]),
                        temperature=request.temperature,
                        max_output_tokens=request.max_tokens,
                        stream=True,
                        text=cast("Any", {"format": format_}) if format_ is not None else openai.omit,
                    )
            streaming = True
            try:
                events = stream.__aiter__()
                while True:
                    async with asyncio.timeout_at(deadline):
                        try:
                            event = await events.__anext__()
                        except StopAsyncIteration:
                            break
                    text = self._read_event(event, result)
                    if text:
                        if text := result.keep(text, text_cap):
                            yield text
                        if result.clipped_at is not None:
                            finished = True
                            break
                    if result.finish_reason is not None:
                        finished = True
                        break
            finally:
                await stream.close()
        except _Failure as refused:  # an error event the stream carried
            refused.shown = bool(result.parts)
            raise
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except ReadCapExceeded as exc:
            if not streaming:
                raise _Failure(str(exc), False, detail="answer too large") from None
            result.clipped_at, finished = exc.cap, True
        except Exception as exc:  # noqa: BLE001 - every way a server can misbehave is a failed attempt
            if not finished:
                failure = _classify(exc, self.timeout_s)
                if streaming and failure.reason == "connection error":
                    failure.reason = "stream broke off mid-reply"
                failure.shown = bool(result.parts)
                raise failure from None
        if not finished:
            raise _Failure("stream ended before the reply was complete", True, shown=bool(result.parts))
        if not result.usage_valid:
            result.usage = None

    def _read_event(self, event: object, result: _Attempt) -> str:
        """The text of one event; the last one (completed, incomplete) fills in the usage."""
        kind = _field(event, "type")
        if kind == "response.output_text.delta":
            return _text(_field(event, "delta"))
        if kind in ("response.completed", "response.incomplete"):
            response = _field(event, "response")
            details = _field(response, "incomplete_details")
            reason = _field(details, "reason") if details is not None else None
            result.finish_reason = _FINISH.get(str(reason), str(reason)) if reason else "stop"
            reported = _field(response, "model")
            result.reported_model = reported if isinstance(reported, str) and reported else None
            usage = _field(response, "usage")
            if usage is not None:
                prompt, completion = _usage_number(_field(usage, "input_tokens")), _usage_number(
                    _field(usage, "output_tokens"))
                if prompt is None or completion is None:
                    result.usage_valid = False
                else:
                    result.usage = (prompt, completion)
                    cached = _usage_number(_field(_field(usage, "input_tokens_details"), "cached_tokens"))
                    result.cached = cached
            return ""
        if kind in ("response.failed", "error"):
            error = _field(_field(event, "response"), "error") if kind == "response.failed" else event
            message = _field(error, "message")
            raise _Failure("error in stream", True, detail=str(message or kind))
        return ""  # created, in_progress, output_item.added, content_part.done, …

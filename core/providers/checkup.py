"""Checking an OpenAI-compatible endpoint before a long debate (`moot doctor`), without ever waiting on it.

Every probe runs at once, each under the same whole-request deadline (from the request to its
last byte) and a byte cap, so a server that never answers, drips or floods costs the deadline,
not a hang. Each finding is one line a person can act on; nothing a server sends reaches the
terminal unmasked or with its control characters.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletionMessageParam

from ..safety.secrets import one_line
from ..tokens import count_messages
from .capped import capped_http_client, read_cap
from .discovery import discover
from .tool_support import probe_tool_support

Mark = Literal["ok", "fail", "warn", "skip"]
"""ok: works; fail: a debate cannot run; warn: a debate runs without this; skip: not checked or not installed."""

PROBE_CAP = 1 << 20
"""Bytes read of each chat answer (a few tokens are asked for)."""
LIST_CAP = 4 << 20
"""Bytes read of `GET /models` (OpenRouter lists every model it serves)."""

_ASK: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Reply with one word: ready."}]
_TOOL = {"type": "function", "function": {
    "name": "read_file", "description": "Read a text file of the references.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}
_FORMAT = {"type": "json_schema", "json_schema": {"name": "ready", "schema": {
    "type": "object", "properties": {"ready": {"type": "boolean"}}, "required": ["ready"]}}}


@dataclass(frozen=True)
class Finding:
    """One line of the check-up: its mark, what was checked and what to do."""

    mark: Mark
    text: str


@dataclass
class _Outcome:
    value: Any = None
    error: str | None = None
    status: int | None = None
    """The HTTP status of a refusal (None: no answer at all, or an answer)."""

    @property
    def answered(self) -> bool:
        return self.error is None


class Checkup:
    """The probes of one endpoint and model, and the lines they come to."""

    def __init__(self, base_url: str | None, model: str, key: str, deadline_s: float, secrets: list[str]) -> None:
        self.base_url = base_url
        self.model = model
        self.deadline_s = deadline_s
        self.secrets = secrets
        self.client = openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=deadline_s,
                                         http_client=capped_http_client(deadline_s))

    def _safe(self, text: str) -> str:
        return one_line(text, 200, self.secrets)

    async def _probe(self, send: Callable[[], Awaitable[Any]], cap: int = PROBE_CAP) -> _Outcome:
        try:
            async with asyncio.timeout(self.deadline_s):
                with read_cap(cap):
                    return _Outcome(await send())
        except TimeoutError:
            return _Outcome(error=f"no answer within {self.deadline_s:g} s")
        except openai.APIStatusError as exc:
            said = re.sub(r"^Error code: \d+ - ", "", exc.message)  # the SDK's prefix repeats the status
            return _Outcome(error=f"HTTP {exc.status_code}: {self._safe(said)}", status=exc.status_code)
        except openai.APITimeoutError:
            return _Outcome(error=f"no answer within {self.deadline_s:g} s")
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            return _Outcome(error=f"cannot connect ({self._safe(type(cause).__name__ + ': ' + str(cause))})")
        except Exception as exc:  # noqa: BLE001 - a broken answer is a finding, never a traceback
            return _Outcome(error=self._safe(f"{type(exc).__name__}: {exc}"))

    async def _chat(self, **extra: Any) -> Any:
        return await self.client.chat.completions.create(model=self.model, messages=_ASK, max_tokens=16, **extra)

    async def _stream_usage(self) -> bool:
        """True when a streamed answer ends with a usage chunk (`stream_options.include_usage`)."""
        stream = await self._chat(stream=True, stream_options={"include_usage": True})
        seen = False
        async for chunk in stream:
            seen = seen or getattr(chunk, "usage", None) is not None
        return seen

    async def run(self, assumed_window: int) -> list[Finding]:
        base = self.base_url or "https://api.openai.com/v1"
        models, chat, tools, fmt, streamed, stated, caps = await asyncio.gather(
            self._probe(lambda: self.client.models.list(), LIST_CAP),
            self._probe(lambda: self._chat()),
            self._probe(lambda: self._chat(tools=[_TOOL])),
            self._probe(lambda: self._chat(response_format=_FORMAT)),
            self._probe(self._stream_usage),
            self._probe(lambda: discover(self.client, base, self.model, self.deadline_s)),
            self._probe(lambda: probe_tool_support(self.client, base)),
        )
        out: list[Finding] = []
        host = self._safe(base)
        listed = [str(getattr(m, "id", "")) for m in getattr(models.value, "data", None) or []] if models.answered else []
        if models.answered or models.status is not None or chat.answered or chat.status is not None:
            out.append(Finding("ok", f"endpoint {host} answers"))
        else:
            out.append(Finding("fail", f"endpoint {host}: {models.error} — is the server running, and is "
                                       "--base-url (or base_url in moot.toml) right?"))
            return out + [Finding("skip", "model, window, tools, JSON answers, prompt cache and streaming not "
                                          "checked (the endpoint did not answer)")]
        name = self._safe(self.model)
        if chat.answered:
            where = "listed by GET /models" if self.model in listed else "not listed by GET /models, but it answers"
            out.append(Finding("ok", f"model {name} answers ({where})"))
        else:
            known = ", ".join(self._safe(m) for m in listed[:5]) + (", …" if len(listed) > 5 else "")
            hint = f"; the server lists: {known}" if known else ""
            out.append(Finding("fail", f"model {name}: {chat.error}{hint} (set --model or model in moot.toml)"))
        out.append(self._window(stated, assumed_window))
        out.append(self._ratio(chat))
        out.append(self._tools(tools, caps))
        if fmt.answered:
            out.append(Finding("ok", "response_format (JSON schema) accepted: the judge's verdict is constrained"))
        else:
            out.append(Finding("warn", f"response_format refused ({fmt.error}): moot asks for plain JSON instead "
                                       "and parses it; nothing to do"))
        out.append(self._cache(chat))
        if streamed.answered and streamed.value:
            out.append(Finding("ok", "streaming reports usage: live token counts and costs come from the server"))
        elif streamed.answered:
            out.append(Finding("warn", "streamed answers carry no usage: moot counts tokens itself (tiktoken), "
                                       "costs are estimates"))
        else:
            out.append(Finding("fail", f"streaming failed ({streamed.error}): debates stream every answer"))
        return out

    def _window(self, stated: _Outcome, assumed: int) -> Finding:
        value = stated.value
        window = getattr(value, "window", None) if stated.answered else None
        if isinstance(window, int):
            return Finding("ok", f"window {window} tokens, stated by the server (views are fitted to it)")
        return Finding("warn", f"window not stated by the server: assumed {assumed} tokens "
                               "(set debate.context.max_context_tokens in moot.toml to the model's window)")

    def _ratio(self, chat: _Outcome) -> Finding:
        usage = getattr(chat.value, "usage", None) if chat.answered else None
        prompt = getattr(usage, "prompt_tokens", None)
        if not isinstance(prompt, int) or prompt <= 0:
            return Finding("warn", "no usage reported: token counts and costs are moot's own estimates")
        ratio = prompt / max(1, count_messages(_ASK, self.model))
        return Finding("ok", f"token count: the server counts {ratio:.2f}× moot's estimate (moot budgets with "
                             "the larger of the two)")

    def _tools(self, tools: _Outcome, caps: _Outcome) -> Finding:
        if caps.answered and caps.value is False:
            return Finding("warn", "tool calling: the model's chat template takes no tools (llama.cpp says so); "
                                   "--ref and MCP fall back to passages in the prompt")
        if tools.answered:
            return Finding("ok", "tool calling accepted (--ref and MCP servers use it)")
        if tools.status is not None:
            return Finding("warn", f"tool calling refused ({tools.error}): --ref and MCP fall back to passages "
                                   "in the prompt (vLLM: --enable-auto-tool-choice --tool-call-parser …)")
        return Finding("warn", f"tool calling not checked: {tools.error}")

    def _cache(self, chat: _Outcome) -> Finding:
        usage = getattr(chat.value, "usage", None) if chat.answered else None
        details = getattr(usage, "prompt_tokens_details", None)
        timings = (getattr(chat.value, "model_extra", None) or {}).get("timings") if chat.answered else None
        if getattr(details, "cached_tokens", None) is not None or (isinstance(timings, dict) and "cache_n" in timings):
            return Finding("ok", "prompt-cache hits reported: cached input is counted and priced as such")
        return Finding("warn", "prompt-cache hits not reported: cached input is counted as fresh input "
                               "(costs may be overestimated)")

    async def close(self) -> None:
        await self.client.close()

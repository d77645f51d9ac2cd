"""A loopback OpenAI-compatible server, so tests drive the real `openai` SDK offline.

It speaks enough of the real protocol (SSE streaming with a usage chunk, JSON
errors, Retry-After, keep-alive) that the SDK cannot tell it from the real thing,
and it can misbehave on purpose (`Faults`) so retry paths are tested for real —
including as a hostile server would: escape sequences in replies, error bodies and
the `model` field, chunks that are not JSON or have no `choices`, impossible usage,
a reply dripped a byte at a time or never ending, window probes (`/props`, `/models`,
`/api/show`) that never end, and the client's own key echoed back (`{key}` in any text
the server sends stands for the key of the request).
Standard library only; runs in a background thread or as `python -m tests.loopback`.
"""

from __future__ import annotations

import argparse
import base64
import functools
import gzip
import hashlib
import json
import re
import socket
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from moot.core.tokens import count_messages, count_text, truncate_to_tokens

from .prefix_cache import PrefixCache

ReplyFn = Callable[[dict[str, Any], int], str]
ToolScript = Callable[[dict[str, Any], int], "list[dict[str, Any]] | None"]
"""Which tools a request's answer calls: `[{"name": …, "arguments": "…"}]` (arguments as the text a
model streams, valid JSON or not; `"cut": True` ends the arguments half-way), or None to answer in text."""
TOOL_ARGUMENT_PIECE = 5
"""Characters of arguments per streamed fragment (real servers send them in small pieces)."""
KEEP: Any = object()
"""A field of `Faults` left as the honest server would send it."""

REPLY_CHARS = 600
"""Default length of a plain (non-JSON) reply, in characters."""

_FILLER = (
    "The proposal keeps the moving parts few and the interfaces narrow.",
    "Each component owns one concern, so failures stay local and easy to trace.",
    "Measure before optimising: the hot path is the network call, not the parsing.",
    "Validate input at the boundary and keep secrets out of logs and saved state.",
    "Tests pin the contract first; property tests cover the edge cases we forget.",
    "Prefer boring, well-known tools over clever ones the team has to learn.",
)


@dataclass
class Faults:
    """Misbehaviour by call number (1-based). Faulted calls are still recorded."""

    fail_every: int | None = None
    """Every k-th call answers 500 with a JSON error."""
    status_script: list[int] = field(default_factory=list)
    """The first calls answer these statuses in order (200 means answer normally)."""
    retry_after: float = 1
    """Seconds sent in the Retry-After header of a 429."""
    cut_every: int | None = None
    """Every k-th call sends about half its chunks, then drops the connection."""
    hang_every: int | None = None
    """Every k-th call does not answer for `hang_s` seconds (past the client's timeout)."""
    hang_s: float = 30.0
    fail_models: frozenset[str] = frozenset()
    """Requests for these models always answer 500 (a broken summarization model, say)."""
    usage_offset: int = 0
    """Added to the reported prompt_tokens, so tests can tell server usage from local counts."""
    usage: Any = KEEP
    """Sent in place of the usage object when set: `{"prompt_tokens": -10**9, ...}`, `"lots"`, None."""
    bad_chunk: str | None = None
    """A malformed chunk in the middle of the stream: "json" (not JSON), "no_choices" (a chunk
    without `choices`) or "content" (`content` that is not text)."""
    bad_chunk_calls: int = 10**9
    """How many calls (the first ones) send the bad chunk; later calls are sound."""
    model_name: str | None = None
    """The `model` every chunk reports (default: the model asked for); may hold `{key}`."""
    error_message: str | None = None
    """The message of every error answer (status_script, fail_every); may hold `{key}`."""
    drip_s: float = 0.0
    """Send the streamed body one byte at a time, this many seconds apart."""
    empty_calls: int = 0
    """The first calls answer an empty reply (no content at all)."""
    endless_reply: bool = False
    """Stream prose as fast as the client reads, never finishing (a server ignoring max_tokens)."""
    discovery: dict[str, str] = field(default_factory=dict)
    """How a window probe (`/props`, `/models`, `/api/show`) answers, by path: "drip" (200, then one
    byte a second, forever), "stream" (an event a fifth of a second, forever), "flood" (1 MiB
    chunks, forever), "bomb" (gzip: 1 MiB of spaces a kilobyte on the wire, forever) or "gzip"
    (a sound llama.cpp answer stating 3072 tokens, gzip-compressed)."""


@dataclass
class ModelServer:
    """Behave like a real model's server (llama.cpp, vLLM, OpenAI): a context window, a tokenizer of
    its own, context-length refusals in its own words, and the `response_format` types it takes."""

    window: int | None = None
    """Tokens a request may hold (llama.cpp: the prompt; vLLM and OpenAI: prompt + max_tokens)."""
    style: str = "llama.cpp"
    """llama.cpp, vllm or openai: where it states the window and how it words a refusal."""
    advertise: bool = True
    """State the window (llama.cpp `GET /props`, vLLM `GET /v1/models` `max_model_len`)."""
    count_scale: float = 1.0
    """The server's tokenizer counts this many times moot's tiktoken count."""
    digit_tokens: float = 0.0
    """Tokens it spends on each digit beyond that (SmolLM2's tokenizer splits numbers into single
    digits, tiktoken keeps up to three together): a text full of figures costs it more."""
    json_modes: frozenset[str] = frozenset({"json_schema", "json_object"})
    """`response_format` types it accepts; any other is a 400 naming response_format."""
    honor_max_tokens: bool = True
    """Cut a reply at the request's max_tokens and say so (`finish_reason: length`)."""
    slots: int = 4
    """llama.cpp's `total_slots` in `GET /props`."""
    stop_when_full: bool = False
    """Stop a reply when prompt and reply fill the window, whatever `max_tokens` asked, with
    `finish_reason: length` and `truncated: true` on the last chunk, as llama-server does (it logs
    `truncated = 1`). Off by default: most tests look at what moot sends, not at what comes back."""
    supports_tools: bool | None = None
    """Say in `/props` whether the model's template takes tools (llama.cpp `chat_template_caps`)."""

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        messages = body.get("messages") or []
        digits = sum(ch.isdigit() for m in messages if isinstance(m, dict)
                     for ch in str(m.get("content") or "")) if self.digit_tokens else 0
        counted = count_messages(messages, str(body.get("model") or ""))
        return int(counted * self.count_scale + digits * self.digit_tokens)

    def room(self, body: dict[str, Any]) -> int | None:
        """The reply tokens left in a llama.cpp slot after the prompt, when `stop_when_full`."""
        if not self.stop_when_full or self.style != "llama.cpp" or self.window is None:
            return None
        return max(0, self.window - self.prompt_tokens(body))

    def refusal(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The 400 body for a request over the window, in the server's own words (None: it fits)."""
        if self.window is None:
            return None
        prompt = self.prompt_tokens(body)
        wanted = int(body.get("max_tokens") or 0)
        if self.style == "llama.cpp":
            if prompt < self.window:
                return None
            return {"error": {"code": 400, "message": f"request ({prompt} tokens) exceeds the available context "
                              f"size ({self.window} tokens), try increasing it", "type": "exceed_context_size_error",
                              "n_prompt_tokens": prompt, "n_ctx": self.window}}
        if prompt + wanted <= self.window:
            return None
        if self.style == "vllm":
            return {"object": "error", "message": f"This model's maximum context length is {self.window} tokens. "
                    f"However, you requested {prompt + wanted} tokens ({prompt} in the messages, {wanted} in the "
                    "completion). Please reduce the length of the messages or completion.",
                    "type": "BadRequestError", "param": None, "code": 400}
        return {"error": {"message": f"This model's maximum context length is {self.window} tokens. However, your "
                          f"messages resulted in {prompt} tokens. Please reduce the length of the messages.",
                          "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}


def _as_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses API request as the chat request it stands for (messages, max_tokens,
    response_format), so every fault, refusal and reply applies to both APIs alike."""
    given = body.get("input")
    messages = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or [])
    if isinstance(body.get("instructions"), str):
        messages.insert(0, {"role": "system", "content": body["instructions"]})
    chat = {k: v for k, v in body.items() if k not in ("input", "instructions", "max_output_tokens", "text")}
    chat["messages"] = messages
    if body.get("max_output_tokens"):
        chat["max_tokens"] = body["max_output_tokens"]
    fmt = (body.get("text") or {}).get("format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        chat["response_format"] = {"type": "json_schema", "json_schema": {"name": fmt.get("name"),
                                                                           "schema": fmt.get("schema")}}
    elif isinstance(fmt, dict) and fmt.get("type") not in (None, "text"):
        chat["response_format"] = {"type": fmt["type"]}
    return chat


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    return ""


def default_reply(body: dict[str, Any], n: int, reply_chars: int = REPLY_CHARS) -> str:
    """Deterministic text; JSON when the prompt asks for the judge's or the clarifier's JSON."""
    ask = _last_user_text(body)
    low = ask.lower()
    if "json" in low and "confidence" in low:
        return json.dumps(
            {
                "solution": f"## Synthesis (call {n})\n\n- Keep the design simple.\n- Measure, then optimise.",
                "confidence": 80,
                "tradeoffs": ["simplicity over peak throughput"],
                "recommendations": ["add load tests before launch"],
                "unresolved": ["exact retention period"],
            }
        )
    if "json" in low and "questions" in low:
        return json.dumps({"questions": []})
    words = " ".join(ask.split()[:8]) or "(no user message)"
    parts = [f"## Reply {n}\n\nOn *{words}*:\n"]
    size = len(parts[0])
    while size < reply_chars:  # a list, not `text +=`: a 5 MB reply in milliseconds, not minutes
        parts.append(f"\n- {_FILLER[(n + len(parts) - 1) % len(_FILLER)]}")
        size += len(parts[-1])
    text = "".join(parts)
    if len(text) > reply_chars:
        cut = text.rfind(" ", 0, reply_chars)
        text = text[: cut if cut > len(text) // 2 else reply_chars].rstrip()
    return text


_EXPRESSION = re.compile(r"\d+(?:[-+*]\d+)+")
_RESPONSE_LABEL = re.compile(r"^### Response ([A-Z])$", re.MULTILINE)


def _chance(body: dict[str, Any], salt: str) -> float:
    """A number in [0, 1) fixed by the request's content and seed: the same request gets the same
    reply whatever order requests arrive in (so Ray and local runs can be compared)."""
    key = json.dumps([body.get("messages"), body.get("seed"), salt], sort_keys=True).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2**64


def arithmetic_reply(p_right: float = 0.6) -> ReplyFn:
    """A model that works out `a+b*c…` right with probability `p_right` and is off by a small
    amount otherwise; it ranks anonymized answers (council) and answers the judge in JSON."""
    from moot.core.bench.datasets import eval_arithmetic

    def reply(body: dict[str, Any], n: int) -> str:
        ask = _last_user_text(body)
        found = _EXPRESSION.search(ask)
        if found is None:
            return default_reply(body, n)
        truth = eval_arithmetic(found.group(0))
        u = _chance(body, "right")
        value = truth if u < p_right else truth + (1 + int(_chance(body, "off") * 5)) * (1 if u < 0.8 else -1)
        steps = (f"Multiplication comes before addition and subtraction in {found.group(0)}, so I worked out the "
                 f"products first and then added and subtracted from left to right. The result is {value}.")
        if "json" in ask.lower() and "confidence" in ask.lower():  # the judge
            return json.dumps({"solution": f"{steps}\n\nAnswer: {value}", "confidence": 75, "tradeoffs": [],
                               "recommendations": [], "unresolved": []})
        if "FINAL RANKING" in ask:  # a council member ranking the others' answers
            labels = _RESPONSE_LABEL.findall(ask)
            order = sorted(labels, key=lambda x: _chance(body, x))
            return ("I checked each response's arithmetic step by step and compared the results with my own.\n\n"
                    "FINAL RANKING:\n" + "\n".join(f"{i}. Response {x}" for i, x in enumerate(order, start=1)))
        if "`Confidence: 80`" in ask:  # votes weighed by confidence: surer when right, though not always
            sure = 55 + int(_chance(body, "sure") * 45) if value == truth else 20 + int(_chance(body, "sure") * 60)
            return f"{steps}\n\nAnswer: {value}\nConfidence: {sure}"
        return f"{steps}\n\nAnswer: {value}"

    return reply


_BAD_CHUNKS: dict[str, Callable[[dict[str, Any]], bytes]] = {
    "json": lambda base: b'data: {"id": "chatcmpl-broken", "choices": [{"delta": {"content": "x"\n\n',
    "no_choices": lambda base: b"data: " + json.dumps(base).encode() + b"\n\n",
    "content": lambda base: b"data: " + json.dumps(
        {**base, "choices": [{"index": 0, "delta": {"content": {"text": 42}}, "finish_reason": None}]}
    ).encode() + b"\n\n",
}
"""What a broken proxy sends in the middle of a stream, by `Faults.bad_chunk`."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: LoopbackServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that time out and hang up are part of the tests, not errors worth a traceback."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as httpx expects
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet tests
        pass

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, False)

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_bytes(json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})}, status)

    def _send_bytes(self, data: bytes, headers: dict[str, str], status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_error(self, status: int, headers: dict[str, str] | None = None) -> None:
        messages = {
            401: "Incorrect API key provided: " + self.headers.get("Authorization", "").removeprefix("Bearer "),
            429: "Rate limit reached for requests (loopback fault).",
        }
        message = messages.get(status, f"Loopback fault: status {status}.")
        if self.server.owner.faults.error_message is not None:
            message = self._expand(self.server.owner.faults.error_message)
        kind = "server_error" if status >= 500 else "invalid_request_error"
        self._send_json(status, {"error": {"message": message, "type": kind, "code": None}}, headers)

    def _expand(self, text: str) -> str:
        """`{key}` → the credentials this request was sent with (a server that echoes them back):
        the bearer key, or the Base64 `user:password` of a base URL with userinfo; `{key_b64}`,
        `{key_b64url}`, `{key_hex}` and `{key_reversed}`: the same, encoded."""
        key = self.headers.get("Authorization", "").split(" ", 1)[-1]
        forms = {"{key}": key, "{key_b64}": base64.b64encode(key.encode()).decode(),
                 "{key_b64url}": base64.urlsafe_b64encode(key.encode()).decode().rstrip("="),
                 "{key_hex}": key.encode().hex(), "{key_reversed}": key[::-1]}
        for name, value in forms.items():
            text = text.replace(name, value)
        return text

    def _chunk(self, data: bytes) -> None:
        drip = self.server.owner.faults.drip_s
        if drip and data:
            for i in range(len(data)):  # one byte per HTTP chunk, `drip` seconds apart
                self.wfile.write(b"1\r\n%s\r\n" % data[i : i + 1])
                self.wfile.flush()
                if self.server.owner._stopping.wait(drip):
                    raise ConnectionResetError("server stopping")
            return
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _abort(self) -> None:
        """Close mid-reply, like a proxy that died (a FIN, not an RST, so sent chunks arrive)."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _endless(self, mode: str) -> None:
        """A window probe's answer that never ends (`Faults.discovery`), until the client hangs up;
        or ("gzip") a sound one, compressed."""
        owner = self.server.owner
        if mode == "gzip":
            data = gzip.compress(json.dumps({"default_generation_settings": {"n_ctx": 3072}}).encode())
            return self._send_bytes(data, {"Content-Type": "application/json", "Content-Encoding": "gzip"})
        piece, pause = {"drip": (b" ", 1.0), "stream": (b'{"status": "pulling manifest"}\n', 0.2),
                        "flood": (b" " * 2**20, 0.0), "bomb": (b" " * 2**20, 0.0)}[mode]
        squeeze = zlib.compressobj(wbits=zlib.MAX_WBITS | 16) if mode == "bomb" else None
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson" if mode == "stream" else "application/json")
        if squeeze is not None:  # 1 MiB of spaces a kilobyte on the wire: a gzip bomb
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        try:
            if mode != "stream":  # a JSON body whose last string never closes
                head = b'{"default_generation_settings": {"n_ctx": 4096}, "padding": "'
                self._chunk(squeeze.compress(head) if squeeze is not None else head)
            while not owner._stopping.is_set():
                if squeeze is not None:
                    piece = squeeze.compress(b" " * 2**20) + squeeze.flush(zlib.Z_SYNC_FLUSH)
                self._chunk(piece)
                with owner._lock:
                    owner.sent[self.path] = owner.sent.get(self.path, 0) + len(piece)
                if pause and owner._stopping.wait(pause):
                    return
        except (BrokenPipeError, ConnectionResetError):
            owner._hung_up(self.path)

    def _endless_reply(self, n: int, model: str) -> None:
        """A chat stream of prose that never finishes (`Faults.endless_reply`), as fast as it is read."""
        owner = self.server.owner
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        base = {"id": f"chatcmpl-loopback-{n}", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model}
        text = " ".join(_FILLER) + "\n\n"
        event = b"data: " + json.dumps({**base, "choices": [{"index": 0, "delta": {"content": text * 8},
                                                            "finish_reason": None}]}).encode() + b"\n\n"
        try:
            while not owner._stopping.is_set():
                self._chunk(event * 16)
        except (BrokenPipeError, ConnectionResetError):
            owner._hung_up(self.path)

    def _not_found(self) -> None:
        self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def _probe_fault(self) -> str | None:
        path = self.path.rstrip("/")
        path = "/models" if path.endswith("/models") else path
        return self.server.owner.faults.discovery.get(path)

    def do_GET(self) -> None:
        served = self.server.owner.model
        self.server.owner.note_probe("GET " + self.path)
        fault = self._probe_fault()
        if fault:
            return self._endless(fault)
        if self.path.rstrip("/") == "/props" and served and served.advertise and served.style == "llama.cpp":
            props: dict[str, Any] = {"default_generation_settings": {"n_ctx": served.window},
                                     "total_slots": served.slots}
            if served.supports_tools is not None:
                props["chat_template_caps"] = {"supports_tools": served.supports_tools,
                                               "supports_tool_calls": served.supports_tools}
            return self._send_json(200, props)
        if not self.path.rstrip("/").endswith("/models"):
            return self._not_found()
        model: dict[str, Any] = {"id": "loopback-model", "object": "model", "created": 0, "owned_by": "loopback"}
        if served and served.advertise and served.style == "vllm":
            model["max_model_len"] = served.window
        self._send_json(200, {"object": "list", "data": [model]})

    def do_POST(self) -> None:
        """A chat request counts as in flight from its arrival until its reply's last event is
        about to be sent (llama.cpp frees a slot before the client has read the end of it)."""
        self._working = self.path.rstrip("/").endswith("/chat/completions")
        if self._working:
            self.server.owner._in_flight(+1)
        try:
            self._post()
        finally:
            self._done_working()

    def _done_working(self) -> None:
        if getattr(self, "_working", False):
            self._working = False
            self.server.owner._in_flight(-1)

    def _post(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        responses = self.path.rstrip("/").endswith("/responses")  # OpenAI's Responses API
        chat = responses or self.path.rstrip("/").endswith("/chat/completions")
        if not chat:
            owner.note_probe("POST " + self.path)
        fault = self._probe_fault()
        if fault:
            return self._endless(fault)
        if not chat:
            return self._not_found()
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        n = owner._record(body, {k.lower(): v for k, v in self.headers.items()})
        if responses:  # recorded as sent; answered as the same request made to chat/completions
            body = _as_chat(body)
        faults = owner.faults
        delay = owner.delay + (owner.latency(body) if owner.latency else 0.0)
        if delay and owner._stopping.wait(delay):
            return self._abort()
        if n <= len(faults.status_script) and faults.status_script[n - 1] != 200:
            status = faults.status_script[n - 1]
            extra = {"Retry-After": f"{faults.retry_after:g}"} if status == 429 else None
            return self._send_error(status, extra)
        if faults.fail_every and n % faults.fail_every == 0:
            return self._send_error(500)
        if str(body.get("model")) in faults.fail_models:
            return self._send_error(500)
        if faults.hang_every and n % faults.hang_every == 0:
            owner._stopping.wait(faults.hang_s)
            return self._abort()
        served = owner.model
        if served is not None:
            fmt = body.get("response_format")
            if isinstance(fmt, dict) and fmt.get("type") not in served.json_modes:
                return self._send_json(400, {"error": {"code": 400, "type": "invalid_request_error",
                                                       "message": "response_format type must be one of \"text\" or "
                                                       f"\"json_object\", but got: {fmt.get('type')}"}})
            refusal = served.refusal(body)
            if refusal is not None:
                return self._send_json(400, refusal)
        if owner.refuse_tools and body.get("tools"):  # vLLM without a tool parser, in its words
            return self._send_json(400, {"object": "error", "type": "BadRequestError", "code": 400, "message":
                                         '"auto" tool choice requires --enable-auto-tool-choice and '
                                         "--tool-call-parser to be set"})
        calls = owner.tool_calls(body, n) if owner.tool_calls is not None and body.get("tools") else None
        if calls and body.get("stream"):
            return self._stream_tool_calls(n, str(body.get("model") or "loopback-model"), calls,
                                           count_messages(body.get("messages") or [], str(body.get("model") or "")),
                                           bool((body.get("stream_options") or {}).get("include_usage")))
        cut = bool(faults.cut_every and n % faults.cut_every == 0)
        model = str(body.get("model") or "loopback-model")
        try:
            reply = "" if n <= faults.empty_calls else self._expand(owner.reply(body, n))
        except Exception as exc:  # a broken reply function in a test: say so, as a 500
            return self._send_json(500, {"error": {"message": f"reply failed: {exc!r}", "type": "server_error"}})
        finish = "stop"
        if served is not None and served.honor_max_tokens and body.get("max_tokens"):
            cut_reply = truncate_to_tokens(reply, int(body["max_tokens"]), model)
            if cut_reply != reply:
                reply, finish = cut_reply, "length"
        truncated = False
        room = served.room(body) if served is not None else None
        if room is not None and count_text(reply, model) > room:
            reply, finish, truncated = truncate_to_tokens(reply, room, model), "length", True
        usage = {
            "prompt_tokens": (served.prompt_tokens(body) if served else count_messages(body.get("messages") or [], model))
            + faults.usage_offset,
            "completion_tokens": count_text(reply, model),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        timings: dict[str, Any] | None = None
        if owner.cache is not None:
            hit, whole = owner.cache.lookup(body)
            cached = min(usage["prompt_tokens"] - 1, round(hit * usage["prompt_tokens"] / max(1, whole)))
            usage["prompt_tokens_details"] = {"cached_tokens": max(0, cached)}
            owner._cached(max(0, cached))
            if served is not None and served.style == "llama.cpp":
                timings = {"cache_n": max(0, cached), "prompt_n": usage["prompt_tokens"] - max(0, cached),
                           "predicted_n": usage["completion_tokens"]}
        if faults.usage is not KEEP:
            usage = faults.usage
        if faults.model_name is not None:
            model = self._expand(faults.model_name)
        if body.get("stream") and faults.endless_reply:
            return self._endless_reply(n, model)
        if responses:
            return self._stream_response(n, model, reply, usage if owner.send_usage else None, cut, finish)
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(n, model, reply, usage if owner.send_usage else None, include_usage, cut, finish, timings,
                         truncated)
        elif cut:
            self._abort()
        else:
            message = {"role": "assistant", "content": reply, "refusal": None}
            payload = {
                "id": f"chatcmpl-loopback-{n}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            }
            if owner.send_usage:
                payload["usage"] = usage
            if timings is not None:
                payload["timings"] = timings
            self._done_working()
            self._send_json(200, payload)
            owner._answered()

    def _stream(
        self, n: int, model: str, reply: str, usage: Any, include_usage: bool, cut: bool, finish: str = "stop",
        timings: dict[str, Any] | None = None, truncated: bool = False,
    ) -> None:
        owner = self.server.owner
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        base = {"id": f"chatcmpl-loopback-{n}", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
        size = max(1, owner.chunk_chars)
        pieces = [reply[i : i + size] for i in range(0, len(reply), size)] or [""]

        def event(choices: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> None:
            payload = {**base, "choices": choices, **(extra or {})}
            if include_usage and extra is None:
                payload["usage"] = None  # what OpenAI sends on every chunk but the last
            self._chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

        bad = owner.faults.bad_chunk if n <= owner.faults.bad_chunk_calls else None
        try:
            for i, piece in enumerate(pieces):
                if cut and i >= max(1, len(pieces) // 2):
                    return self._abort()
                if bad and i == len(pieces) // 2:
                    self._chunk(_BAD_CHUNKS[bad](base))
                delta = {"role": "assistant", "content": piece} if i == 0 else {"content": piece}
                event([{"index": 0, "delta": delta, "finish_reason": None, "logprobs": None}])
                if owner.chunk_delay and owner._stopping.wait(owner.chunk_delay):
                    return self._abort()
            if cut:  # a one-chunk reply: cut before the finish
                return self._abort()
            # llama.cpp sends its timings (with `cache_n`) on the last chunks, and `truncated`
            # when the slot filled up before the reply's limit
            last = {**({"timings": timings} if timings is not None else {}),
                    **({"truncated": True} if truncated else {})}
            event([{"index": 0, "delta": {}, "finish_reason": finish, "logprobs": None}], last or None)
            if include_usage and (usage is not None or owner.faults.usage is not KEEP):
                event([], {"usage": usage, **({"timings": timings} if timings is not None else {})})
            self._done_working()
            self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")  # end of the chunked body; the connection stays open
            owner._answered()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


    def _stream_response(self, n: int, model: str, reply: str, usage: dict[str, Any] | None, cut: bool,
                         finish: str) -> None:
        """A reply as the Responses API streams it: typed events, the text in
        `response.output_text.delta`s, the usage in the closing `response.completed` (or
        `response.incomplete` when cut at `max_output_tokens`)."""
        owner = self.server.owner
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        size = max(1, owner.chunk_chars)
        pieces = [reply[i: i + size] for i in range(0, len(reply), size)]
        response: dict[str, Any] = {"id": f"resp_loopback_{n}", "object": "response", "created_at": int(time.time()),
                                    "model": model, "status": "in_progress", "output": []}
        seq = iter(range(10**9))

        def event(kind: str, **fields: Any) -> None:
            payload = {"type": kind, "sequence_number": next(seq), **fields}
            self._chunk(f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode())

        try:
            event("response.created", response=response)
            for i, piece in enumerate(pieces):
                if cut and i >= max(1, len(pieces) // 2):
                    return self._abort()
                event("response.output_text.delta", item_id=f"msg_{n}", output_index=0, content_index=0,
                      delta=piece, logprobs=[])
                if owner.chunk_delay and owner._stopping.wait(owner.chunk_delay):
                    return self._abort()
            if cut:
                return self._abort()
            done = finish == "stop"
            message = {"id": f"msg_{n}", "type": "message", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": reply, "annotations": []}]}
            final = {**response, "status": "completed" if done else "incomplete", "output": [message],
                     "incomplete_details": None if done else {"reason": "max_output_tokens"}}
            if isinstance(usage, dict) and {"prompt_tokens", "completion_tokens"} <= usage.keys():
                final["usage"] = {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"],
                                  "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"],
                                  "input_tokens_details": {"cached_tokens": 0},
                                  "output_tokens_details": {"reasoning_tokens": 0}}
            elif usage is not None:
                final["usage"] = usage  # whatever a faulty server sends
            event("response.completed" if done else "response.incomplete", response=final)
            self._chunk(b"")
            owner._answered()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _stream_tool_calls(self, n: int, model: str, calls: list[dict[str, Any]], prompt: int,
                           include_usage: bool) -> None:
        """Tool calls as real servers stream them: each call's id and name first, then its arguments
        in small fragments (calls one after the other, keyed by index), then `finish_reason: tool_calls`."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        base = {"id": f"chatcmpl-loopback-{n}", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model}

        def event(delta: dict[str, Any], finish: str | None = None, extra: dict[str, Any] | None = None) -> None:
            choices = [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}] if extra is None else []
            self._chunk(b"data: " + json.dumps({**base, "choices": choices, **(extra or {})}).encode() + b"\n\n")

        sent = 0
        try:
            event({"role": "assistant", "content": None})
            for i, call in enumerate(calls):
                args = str(call.get("arguments", ""))
                if call.get("cut"):
                    args = args[: len(args) // 2]
                event({"tool_calls": [{"index": i, "id": call.get("id", f"call_{n}_{i}"), "type": "function",
                                       "function": {"name": call["name"], "arguments": ""}}]})
                for k in range(0, len(args), TOOL_ARGUMENT_PIECE):
                    piece = args[k: k + TOOL_ARGUMENT_PIECE]
                    event({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
                    sent += len(piece)
            event({}, "tool_calls")
            if include_usage:
                event({}, None, {"usage": {"prompt_tokens": prompt, "completion_tokens": 10 + sent // 4,
                                           "total_tokens": prompt + 10 + sent // 4}})
            self._done_working()
            self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class LoopbackServer:
    """An OpenAI-compatible server on 127.0.0.1 in a background thread."""

    def __init__(
        self,
        reply: ReplyFn | None = None,
        *,
        delay: float = 0.0,
        chunk_chars: int = 16,
        chunk_delay: float = 0.0,
        faults: Faults | None = None,
        reply_chars: int = REPLY_CHARS,
        send_usage: bool = True,
        port: int = 0,
        model: ModelServer | None = None,
        latency: Callable[[dict[str, Any]], float] | None = None,
        prefix_cache: bool = True,
        tool_calls: ToolScript | None = None,
        refuse_tools: bool = False,
    ) -> None:
        self.tool_calls = tool_calls
        """Answers with tool calls where it returns some (requests that offer `tools` only)."""
        self.refuse_tools = refuse_tools
        """Answer a request that offers `tools` with a 400 naming them (no function calling here)."""
        self.reply: ReplyFn = reply or functools.partial(default_reply, reply_chars=reply_chars)
        self.delay = delay
        self.chunk_chars = chunk_chars
        self.chunk_delay = chunk_delay
        self.faults = faults or Faults()
        self.send_usage = send_usage
        """False: no usage in any reply, as some OpenAI-compatible servers do."""
        self.model = model
        """Behave like a real model's server (window, tokenizer, refusals, response_format)."""
        self.latency = latency
        """Seconds to wait before answering a request, from its body (on top of `delay`): a
        function of the request alone waits the same whatever order requests come in."""
        self.cache = PrefixCache() if prefix_cache else None
        """Report `usage.prompt_tokens_details.cached_tokens` (and, as llama.cpp, `timings.cache_n`)
        as a prefix cache per speaker would (`tests.prefix_cache`)."""
        self.cached_reported = 0
        """Cached tokens reported so far, summed."""
        self._port = port
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []
        self._answered_before: list[int] = []
        self.answered = 0
        """Replies sent in full so far (an error answer or a cut stream is not one)."""
        self._conns: set[socket.socket] = set()
        self.connections = 0
        """TCP connections accepted so far (keep-alive reuse keeps this low)."""
        self.probes: list[str] = []
        """Requests other than chat completions (window probes), as `METHOD /path`, in arrival order."""
        self.sent: dict[str, int] = {}
        """Bytes of never-ending probe answers sent so far, by path (what the client let through)."""
        self.hangups: list[str] = []
        self.most_in_flight = 0
        """The most chat requests the server held at once (arrived, their reply not yet ended)."""
        self._now_in_flight = 0
        """Paths of answers the client stopped reading before their end (hostile answers never end)."""
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> int:
        with self._lock:
            self._requests.append(body)
            self._headers.append(headers)
            self._answered_before.append(self.answered)
            return len(self._requests)

    def _in_flight(self, change: int) -> None:
        with self._lock:
            self._now_in_flight += change
            self.most_in_flight = max(self.most_in_flight, self._now_in_flight)

    def _answered(self) -> None:
        with self._lock:
            self.answered += 1

    def _cached(self, n: int) -> None:
        with self._lock:
            self.cached_reported += n

    @property
    def answered_before(self) -> list[int]:
        """For each request (parallel to `requests`): how many replies had been sent in full
        when it arrived. A request with 0 was built before the client could learn anything
        from an answer (its server's token count, say)."""
        with self._lock:
            return list(self._answered_before)

    def _hung_up(self, path: str) -> None:
        with self._lock:
            self.hangups.append(path)

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._conns.add(conn)
                self.connections += 1
            else:
                self._conns.discard(conn)

    def note_probe(self, what: str) -> None:
        with self._lock:
            self.probes.append(what)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Received request bodies in arrival order (a snapshot)."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """Headers of each request (lower-case names), parallel to `requests`."""
        with self._lock:
            return list(self._headers)

    @property
    def calls(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("server not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LoopbackServer:
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server(("127.0.0.1", self._port), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="loopback-openai", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread (the subprocess entry point)."""
        self.start()
        assert self._thread is not None
        self._thread.join()

    def stop(self) -> None:
        """Stop serving, wake hanging handlers and drop open keep-alive connections."""
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """`python -m tests.loopback --port 0`: prints `PORT <n>` first, then serves until killed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--chunk-delay", type=float, default=0.0)
    parser.add_argument("--reply-chars", type=int, default=REPLY_CHARS)
    parser.add_argument("--chunk-chars", type=int, default=16)
    parser.add_argument("--fail-every", type=int, default=None)
    parser.add_argument("--arithmetic", type=float, default=None, metavar="P",
                        help="answer arithmetic questions right with probability P")
    parser.add_argument("--endless-reply", action="store_true", help="chat streams that never finish")
    parser.add_argument("--probe", action="append", default=[], metavar="PATH=MODE",
                        help="a window probe that never ends: /props, /models or /api/show = drip, stream or flood")
    args = parser.parse_args(argv)
    probes = dict(p.split("=", 1) for p in args.probe)
    server = LoopbackServer(
        arithmetic_reply(args.arithmetic) if args.arithmetic is not None else None,
        delay=args.delay,
        chunk_chars=args.chunk_chars,
        chunk_delay=args.chunk_delay,
        reply_chars=args.reply_chars,
        faults=Faults(fail_every=args.fail_every, endless_reply=args.endless_reply, discovery=probes),
        port=args.port,
    ).start()
    sys.stdout.write(f"PORT {server.port}\n")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()

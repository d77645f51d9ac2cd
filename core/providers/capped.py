"""Bounded reads: whatever a server sends, moot reads a capped number of bytes of it.

Deadlines bound how long a server can hold a call; this bounds how much it can make moot
hold. A server that ignores `max_tokens`, streams without end or answers a probe with
megabytes would otherwise be buffered until the deadline (gigabytes at 110 MB/s). Every
response the provider's HTTP client receives goes through `cap_response` (an httpx response
hook): its body is wrapped in a stream that counts the bytes it yields and raises
`ReadCapExceeded` past the cap of the request in hand, after yielding the part within it.
The cap is a context variable set around the request (`read_cap`); the default covers error
bodies and anything else not given one.

Compression would let a small body expand past any cap on what arrives, so moot counts
decoded bytes: it asks for `gzip, deflate` at most and decodes those here, bounded (zlib's
`max_length`); a body in any other encoding is refused.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

try:  # openai 3.x runs on httpx2; older releases on httpx
    import httpx2 as _httpx
except ImportError:  # pragma: no cover
    import httpx as _httpx  # type: ignore[no-redef, import-not-found, unused-ignore]  # older SDKs

DEFAULT_CAP = 1 << 20
"""Bytes of any answer without a cap of its own (error bodies: a message is a few hundred)."""
REPLY_BYTES_PER_TOKEN = 32
"""Text a reply may hold per token of its `max_tokens`: a token is 4 bytes of English on
average and rarely past 16 in any script, so a reply past this ignored its limit."""
REPLY_SLACK_BYTES = 16 << 10
WIRE_BYTES_PER_TOKEN = 1024
"""Bytes on the wire per token: a stream event per token is 150–400 bytes of JSON around it
(more with reasoning deltas, which count in `max_tokens` but are no reply text)."""
WIRE_SLACK_BYTES = 1 << 20
ACCEPT_ENCODING = "gzip, deflate"
"""What moot asks for: the encodings it can decode with a bound on the output."""

_CAP: ContextVar[int] = ContextVar("moot_read_cap", default=DEFAULT_CAP)


class ReadCapExceeded(Exception):
    """A response body went past its cap: reading stopped there."""

    def __init__(self, cap: int) -> None:
        super().__init__(f"the server's answer passed its {cap:,}-byte cap")
        self.cap = cap


def reply_text_cap(max_tokens: int) -> int:
    """Bytes (UTF-8) of reply text kept for a call allowed `max_tokens`; the rest is not read."""
    return max(1, max_tokens) * REPLY_BYTES_PER_TOKEN + REPLY_SLACK_BYTES


def reply_wire_cap(max_tokens: int) -> int:
    """Bytes of a call's whole streamed answer (events, framing, reasoning) read at most."""
    return max(1, max_tokens) * WIRE_BYTES_PER_TOKEN + WIRE_SLACK_BYTES


def cut_utf8(text: str, limit: int) -> str:
    """The longest prefix of `text` whose UTF-8 form has at most `limit` bytes."""
    return text.encode("utf-8")[: max(0, limit)].decode("utf-8", "ignore")


@contextmanager
def read_cap(limit: int) -> Iterator[None]:
    """Responses to requests sent inside this block are read up to `limit` bytes.

    Set it around the `await` that sends the request (no yield inside: the cap belongs to
    the task that sends, and the body is bound to it when the response arrives)."""
    token = _CAP.set(limit)
    try:
        yield
    finally:
        _CAP.reset(token)


class _CappedStream(_httpx.AsyncByteStream):
    """A response body that yields at most `cap` (decoded) bytes, then raises."""

    def __init__(self, inner: _httpx.AsyncByteStream, cap: int, encoding: str | None) -> None:
        self._inner = inner
        self._cap = cap
        self._encoding = encoding

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        decoder: zlib._Decompress | None = None
        if self._encoding == "gzip":
            decoder = zlib.decompressobj(zlib.MAX_WBITS | 16)
        first = True
        async for raw in self._inner:
            if self._encoding == "deflate" and first:
                # "deflate" is zlib-wrapped by the letter of the RFC, raw in practice; httpx tries both too.
                decoder = zlib.decompressobj(zlib.MAX_WBITS if raw[:1] == b"\x78" else -zlib.MAX_WBITS)
            first = False
            try:
                data = decoder.decompress(raw, self._cap - seen + 1) if decoder is not None else raw
            except zlib.error as exc:
                raise _httpx.DecodingError(f"the server's {self._encoding} body does not decode: {exc}") from None
            if seen + len(data) > self._cap:
                if self._cap > seen:
                    yield data[: self._cap - seen]
                raise ReadCapExceeded(self._cap)
            seen += len(data)
            if data:
                yield data
        if decoder is not None:
            tail = decoder.flush()
            if seen + len(tail) > self._cap:
                raise ReadCapExceeded(self._cap)
            if tail:
                yield tail

    async def aclose(self) -> None:
        await self._inner.aclose()


async def cap_response(response: _httpx.Response) -> None:
    """The response hook: bind the body to the cap of the request that asked for it."""
    values = response.headers.get_list("content-encoding", split_commas=True)
    encodings = [v.strip().lower() for v in values if v.strip().lower() not in ("", "identity")]
    if len(encodings) > 1 or (encodings and encodings[0] not in ("gzip", "deflate")):
        raise _httpx.DecodingError(f"the server answered in {', '.join(encodings)}, which moot did not ask for")
    if not isinstance(response.stream, _httpx.AsyncByteStream):  # never, from an async client
        raise _httpx.DecodingError("a response without an async body")
    if encodings:
        del response.headers["content-encoding"]  # decoded here, bounded: httpx must not decode it again
    response.stream = _CappedStream(response.stream, _CAP.get(), encodings[0] if encodings else None)


def capped_http_client(timeout_s: float) -> _httpx.AsyncClient:
    """The HTTP client of an OpenAI provider: the SDK's defaults, every body capped."""
    import openai

    return openai.DefaultAsyncHttpxClient(timeout=timeout_s, headers={"Accept-Encoding": ACCEPT_ENCODING},
                                          event_hooks={"response": [cap_response]})

"""Tool calls streamed in pieces: `delta.tool_calls` fragments assembled into whole calls.

A server sends each call's id and name first and its arguments in fragments, keyed by
`index` (several calls interleave). What a server sends is untrusted: a fragment without an
index, a name or arguments that are not text, an id that never comes, arguments that never
close. Assembly never raises for those: a call keeps what arrived (the engine answers
arguments that are not JSON with a tool error) and gets an id if it had none. The number of
calls and the size of their arguments are capped, so a server cannot make moot hold more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import ToolsRefused
from .base import ToolCall

MAX_CALLS = 128
"""Calls kept from one reply; more are dropped (the engine caps what it runs far lower)."""
MAX_ARGUMENT_BYTES = 16 << 10
MAX_NAME_CHARS = 128
TOOLS_REFUSAL = re.compile(r"\btools?\b|function[ _]?call|tool_choice|--jinja", re.I)
"""A refusal that names tools: the endpoint has no function calling (vLLM without a tool parser,
llama.cpp without --jinja, older LM Studio)."""


@dataclass
class _Partial:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    size: int = 0


@dataclass
class ToolDeltas:
    """The tool calls of one attempt, as their fragments arrive."""

    calls: dict[int, _Partial] = field(default_factory=dict)

    def add(self, delta: Any) -> None:
        """Fold one chunk's `delta.tool_calls` (an SDK object or None) into the calls."""
        fragments = getattr(delta, "tool_calls", None) if delta is not None else None
        if not fragments or not isinstance(fragments, list):
            return
        for frag in fragments:
            index = getattr(frag, "index", None)
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 10_000:
                index = max(self.calls, default=-1) + (0 if getattr(frag, "id", None) is None else 1)
                index = max(index, 0)
            call = self.calls.get(index)
            if call is None:
                if len(self.calls) >= MAX_CALLS:
                    continue
                call = self.calls[index] = _Partial()
            ident = getattr(frag, "id", None)
            if isinstance(ident, str) and ident and not call.id:
                call.id = ident[:64]
            fn = getattr(frag, "function", None)
            name = getattr(fn, "name", None) if fn is not None else None
            if isinstance(name, str) and name:
                call.name = (call.name + name)[:MAX_NAME_CHARS] if call.name != name else call.name
            args = getattr(fn, "arguments", None) if fn is not None else None
            if isinstance(args, str) and args and call.size < MAX_ARGUMENT_BYTES:
                piece = args.encode("utf-8", "replace")[: MAX_ARGUMENT_BYTES - call.size].decode("utf-8", "ignore")
                call.arguments.append(piece)
                call.size += len(piece.encode("utf-8"))

    def result(self) -> list[ToolCall]:
        """The calls in index order; a call without an id gets one (`call_<index>`)."""
        return [ToolCall(id=c.id or f"call_{i}", name=c.name, arguments="".join(c.arguments))
                for i, c in sorted(self.calls.items())]


def tools_refusal(status: int | None, detail: str, message: str) -> ToolsRefused | None:
    """A `ToolsRefused` when a failed request with tools was refused for them."""
    if status in (400, 404, 422, 500, 501) and TOOLS_REFUSAL.search(detail):
        return ToolsRefused(message, status=status)
    return None

"""What a tool is to the call engine: a definition to offer, and a call that always answers.

A tool call never raises into the engine. Arguments that are not JSON, a name nobody
offered, a path outside the references, a server that died: each is a `ToolOutput` with
`ok=False` and one line the model can read and recover from (another path, another tool,
or an answer without it).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

ToolKind = Literal["list", "read", "search", "recall", "mcp"]
MAX_ARGUMENT_CHARS = 4000
"""Arguments longer than this are refused (a model looping inside a JSON string)."""


@dataclass(frozen=True)
class ToolDef:
    """One tool as offered to a model (OpenAI function calling)."""

    name: str
    description: str
    parameters: dict[str, Any]
    kind: ToolKind
    server: str | None = None
    """The MCP server it comes from (None: built in)."""

    def schema(self) -> dict[str, Any]:
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}


@dataclass(frozen=True)
class ToolOutput:
    """What a tool returned: the text the model gets, whether it worked, a line for people."""

    text: str
    ok: bool = True
    summary: str = ""
    """One line for panes and logs: `42 lines of docs/plan.md`, `3 matches in 2 files`."""


class ToolError(Exception):
    """A call the tool refuses; its message goes back to the model as the result."""


def parse_arguments(raw: str) -> dict[str, Any]:
    """The arguments of a tool call as an object; `ToolError` says what is wrong with them."""
    if len(raw) > MAX_ARGUMENT_CHARS:
        raise ToolError(f"the arguments are {len(raw):,} characters long; at most {MAX_ARGUMENT_CHARS:,}")
    text = raw.strip() or "{}"
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ToolError(f"the arguments are not valid JSON ({getattr(exc, 'msg', 'too deeply nested')}); "
                        "send one JSON object, e.g. {\"path\": \"README.md\"}") from None
    if not isinstance(value, dict):
        raise ToolError("the arguments must be a JSON object")
    return value


def string_arg(args: Mapping[str, Any], name: str, default: str | None = None, *, required: bool = False) -> str | None:
    value = args.get(name, default)
    if value is None:
        if required:
            raise ToolError(f"missing the required argument {name!r}")
        return None
    if not isinstance(value, str):
        raise ToolError(f"{name!r} must be a string")
    return value


def int_arg(args: Mapping[str, Any], name: str, default: int | None = None, *, low: int = 1) -> int | None:
    value = args.get(name, default)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)  # small models quote numbers
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"{name!r} must be a whole number")
    if value < low:
        raise ToolError(f"{name!r} must be at least {low}")
    return value


Runner = Callable[[str, dict[str, Any]], Awaitable[ToolOutput]]


@dataclass
class Toolbox:
    """The tools one agent may call, and how to run each."""

    defs: list[ToolDef] = field(default_factory=list)
    runners: dict[str, Runner] = field(default_factory=dict)

    def add(self, tool: ToolDef, runner: Runner) -> None:
        self.defs.append(tool)
        self.runners[tool.name] = runner

    def __bool__(self) -> bool:
        return bool(self.defs)

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.defs]

    def get(self, name: str) -> ToolDef | None:
        return next((d for d in self.defs if d.name == name), None)

    def schemas(self) -> list[dict[str, Any]]:
        return [d.schema() for d in self.defs]

    async def call(self, name: str, raw_arguments: str) -> ToolOutput:
        """Run one call; every failure is a tool error the model reads."""
        runner = self.runners.get(name)
        if runner is None:
            offered = ", ".join(self.names) or "none"
            return ToolOutput(f"error: there is no tool named {name[:64]!r}; the tools are: {offered}", False,
                              "unknown tool")
        try:
            args = parse_arguments(raw_arguments)
            return await runner(name, args)
        except ToolError as exc:
            return ToolOutput(f"error: {exc}", False, str(exc)[:120])


def without(box: Toolbox, names: Sequence[str]) -> Toolbox:
    """A copy of `box` without the named tools."""
    out = Toolbox()
    for d in box.defs:
        if d.name not in names:
            out.add(d, box.runners[d.name])
    return out

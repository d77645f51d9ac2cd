"""What a tool is to the call engine: a definition to offer, and a call that always answers.

A tool call never raises into the engine. Arguments that are not JSON, a name nobody
offered, a path outside the references, a server that died: each is a `ToolOutput` with
`ok=False` and one line the model can read and recover from (another path, another tool,
or an answer without it).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .extracts import Facts, extract, other_facts
from .signature import schema_of

MAX_ARGUMENT_CHARS = 4000
"""Arguments longer than this are refused (a model looping inside a JSON string)."""


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


async def _unbound(name: str, args: dict[str, Any]) -> ToolOutput:
    raise ToolError(f"{name} is declared but has nothing to run it here")


@dataclass(frozen=True)
class Tool:
    """One tool, whole: the schema offered to a model (OpenAI function calling), how a call runs,
    and how its result shrinks to one line of facts when the budget is tight (`extracts`).

    Built-in tools and `recall` are declared by a function's signature and docstring
    (`Tool.declare`) and given their runner where what they read is known (`bound`); an MCP
    server's tools are made from what the server lists."""

    name: str
    description: str
    parameters: dict[str, Any]
    run: Runner = _unbound
    facts: Facts = other_facts
    """The facts its extract keeps of a result (`extracts`)."""
    server: str | None = None
    """The MCP server it comes from (None: built in)."""

    @classmethod
    def declare(cls, fn: Callable[..., Any], facts: Facts = other_facts, name: str | None = None) -> Tool:
        """The tool `fn`'s docstring and signature declare (`signature.schema_of`), named `name`
        (default: the function's name)."""
        declared, description, parameters = schema_of(fn)
        return cls(name or declared, description, parameters, facts=facts)

    def bound(self, run: Runner) -> Tool:
        """This tool run by `run`."""
        return replace(self, run=run)

    def schema(self) -> dict[str, Any]:
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}

    def extract(self, arguments: str, content: str, ok: bool) -> str:
        """The one-line extract of one of its results."""
        return extract(self.name, arguments, content, ok, self.facts)


@dataclass
class Toolbox:
    """The tools one agent may call, by name, in the order they are offered."""

    tools: dict[str, Tool] = field(default_factory=dict)

    def add(self, tool: Tool) -> None:
        self.tools[tool.name] = tool

    def __bool__(self) -> bool:
        return bool(self.tools)

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools.values()]

    def copy(self) -> Toolbox:
        return Toolbox(dict(self.tools))

    def merge(self, other: Toolbox) -> None:
        """Add `other`'s tools, but none under a name this box already offers."""
        for tool in other.tools.values():
            self.tools.setdefault(tool.name, tool)

    async def call(self, name: str, raw_arguments: str) -> ToolOutput:
        """Run one call; every failure is a tool error the model reads."""
        tool = self.tools.get(name)
        if tool is None:
            offered = ", ".join(self.names) or "none"
            return ToolOutput(f"error: there is no tool named {name[:64]!r}; the tools are: {offered}", False,
                              "unknown tool")
        try:
            args = parse_arguments(raw_arguments)
            return await tool.run(name, args)
        except ToolError as exc:
            return ToolOutput(f"error: {exc}", False, str(exc)[:120])


def without(box: Toolbox, names: Sequence[str]) -> Toolbox:
    """A copy of `box` without the named tools."""
    return Toolbox({n: t for n, t in box.tools.items() if n not in names})

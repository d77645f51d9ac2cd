"""A tool's schema read from a Python function: its name, its docstring and its signature.

The function declares the tool as a model sees it (as inspect_ai's `@tool` does): its name is
the tool's, the docstring's first paragraph its description, each parameter a property of the
JSON schema with the type of its annotation and the description its line under `Args:` gives.
A parameter without a default is required. `Annotated[int, Bounds(1, 8)]` adds `minimum` and
`maximum`; `X | None` is an optional `X`. What the schema cannot say (a path that must stay
inside the references) the tool's runner checks, and answers with a tool error.
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARG_LINE = re.compile(r"^\s*(\w+):\s*(.*)$")


@dataclass(frozen=True)
class Bounds:
    """The smallest and largest value a number parameter may take (None: no bound)."""

    minimum: int | None = None
    maximum: int | None = None


class SchemaError(TypeError):
    """A declaration the schema cannot be read from (a programming error, found at import)."""


def _docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    doc = inspect.getdoc(fn) or ""
    head, _, rest = doc.partition("\n\n")
    described: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for line in rest.splitlines():
        if line.strip() == "Args:":
            in_args = True
            continue
        if not in_args:
            continue
        m = _ARG_LINE.match(line)
        if m and line.startswith("    ") and not line.startswith("        "):
            current = m.group(1)
            described[current] = m.group(2).strip()
        elif current is not None and line.strip():  # a description that runs on to the next line
            described[current] += " " + line.strip()
    return " ".join(head.split()), described


def _property(name: str, hint: Any, description: str | None) -> dict[str, Any]:
    bounds = Bounds()
    if get_origin(hint) is Annotated:
        hint, *extra = get_args(hint)
        bounds = next((e for e in extra if isinstance(e, Bounds)), bounds)
    if get_origin(hint) in (Union, types.UnionType):
        inner = [a for a in get_args(hint) if a is not type(None)]
        if len(inner) != 1:
            raise SchemaError(f"parameter {name!r}: one type or one type and None")
        hint = inner[0]
    kind = _JSON_TYPES.get(hint)
    if kind is None:
        raise SchemaError(f"parameter {name!r}: {hint!r} has no JSON schema type here")
    prop: dict[str, Any] = {"type": kind}
    if description:
        prop["description"] = description
    if bounds.minimum is not None:
        prop["minimum"] = bounds.minimum
    if bounds.maximum is not None:
        prop["maximum"] = bounds.maximum
    return prop


def schema_of(fn: Callable[..., Any]) -> tuple[str, str, dict[str, Any]]:
    """The name, the description and the parameters' JSON schema `fn` declares."""
    description, described = _docstring(fn)
    if not description:
        raise SchemaError(f"{fn.__name__}: a tool needs a docstring (its first paragraph is its description)")
    hints = get_type_hints(fn, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, param in inspect.signature(fn).parameters.items():
        if name not in hints:
            raise SchemaError(f"{fn.__name__}: parameter {name!r} has no type")
        properties[name] = _property(name, hints[name], described.get(name))
        if param.default is inspect.Parameter.empty:
            required.append(name)
    return fn.__name__, description, {"type": "object", "properties": properties, "required": required}

"""A tool is one object: the schema a model is offered (read from a function's signature and
docstring), how a call runs, and the one-line extract its results shrink to."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import pytest

from moot.core.engine.recall_tool import RECALL
from moot.core.tools.builtin import BUILTIN, reference_tools
from moot.core.tools.references import scan
from moot.core.tools.registry import Tool, Toolbox, ToolOutput, string_arg
from moot.core.tools.signature import Bounds, SchemaError
from tests.grounding_helpers import make_refs


def open_incidents(service: str, days: Annotated[int, Bounds(1, 30)] = 7, owner: str | None = None) -> None:
    """List the incidents still open for a service, newest first, with who is on them.

    Args:
        service: the service's name as the on-call rota spells it
        days: how far back to look, in days
        owner: only the incidents this person owns
    """


def _incident_facts(args: dict[str, object], content: str) -> list[str]:
    return [f"Service: {args.get('service')}", f"Open: {len(content.splitlines()) - 1}"]


async def _incidents(name: str, args: dict[str, object]) -> ToolOutput:
    service = string_arg(args, "service", required=True)
    return ToolOutput(f"2 open incidents for {service}:\nINC-4411 queue backlog after the Tuesday deploy\n"
                      "INC-4409 certificate renewal failed on the edge proxies", True, f"2 open for {service}")


def test_a_declared_tool_offers_its_signature_runs_and_extracts_by_its_own_rule() -> None:
    tool = Tool.declare(open_incidents, _incident_facts).bound(_incidents)
    assert tool.schema() == {"type": "function", "function": {
        "name": "open_incidents",
        "description": "List the incidents still open for a service, newest first, with who is on them.",
        "parameters": {"type": "object", "properties": {
            "service": {"type": "string", "description": "the service's name as the on-call rota spells it"},
            "days": {"type": "integer", "description": "how far back to look, in days", "minimum": 1, "maximum": 30},
            "owner": {"type": "string", "description": "only the incidents this person owns"}},
            "required": ["service"]}}}
    box = Toolbox()
    box.add(tool)
    out = asyncio.run(box.call("open_incidents", '{"service": "billing-api"}'))
    assert out.ok and out.text.startswith("2 open incidents for billing-api")
    assert box.get("open_incidents") is tool
    assert tool.extract('{"service": "billing-api"}', out.text, True) == "[✓ open_incidents: Service: billing-api | Open: 2]"
    missing = asyncio.run(box.call("open_incidents", "{}"))
    assert not missing.ok and missing.text == "error: missing the required argument 'service'"


def test_a_declared_tool_nobody_runs_answers_with_a_tool_error() -> None:
    box = Toolbox()
    box.add(Tool.declare(open_incidents))
    out = asyncio.run(box.call("open_incidents", '{"service": "billing-api"}'))
    assert not out.ok and "nothing to run it" in out.text


def _undocumented(service: str) -> None:
    pass


def _untyped(service) -> None:  # type: ignore[no-untyped-def]
    """Look a service up."""


def _two_types(service: str | int) -> None:
    """Look a service up."""


@pytest.mark.parametrize("fn", [_undocumented, _untyped, _two_types])
def test_a_declaration_the_schema_cannot_be_read_from_is_refused(fn: object) -> None:
    with pytest.raises(SchemaError):
        Tool.declare(fn)  # type: ignore[arg-type]


def test_the_built_in_and_recall_schemas_are_the_ones_sent_before() -> None:
    sent = json.dumps([t.schema() for t in (*BUILTIN, RECALL)])
    assert sent == json.dumps([
        {"type": "function", "function": {"name": "list_files", "description": "List the reference files (the documents and code the user gave this debate) under a folder, with sizes.", "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "folder relative to the references; \".\" for all"}, "pattern": {"type": "string", "description": "optional glob such as \"*.md\""}}, "required": []}}},  # noqa: E501
        {"type": "function", "function": {"name": "read_file", "description": "Read a reference file, with line numbers. Long files come in parts: ask again with start_line.", "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "file path as list_files shows it"}, "start_line": {"type": "integer", "description": "first line (1-based)", "minimum": 1}, "end_line": {"type": "integer", "description": "last line (inclusive)", "minimum": 1}}, "required": ["path"]}}},  # noqa: E501
        {"type": "function", "function": {"name": "search", "description": "Search the reference files for words or a phrase; answers file:line and a short excerpt per match.", "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "words or a phrase"}, "path": {"type": "string", "description": "folder or file to search in; \".\" for all"}}, "required": ["query"]}}},  # noqa: E501
        {"type": "function", "function": {"name": "recall", "description": "Search this debate's earlier messages that are no longer in your context (the summary stands in for them) for a name, a number or a few words; returns each match verbatim with its turn or round and speaker.", "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "a name, a number or a few distinctive words"}, "limit": {"type": "integer", "description": "at most this many matches (1-8, default 4)", "minimum": 1, "maximum": 8}}, "required": ["query"]}}},  # noqa: E501
    ])


def test_each_reference_tool_extracts_its_results_by_its_own_rule(tmp_path: Path) -> None:
    box = reference_tools(scan([make_refs(tmp_path)]))
    read = asyncio.run(box.call("read_file", '{"path": "docs/plan.md"}'))
    found = asyncio.run(box.call("search", '{"query": "journal"}'))
    assert read.ok and found.ok
    read_file, search = box.get("read_file"), box.get("search")
    assert read_file is not None and search is not None
    assert read_file.extract('{"path": "docs/plan.md"}', read.text, True).startswith(
        "[✓ read_file: File: docs/plan.md | Lines: 1–")
    assert "Headings: Notes service plan; Storage; Search" in read_file.extract('{"path": "docs/plan.md"}',
                                                                                 read.text, True)
    assert search.extract('{"query": "journal"}', found.text, True).startswith('[✓ search: Query: "journal" | Matches: ')

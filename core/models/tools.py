"""Tools in a debate's config and state: the `[tools]` section, MCP servers, and what each call's
tool loop did (the calls a model made, what came back, which results were shown as extracts)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from .base import Model

ToolsMode = Literal["auto", "call", "retrieve", "off"]
"""`auto`: function calling where the endpoint takes it, else the retrieval tier; `call`: tools only;
`retrieve`: reference passages in the view, no tools; `off`: neither."""


class _Strict(Model):
    # Each field's docstring is its description in the JSON Schema (`moot config --schema`),
    # read when the schema is made (`config_view.config_schema`), not as the model is defined.
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class McpServerConfig(_Strict):
    """A stdio MCP server whose read-only tools are offered to agents (needs `pip install 'moot[mcp]'`)."""

    name: str = Field(min_length=1, max_length=24, pattern=r"^[A-Za-z0-9_-]+$")
    """Short name; its tools are offered as `<name>__<tool>`."""
    command: str = Field(min_length=1)
    """The program moot starts (and stops with the debate)."""
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables for the server (the rest of moot's environment is not passed)."""
    cwd: str | None = None
    allow: list[str] | None = None
    """Tools offered by name; default: only those the server marks `readOnlyHint` (and not destructive)."""
    timeout_s: float = Field(30.0, gt=0, le=600, allow_inf_nan=False)
    """Deadline of the server's start and of each tool call."""


class ToolsConfig(_Strict):
    """Read-only tools over the references (`--ref`) and MCP servers; debate-wide."""

    mode: ToolsMode = "auto"
    max_calls: int = Field(10, ge=0, le=100)
    """Tool calls one agent call may make (model → tools → model); past them it answers without tools."""
    result_tokens: int = Field(2000, ge=64, le=32_000)
    """Cap of one tool result, in tokens."""
    tools_tokens: int = Field(3000, ge=128)
    """Room kept in a call's view for tool results (at most 40% of its budget); within it, the oldest
    results are replaced by one-line extracts when the next turn would not fit."""
    references_tokens: int = Field(1500, ge=64)
    """Budget of the retrieval tier (reference passages) where tools cannot be called."""
    read_lines: int = Field(200, ge=10, le=5000)
    list_entries: int = Field(200, ge=10, le=5000)
    search_matches: int = Field(20, ge=1, le=500)
    max_file_bytes: int = Field(1 << 20, ge=1024, le=64 << 20)
    """Reference files larger than this are skipped."""
    timeout_s: float = Field(30.0, gt=0, le=600, allow_inf_nan=False)
    """Deadline of one built-in tool call (`list_files`, `read_file`, `search`), as an MCP server's
    `timeout_s` is of its calls: past it the call is stopped and answered with a tool error."""
    mcp: list[McpServerConfig] = Field(default_factory=list)


class ToolsOverrides(_Strict):
    """One agent's tools: its own mode and call cap, and MCP servers of its own."""

    mode: ToolsMode | None = None
    max_calls: int | None = Field(None, ge=0, le=100)
    mcp: list[McpServerConfig] = Field(default_factory=list)


class ToolCallRecord(Model):
    """One tool call a model made."""

    id: str
    name: str
    arguments: str
    """As the model sent them (masked, capped)."""
    from_text: bool = False
    """The model wrote the call as a JSON object in its reply, not as `tool_calls`."""


class ToolResultRecord(Model):
    """What a tool returned for one call, as sent to the model."""

    call_id: str
    """The tool call's id."""
    name: str
    ok: bool = True
    content: str = ""
    """The text the model got (masked, control characters removed, capped)."""
    extract: str = ""
    """The result's one-line extract, shown in its place once older results must give way."""
    summary: str = ""
    tokens: int = 0


class ToolStep(Model):
    """One model turn that called tools, and their results."""

    index: int
    content: str = ""
    """The model's text beside its calls (often empty)."""
    calls: list[ToolCallRecord] = Field(default_factory=list)
    results: list[ToolResultRecord] = Field(default_factory=list)
    extracted: list[str] = Field(default_factory=list)
    """Tool call ids shown as extracts, not in full, in the request that followed this step."""
    dropped: int = 0
    """Earlier steps left out of that request altogether (a marker says so)."""
    note: str | None = None
    """A message after the results (the tool-call cap reached: answer now)."""


class ReferenceInfo(Model):
    """One file of the reference set as recorded at the start: a resume compares the hashes."""

    path: str
    size: int
    sha256: str


class ToolServerInfo(Model):
    """An MCP server a debate had: the tools it offered to agents, or why it offered none."""

    name: str
    tools: list[str] = Field(default_factory=list)
    withheld: list[str] = Field(default_factory=list)
    """Tools it has that were not offered (not marked read-only, and not in `allow`)."""
    error: str | None = None


class ToolsSetup(Model):
    """What a debate's agents could read and call: recorded at its start (and each resume)."""

    roots: list[str] = Field(default_factory=list)
    references: list[ReferenceInfo] = Field(default_factory=list)
    skipped: dict[str, str] = Field(default_factory=dict)
    """Left out of the set, and why (at most 200 named)."""
    servers: list[ToolServerInfo] = Field(default_factory=list)
    agents: dict[str, str] = Field(default_factory=dict)
    """Agent id → how it gets the references: `tools`, `retrieve` or `off`."""

"""A debate's grounding: its reference set, each agent's tools, and how each call gets them.

Per call, one of: `tools` (function calling: the built-in tools over the references and the
MCP servers' tools, run in the tool loop), `retrieve` (no function calling at that endpoint,
or `tools.mode = "retrieve"`: the reference passages most relevant to the call, a tier of
its view) or nothing. A call with tools whose view a summary stands in for part of also gets
`recall(query)` (`moot.core.engine.recall_tool`): the debate's own earlier messages, searched
in the same index that holds the reference passages. The endpoint decides in `auto` mode: one that refused `tools`, or whose
server said its model has none (llama.cpp `/props`), gets the retrieval tier from then on.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from .. import tokens
from ..config import ResolvedAgent
from ..context.index import DebateIndex
from ..events import Event
from ..models.config import MootConfig
from ..models.state import Contribution, ViewRecord
from ..models.tools import McpServerConfig, ReferenceInfo, ToolsConfig, ToolServerInfo, ToolsMode, ToolsSetup
from ..providers.base import Provider
from ..safety.sanitize import terminal_safe
from ..safety.secrets import redact
from ..search.index import SearchIndex
from ..tools.builtin import Limits, reference_tools, root_label
from ..tools.references import ReferenceSet, RefUnreadable
from ..tools.registry import Toolbox
from .recall_tool import RECALL_NAME, RecallTool

ToolPhase = frozenset({"proposal", "critique", "refinement", "answer", "turn"})
"""Phases whose calls may read: the ones that write an agent's own view of the problem."""
Access = Literal["tools", "retrieve"]
MAX_SKIPPED_NAMED = 200
RETRIEVE_SHARE = 0.3
"""The retrieval tier takes at most this share of a view's budget."""
TOOLS_SHARE = 0.4
"""The tool loop's room takes at most this share of a view's budget."""


def refs_fingerprint(refs: ReferenceSet) -> str:
    """One hash of the whole set (paths and contents): the passages are rebuilt when it changes."""
    digest = hashlib.sha256(b"masked\n")  # an index from before passages were masked is rebuilt
    for path, f in sorted(refs.files.items()):
        digest.update(f"{path}\0{f.sha256}\n".encode("utf-8", "replace"))
    return digest.hexdigest()


def _texts(refs: ReferenceSet, secrets: Sequence[str]) -> Iterator[tuple[str, str]]:
    """Each file's text as the index may hold it: cleaned, then masked (a file may hold the key,
    and the index is a file on disk)."""
    for path, f in sorted(refs.files.items()):
        try:
            yield path, redact(terminal_safe(refs.text(f)), secrets)
        except RefUnreadable:
            continue


@dataclass
class Grounding:
    """What a debate's calls may read, and how (see the module doc)."""

    config: ToolsConfig
    refs: ReferenceSet | None = None
    open_index: Callable[[], SearchIndex] | None = None
    """Opens the debate's search index, which holds the reference passages (the retrieval tier);
    opened at the first retrieval, when the debate's folder has its name."""
    modes: dict[str, ToolsMode] = field(default_factory=dict)
    """Agent id → its tools mode (its own, else the debate's)."""
    max_calls: dict[str, int] = field(default_factory=dict)
    boxes: dict[str, Toolbox] = field(default_factory=dict)
    """Agent id → the tools it may call (built-in and MCP)."""
    servers: list[ToolServerInfo] = field(default_factory=list)
    mcp: dict[str, list[McpServerConfig]] = field(default_factory=dict)
    """Agent id → the MCP servers whose tools it gets (the debate's and its own)."""
    stoppers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    _index: SearchIndex | None = field(default=None, repr=False)

    @classmethod
    def build(cls, config: MootConfig, agents: Sequence[ResolvedAgent], refs: ReferenceSet | None,
              open_index: Callable[[], SearchIndex] | None = None) -> Grounding:
        g = cls(config.tools, refs, open_index)
        limits = Limits(config.tools.read_lines, config.tools.list_entries, config.tools.search_matches,
                        config.tools.result_tokens, config.tools.timeout_s)
        builtin = reference_tools(refs, limits) if refs is not None and refs.files else None
        for agent in agents:
            own = agent.config.tools
            g.modes[agent.id] = own.mode if own is not None and own.mode else config.tools.mode
            g.max_calls[agent.id] = own.max_calls if own is not None and own.max_calls is not None \
                else config.tools.max_calls
            g.boxes[agent.id] = builtin.copy() if builtin is not None else Toolbox()
            g.mcp[agent.id] = [*config.tools.mcp, *(own.mcp if own is not None else [])]
        return g

    def passages_index(self, secrets: Sequence[str]) -> SearchIndex | None:
        """The search index with this reference set's passages in it, masked (rebuilt when the set changed)."""
        if self._index is None and self.open_index is not None and self.refs is not None:
            self._index = self.open_index()
            self._index.index_references(refs_fingerprint(self.refs), _texts(self.refs, secrets))
        return self._index

    async def start(self, emit: Callable[[Event], Event]) -> None:
        """Start the MCP servers and offer their tools (a server that fails is a warning, not the end)."""
        if not any(self.mcp.values()):
            return
        from ..tools.mcp_setup import start_servers

        started = await start_servers(self.mcp, emit)
        self.stoppers += started.stoppers
        self.servers += started.servers
        for agent_id, box in started.boxes.items():
            self.add_tools(agent_id, box)

    async def aclose(self) -> None:
        """Stop the MCP servers (all at once: each may take its grace period); close the index."""
        await asyncio.gather(*(stop() for stop in reversed(self.stoppers)))
        self.stoppers.clear()
        if self._index is not None:
            self._index.close()
            self._index = None

    def add_tools(self, agent_id: str, box: Toolbox) -> None:
        """Offer more tools to one agent (an MCP server's)."""
        self.boxes.setdefault(agent_id, Toolbox()).merge(box)

    def access(self, agent: ResolvedAgent, provider: Provider, phase: str) -> Access | None:
        """How this call reads: by tools, by the retrieval tier, or not at all."""
        if phase not in ToolPhase:
            return None
        mode = self.modes.get(agent.id, self.config.mode)
        box = self.boxes.get(agent.id)
        has_refs = self.refs is not None and bool(self.refs.files)
        if mode == "off" or (not box and not has_refs):
            return None
        if mode == "retrieve":
            return "retrieve" if has_refs else None
        if mode == "call":
            return "tools" if box else None
        if provider.supports_tools is False:
            return "retrieve" if has_refs else None
        return "tools" if box else ("retrieve" if has_refs else None)

    def toolbox(self, agent_id: str, recall: RecallTool | None = None) -> Toolbox:
        """The tools one call offers: the agent's, and `recall` beside them when given."""
        box = self.boxes.get(agent_id) or Toolbox()
        if recall is None or box.get(RECALL_NAME) is not None:  # an MCP tool already has the name
            return box
        out = box.copy()
        out.add(recall.tool())
        return out

    def tools_note(self, agent_id: str, box: Toolbox | None = None) -> str:
        """The message before a tool call's task: what it may read and how (models that are not
        told seldom call a tool). `box`: the call's tools, when they are not the agent's own."""
        box = box if box is not None else self.boxes.get(agent_id)
        names = ", ".join(box.names) if box else ""
        files = len(self.refs.files) if self.refs is not None else 0
        if files:
            what = (f"The user gave this debate {files} reference file{'s' if files != 1 else ''} ({self.label}). "
                    "Before you answer, read what bears on the task: list_files shows them, read_file reads one "
                    "(with line numbers), search finds a word or phrase.")
        else:
            what = "You have tools that can look things up for this task."
        if box is not None and box.get(RECALL_NAME) is not None:
            what += (" recall finds this debate's earlier messages that the summary now stands in for, "
                     "verbatim.")
        return (f"## References and tools\n\n{what} Tools: {names}. Call them as tools (function calls), then "
                "base your answer on what they returned and name the file and line you rely on.")

    def tools_room(self, budget: int) -> int:
        return min(self.config.tools_tokens, int(budget * TOOLS_SHARE))

    def retrieve(self, record: ViewRecord, history: Sequence[Contribution], index: DebateIndex, budget: int,
                 secrets: Sequence[str] = ()) -> str:
        """The retrieval tier's text for one call: the passages that best match its problem, quoted
        material and latest history, most relevant first, labelled with file and lines, under
        `references_tokens` (and a share of the budget), masked. Empty when nothing matches."""
        found = self.passages_index(secrets)
        if found is None:
            return ""
        room = min(self.config.references_tokens, int(budget * RETRIEVE_SHARE))
        parts = [index.problem]
        parts += [index.contributions[i].content[:2000] for i in record.task_contribution_ids if i in index.contributions]
        parts += [c.content[:2000] for c in list(history)[-2:]]
        hits = found.passages(" ".join(parts), limit=24)
        head = ("## Reference passages\n\nFrom the files the user gave this debate, chosen for this task "
                "(most relevant first; quote them by file and line):")
        blocks: list[str] = []
        used = tokens.count_text(head, record.model) + 8
        for p in hits:
            text = redact(terminal_safe(p.text), secrets).rstrip()  # an index built under another key
            block = f"### {terminal_safe(p.path)} · lines {p.first_line}–{p.last_line}\n\n```\n{text}\n```"
            n = tokens.count_text(block, record.model) + 2
            if used + n > room:
                continue
            blocks.append(block)
            used += n
        return "\n\n".join([head, *blocks]) if blocks else ""

    def setup(self) -> ToolsSetup:
        """What the debate records about its references and tools (`tools_ready`)."""
        refs = self.refs
        skipped = dict(list(refs.skipped.items())[:MAX_SKIPPED_NAMED]) if refs is not None else {}
        return ToolsSetup(
            roots=[str(r) for r in refs.roots] if refs is not None else [],
            references=[ReferenceInfo(path=f.path, size=f.size, sha256=f.sha256) for f in refs.files.values()]
            if refs is not None else [],
            skipped=skipped,
            servers=list(self.servers),
            agents={a: m for a, m in self.modes.items()},
        )

    @property
    def label(self) -> str:
        return root_label(self.refs) if self.refs is not None else ""

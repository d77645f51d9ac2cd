"""What a grounded debate had and did: its references, its MCP servers and tools, and per agent
what it read (for `moot report` and `moot show`)."""

from __future__ import annotations

from ..models.state import DebateState

MAX_READS_SHOWN = 40


def reads_by_agent(state: DebateState) -> dict[str, list[str]]:
    """Agent id → the extracts of what it read with tools, in order, each once."""
    out: dict[str, list[str]] = {}
    for c in state.all_contributions():
        if c.reads:
            mine = out.setdefault(c.agent_id, [])
            mine += [r for r in c.reads if r not in mine]
    return out


def summary_lines(state: DebateState) -> list[str]:
    """One line for the references, one per MCP server (empty for a debate without them)."""
    setup = state.tools
    if setup is None:
        return []
    lines: list[str] = []
    if setup.roots:
        skipped = f" ({len(setup.skipped)} skipped: ignored, secret, binary or too large)" if setup.skipped else ""
        lines.append(f"references: {len(setup.references)} files from {', '.join(setup.roots)}{skipped}")
    for server in setup.servers:
        if server.error is not None:
            lines.append(f"MCP server {server.name}: did not start ({server.error})")
            continue
        withheld = f"; not offered (not read-only): {', '.join(server.withheld)}" if server.withheld else ""
        lines.append(f"MCP server {server.name}: {', '.join(server.tools) or 'no tools offered'}{withheld}")
    return lines


def report_section(state: DebateState) -> list[str]:
    """`## References and tools`, with what each agent read."""
    lines = summary_lines(state)
    if not lines:
        return []
    out = ["## References and tools", "", *(f"- {line}" for line in lines), ""]
    reads = reads_by_agent(state)
    if reads:
        out += ["### What the agents read", ""]
        for agent_id, items in reads.items():
            out += [f"**{agent_id}**", "", *(f"- {r}" for r in items[:MAX_READS_SHOWN])]
            if len(items) > MAX_READS_SHOWN:
                out.append(f"- … {len(items) - MAX_READS_SHOWN} more")
            out.append("")
    return out

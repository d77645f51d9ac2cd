"""Grounding: the reference set, the read-only tools over it, MCP servers' tools, and how tool
results become managed context (extracts, text-written calls)."""

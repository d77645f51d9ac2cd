"""The messages a call's tool loop adds to its view, and the retrieval tier's message.

Rebuilt from the record alone (`ViewRecord.tool_steps`, `inline["references"]`), as the rest of
the view is, so `moot context` shows byte for byte what the last request of a call held: the
view, then each step's assistant message with its `tool_calls` and one `tool` message per call
(a one-line extract instead of the result once it had to give way), then a closing note.
"""

from __future__ import annotations

from ..models.state import ViewRecord
from ..providers.base import Message

REFERENCES_KEY = "references"
"""`ViewRecord.inline` key of the retrieval tier's text."""


def references_message(record: ViewRecord) -> Message | None:
    text = record.inline.get(REFERENCES_KEY)
    return {"role": "user", "content": text} if text else None


def tool_messages(record: ViewRecord) -> list[Message]:
    """The tool loop's messages as the call's last request held them."""
    steps = record.tool_steps
    if not steps:
        return []
    last = steps[-1]
    extracted = set(last.extracted)
    out: list[Message] = []
    if last.dropped:
        n = last.dropped
        out.append({"role": "user", "content": f"[{n} earlier tool step{'s' if n != 1 else ''} omitted to fit the "
                                               "context budget]"})
    for step in steps[last.dropped:]:
        out.append({"role": "assistant", "content": step.content, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in step.calls]})
        for r in step.results:
            out.append({"role": "tool", "tool_call_id": r.call_id,
                        "content": r.extract if r.call_id in extracted else r.content})
    if last.note:
        out.append({"role": "user", "content": last.note})
    return out

"""Trace ids (W3C: 32 hex digits), below everything that needs one.

The orchestrator stamps a new debate with its trace id when it starts; the span fold in
`observe/tracing.py` derives one for debates recorded before ids were stored.
"""

from __future__ import annotations

import hashlib
import secrets


def new_trace_id(debate_id: str | None = None) -> str:
    """A random trace id (32 hex digits), or one derived from `debate_id` (reproducible runs)."""
    if debate_id is None:
        return secrets.token_hex(16)
    return digest_id(f"moot-trace/{debate_id}", 16)


def derived_trace_id(debate_id: str, started_ts: float) -> str:
    """The trace id of a debate recorded before trace ids were stored: derived from its id and start."""
    return digest_id(f"moot-trace/{debate_id}/{started_ts!r}", 16)


def digest_id(text: str, size: int) -> str:
    out = hashlib.sha256(text.encode("utf-8")).hexdigest()[: size * 2]
    return out if out.strip("0") else "1".rjust(size * 2, "0")  # all zeros is the invalid id

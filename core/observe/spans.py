"""Spans as plain records, and the outlet every span leaves the process through.

No OpenTelemetry package is imported here: `otel` and `otlp` turn these records into what a
collector takes. A span id is derived from the trace id and a key the log records, so the same
events give the same spans live and after the fact; every text is masked on the way out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..safety.secrets import redact
from ..trace_ids import digest_id
from .span_attributes import MASKED_JSON

AttrValue = str | bool | int | float | list[str]
SpanKind = Literal["internal", "client"]


def ns(ts: float) -> int:
    return int(round(ts * 1e9))


@dataclass
class SpanEvent:
    name: str
    time_ns: int
    attributes: dict[str, AttrValue] = field(default_factory=dict)


@dataclass
class SpanRecord:
    """One finished span, in plain data (hex ids, times in ns since the epoch)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: SpanKind
    start_ns: int
    end_ns: int = 0
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    error: str | None = None
    """Set: the span's status is ERROR with this description."""


class SpanOutlet:
    """Makes spans and hands each finished one to `emit`, masked (`quiet` drops them instead)."""

    def __init__(self, emit: Callable[[SpanRecord], None], *, secrets: Sequence[str] = ()) -> None:
        self.emit = emit
        self.secrets = list(secrets)
        self.quiet = False
        self.trace_id = ""

    def _span(self, key: str, name: str, parent: SpanRecord | None, t: int, attrs: dict[str, AttrValue], *,
              kind: SpanKind = "internal") -> SpanRecord:
        return SpanRecord(trace_id=self.trace_id, span_id=digest_id(f"{self.trace_id}/{key}", 8),
                          parent_id=parent.span_id if parent else None, name=name, kind=kind, start_ns=t,
                          attributes=attrs)

    def _close(self, span: SpanRecord, t: int, error: str | None = None) -> None:
        span.end_ns = max(span.start_ns, t)
        if error is not None:
            span.error = error
        self._out(span)

    def _out(self, span: SpanRecord) -> None:
        if self.quiet:
            return
        span.attributes = {k: v for k, v in ((k, v if k in MASKED_JSON else self._clean(v))
                                             for k, v in span.attributes.items()) if v is not None}
        for ev in span.events:
            ev.attributes = {k: v for k, v in ((k, self._clean(v)) for k, v in ev.attributes.items()) if v is not None}
        if span.error is not None:
            span.error = self._mask(span.error)
        self.emit(span)

    def _mask(self, text: str) -> str:
        return redact(text, self.secrets)

    def _clean(self, value: AttrValue) -> AttrValue | None:
        """What may leave the process: every text masked, no NaN (JSON has none)."""
        if isinstance(value, str):
            return self._mask(value)
        if isinstance(value, list):
            return [self._mask(v) for v in value]
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return value

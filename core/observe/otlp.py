"""`moot trace`: a recorded debate's trace as OTLP JSON, written with no OpenTelemetry package.

The output is the JSON encoding of an OTLP `ExportTraceServiceRequest` (what an OTLP/HTTP
receiver takes at `/v1/traces` with `Content-Type: application/json`): trace and span ids in
hex, 64-bit integers as decimal strings, enums as numbers, as the OTLP specification's
"JSON Protobuf Encoding" asks. So `curl --data @trace.json …/v1/traces` sends it later.

Some receivers take OTLP/HTTP in protobuf only (Arize Phoenix answers JSON with HTTP 415), so
the same request is also written as binary protobuf (`Content-Type: application/x-protobuf`),
through the OpenTelemetry proto package the `otel` extra installs: the JSON document is read
into its `ExportTraceServiceRequest` with protobuf's own JSON mapping, so both formats hold the
same spans.
"""

from __future__ import annotations

import base64
import importlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from ..storage.folder import DebateFolder
from ..storage.log import read_events
from ..version import VERSION as __version__
from .spans import AttrValue, SpanRecord
from .tracing import build_spans

SCOPE = "moot"
SERVICE = "moot"
_KINDS = {"internal": 1, "client": 3}
"""OTLP's Span.SpanKind numbers (SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT)."""
STATUS_UNSET, STATUS_ERROR = 0, 2


def any_value(value: AttrValue) -> dict[str, Any]:
    if isinstance(value, bool):  # before int: a bool is an int in Python
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": value}


def key_values(attrs: Mapping[str, AttrValue]) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in attrs.items()]


def span_json(span: SpanRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": span.trace_id, "spanId": span.span_id}
    if span.parent_id:
        out["parentSpanId"] = span.parent_id
    out.update({
        "name": span.name,
        "kind": _KINDS[span.kind],
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns),
        "attributes": key_values(span.attributes),
        "events": [{"timeUnixNano": str(e.time_ns), "name": e.name, "attributes": key_values(e.attributes)}
                   for e in span.events],
        "status": {"code": STATUS_ERROR, "message": span.error} if span.error is not None else {"code": STATUS_UNSET},
    })
    return out


def otlp_request(spans: Sequence[SpanRecord], resource: Mapping[str, AttrValue] | None = None) -> dict[str, Any]:
    """An ExportTraceServiceRequest holding `spans` (one resource, one scope), as a JSON object."""
    attrs = dict(resource or {"service.name": SERVICE, "service.version": __version__})
    return {"resourceSpans": [{
        "resource": {"attributes": key_values(attrs)},
        "scopeSpans": [{"scope": {"name": SCOPE, "version": __version__}, "spans": [span_json(s) for s in spans]}],
    }]}


PROTOBUF_HINT = "writing OTLP protobuf needs the OpenTelemetry proto package: pip install 'moot[otel]'"
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _base64_ids(value: Any) -> Any:
    """OTLP JSON writes ids in hex; protobuf's own JSON mapping reads `bytes` fields as base64."""
    if isinstance(value, dict):
        return {k: base64.b64encode(bytes.fromhex(v)).decode() if k in _ID_FIELDS else _base64_ids(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_base64_ids(v) for v in value]
    return value


def to_protobuf(document: str) -> bytes:
    """An OTLP JSON document (as `export_trace` writes it) as the binary protobuf of the same
    `ExportTraceServiceRequest`; ConfigError without the proto package."""
    try:
        json_format = importlib.import_module("google.protobuf.json_format")  # untyped: imported by name
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        raise ConfigError(PROTOBUF_HINT) from None
    message = json_format.ParseDict(_base64_ids(json.loads(document)), ExportTraceServiceRequest())
    return bytes(message.SerializeToString())


def export_trace(folder: DebateFolder, *, content: bool | None = None, secrets: Sequence[str] = ()) -> str:
    """The debate's trace, built from its event log, as OTLP JSON text. `content` None: as the
    debate's own `debate.trace_content` setting says."""
    if content is None:
        content = bool(folder.load().config.get("debate", {}).get("trace_content", False))
    spans = build_spans(read_events(folder.events_path), content=content, secrets=secrets)
    spans.sort(key=lambda s: (s.start_ns, s.end_ns))
    return json.dumps(otlp_request(spans), ensure_ascii=False, separators=(",", ":")) + "\n"


__all__ = ["export_trace", "otlp_request", "span_json", "to_protobuf"]

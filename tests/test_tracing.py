"""OpenTelemetry traces: the span tree of a debate, content masking, one trace across a
resume, `moot trace` as OTLP JSON, and moot without the otel extra.

Live spans go to the SDK's in-memory exporter; the after-the-fact export is built from
the event log. Both must give the very same spans (ids, parents, times, attributes).
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanKind, StatusCode

from moot import __version__
from moot.cli import main
from moot.core.events import ContributionAdded, DebateStarted, parse_event
from moot.core.observe.otel import INSTALL_HINT, LiveTracer, start_tracing, to_readable
from moot.core.observe.otlp import otlp_request
from moot.core.observe.spans import SpanRecord
from moot.core.observe.tracing import RESUME_GAP, TraceBuilder, build_spans
from moot.core.session import DebateSession, SessionOptions, resume_session
from moot.core.storage.folder import DebateFolder
from moot.core.storage.log import read_events
from tests.conftest import ROOT, Faults, cli, make_server, moot, run_debate

KEY = "sk-live-0123456789abcdefXYZ"
BARE_SECRET = "correct-horse-battery-staple"
PROBLEM = "Design a URL shortener for 10k writes per second"


class Traced:
    """`run_debate(before_run=...)`: trace the session into an in-memory exporter."""

    def __init__(self, content: bool | None = None) -> None:
        self.exporter = InMemorySpanExporter()
        self.content = content
        self.tracer: LiveTracer | None = None

    def __call__(self, session: DebateSession) -> None:
        self.tracer = start_tracing(session, content=self.content, exporter=self.exporter)

    def spans(self) -> list[ReadableSpan]:
        assert self.tracer is not None
        assert self.tracer.shutdown() is None
        return list(self.exporter.get_finished_spans())


def hexid(n: int, width: int) -> str:
    return format(n, f"0{width}x")


def key(span: ReadableSpan) -> tuple[Any, ...]:
    """Everything a backend receives of a span."""
    return (hexid(span.context.span_id, 16), hexid(span.parent.span_id, 16) if span.parent else None, span.name,
            span.kind, span.start_time, span.end_time, dict(span.attributes or {}),
            [(e.name, e.timestamp, dict(e.attributes or {})) for e in span.events],
            span.status.status_code, span.status.description)


def record_key(span: SpanRecord) -> tuple[Any, ...]:
    return key(to_readable(span, Resource({}), InstrumentationScope("moot")))


def children(spans: list[ReadableSpan]) -> dict[int | None, list[ReadableSpan]]:
    out: dict[int | None, list[ReadableSpan]] = {}
    for s in spans:
        out.setdefault(s.parent.span_id if s.parent else None, []).append(s)
    return out


def every_text_value(spans: list[ReadableSpan]) -> Iterator[str]:
    for s in spans:
        values = [*(s.attributes or {}).values(), s.status.description or ""]
        for e in s.events:
            values += list((e.attributes or {}).values())
        for v in values:
            if isinstance(v, str):
                yield v
            elif isinstance(v, (list, tuple)):
                yield from (x for x in v if isinstance(x, str))


# ---------------------------------------------------------------- the tree


async def test_span_tree_of_a_two_round_debate(tmp_path: Path) -> None:
    traced = Traced()
    state, folder = await run_debate(tmp_path, PROBLEM, before_run=traced)
    spans = traced.spans()
    started = next(e for e in read_events(folder.events_path) if isinstance(e, DebateStarted))

    assert len(started.trace_id) == 32
    assert {hexid(s.context.trace_id, 32) for s in spans} == {started.trace_id}
    assert len({s.context.span_id for s in spans}) == len(spans)
    by_id = {s.context.span_id: s for s in spans}
    kids = children(spans)
    [root] = kids[None]
    assert root.name == "debate" and root.attributes["moot.debate.id"] == folder.id
    assert root.attributes["moot.status"] == "completed" and root.status.status_code == StatusCode.UNSET

    def names(parent: ReadableSpan) -> list[str]:
        return sorted(s.name for s in kids.get(parent.context.span_id, []))

    assert names(root) == ["round 1", "round 2", "synthesis"]
    rounds = {s.name: s for s in kids[root.context.span_id]}
    for r in ("round 1", "round 2"):
        assert names(rounds[r]) == ["critique", "proposal", "refinement", "summarize"]
    calls = [s for s in spans if s.kind == SpanKind.CLIENT]
    per_phase = Counter((by_id[s.parent.span_id].name if s.attributes["moot.phase"] != "summarize"
                         else "summary", s.attributes["moot.phase"], s.attributes["moot.round"]) for s in calls)
    assert per_phase == {
        ("proposal", "proposal", 1): 3, ("critique", "critique", 1): 6, ("refinement", "refinement", 1): 3,
        ("summary", "summarize", 2): 4,  # each agent's round-2 summary, and the judge's before its synthesis
        ("critique", "critique", 2): 6, ("refinement", "refinement", 2): 3,
        ("synthesis", "synthesis", 2): 1,
    }
    # Round 2's proposals are round 1's refinements carried over (no call): events on its phase.
    [carried_phase] = [s for s in kids[rounds["round 2"].context.span_id] if s.name == "proposal"]
    carried = [e for e in carried_phase.events if e.name == "carried"]
    assert sorted(str(e.attributes["moot.agent.id"]) for e in carried) == ["architect", "kiss", "performance"]
    summaries = [s for s in spans if s.name.startswith("summary ")]
    assert sorted(s.name for s in summaries) == ["summary architect", "summary judge", "summary kiss",
                                                 "summary performance"]
    for s in summaries:
        parent = by_id[s.parent.span_id].name
        assert parent == ("synthesis" if s.name == "summary judge" else "summarize")
        assert [c.name for c in kids[s.context.span_id]] == ["chat demo"]
    for s in calls:
        a = s.attributes
        assert s.name == f"chat {a['gen_ai.request.model']}"
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.provider.name"] == a["gen_ai.system"] == "demo"
        assert a["gen_ai.request.model"] == "demo" and a["gen_ai.agent.id"] and a["gen_ai.usage.input_tokens"] > 0
        assert a["gen_ai.usage.output_tokens"] > 0 and a["gen_ai.conversation.id"] == folder.id
        assert s.status.status_code == StatusCode.UNSET
    # Every span lies inside its parent (the times come from the events, not from the tracer's clock).
    for s in spans:
        if s.parent is not None:
            p = by_id[s.parent.span_id]
            assert p.start_time <= s.start_time <= s.end_time <= p.end_time, (s.name, p.name)
    # Tokens and cost are counted once: the spans add up to the debate's totals.
    assert sum(s.attributes.get("gen_ai.usage.input_tokens", 0) for s in spans) == state.totals.prompt_tokens
    assert sum(s.attributes.get("gen_ai.usage.output_tokens", 0) for s in spans) == state.totals.completion_tokens
    assert sum(s.attributes.get("moot.cost_usd", 0.0) for s in spans) == pytest.approx(state.totals.cost_usd)
    assert len(calls) == state.totals.calls
    # The same spans, exactly, from the event log after the fact.
    after = build_spans(read_events(folder.events_path))
    assert sorted(map(record_key, after), key=repr) == sorted(map(key, spans), key=repr)


async def test_retries_are_events_and_failures_are_errors(tmp_path: Path) -> None:
    """A 500 then success: a `retry` event on the call. A call that fails for good: status ERROR
    with error.type, and the failed debate's root span too."""
    srv = make_server(faults=Faults(status_script=[500]))
    port = srv.port
    try:
        traced = Traced()
        await run_debate(tmp_path, PROBLEM, rounds=1, provider="openai", base_url=srv.base_url, roles=["kiss"],
                         before_run=traced)
        srv.faults = Faults(fail_every=1)
        failing = Traced()
        state, _ = await run_debate(tmp_path / "2", PROBLEM, rounds=1, provider="openai", base_url=srv.base_url,
                                    roles=["kiss"], config={"debate": {"max_retries": 0}}, before_run=failing)
    finally:
        srv.stop()
    spans = traced.spans()
    [retried] = [s for s in spans if any(e.name == "retry" for e in s.events)]
    assert retried.kind == SpanKind.CLIENT and retried.status.status_code == StatusCode.UNSET
    assert retried.attributes["moot.attempts"] == 2 and "500" in retried.events[0].attributes["moot.error"]
    assert retried.attributes["gen_ai.provider.name"] == "openai"
    assert retried.attributes["server.address"] == "127.0.0.1" and retried.attributes["server.port"] == port
    assert retried.attributes["gen_ai.response.model"] and retried.attributes["gen_ai.response.finish_reasons"]

    spans = failing.spans()
    [failed] = [s for s in spans if s.kind == SpanKind.CLIENT]
    assert failed.status.status_code == StatusCode.ERROR and failed.attributes["error.type"] == "provider_error"
    assert "gen_ai.usage.input_tokens" not in failed.attributes
    [root] = [s for s in spans if s.parent is None]
    assert state.status == "failed" and root.status.status_code == StatusCode.ERROR
    assert root.status.description == state.error


async def _answer_yes(questions: list[Any]) -> list[str]:
    return ["yes"] * len(questions)


@pytest.mark.parametrize("name, config, rounds", [
    ("clarify and convergence", {"debate": {"clarify": True, "termination": "convergence",
                                            "convergence_threshold": 100}}, 3),
    ("simultaneous", {"debate": {"protocol": "simultaneous"}}, 2),
    ("conversation", {"debate": {"protocol": "conversation", "turns": 30, "conversation": {
        "recent_messages": 5, "summary_every": 5, "summary_scope": "per-agent"}}}, None),
    ("chunked summaries", {"debate": {"summarization": {"threshold": 200}, "context": {
        "max_context_tokens": 2000, "reserve_output_tokens": 300}}}, 3),
    ("rule-based, carried", {"debate": {"summarization": {"method": "rule-based", "threshold": 500},
                                        "carry_refinements": True}}, 3),
])
async def test_every_protocol_adds_up(tmp_path: Path, name: str, config: dict[str, Any], rounds: int | None) -> None:
    """Whatever the shape: unique ids, children inside their parents, usage counted once, the
    same spans after the fact, and (content on) every call's messages."""
    traced = Traced(content=True)

    def hook(session: DebateSession) -> None:
        session.orchestrator.clarifier = _answer_yes  # read when the clarify phase starts
        traced(session)

    state, folder = await run_debate(tmp_path, PROBLEM, config, rounds=rounds, before_run=hook)
    assert state.status == "completed"
    spans = traced.spans()
    by_id = {s.context.span_id: s for s in spans}
    assert len(by_id) == len(spans) and len([s for s in spans if s.parent is None]) == 1
    for s in spans:
        if s.parent is not None:
            p = by_id[s.parent.span_id]
            assert p.start_time <= s.start_time <= s.end_time <= p.end_time, (s.name, p.name)
    assert sum(s.attributes.get("gen_ai.usage.input_tokens", 0) for s in spans) == state.totals.prompt_tokens
    assert sum(s.attributes.get("gen_ai.usage.output_tokens", 0) for s in spans) == state.totals.completion_tokens
    calls = [s for s in spans if s.kind == SpanKind.CLIENT]
    assert calls and all(json.loads(s.attributes["gen_ai.input.messages"]) for s in calls)
    if name == "chunked summaries":
        assert any(s.attributes.get("moot.summary.calls", 0) > 1 for s in spans)
    after = build_spans(read_events(folder.events_path), content=True)
    assert sorted(map(record_key, after), key=repr) == sorted(map(key, spans), key=repr)


# ---------------------------------------------------------------- content


async def test_content_off_writes_no_prompt_or_completion_text(tmp_path: Path) -> None:
    traced = Traced()
    state, _ = await run_debate(tmp_path, f"{PROBLEM}; staging key {KEY}", before_run=traced)
    texts = list(every_text_value(traced.spans()))
    contents = [c.content for c in state.all_contributions()]
    assert texts
    for text in texts:
        assert "URL shortener" not in text and KEY not in text and "sk-***" not in text
        assert not any(c[:60] in text for c in contents)
    assert not any(k.startswith(("gen_ai.input", "gen_ai.output")) for s in traced.spans() for k in s.attributes)


async def test_content_on_is_present_and_masked(tmp_path: Path) -> None:
    traced = Traced(content=True)
    problem = f'{PROBLEM}; staging key {KEY}; header "Authorization: Bearer tok3n"; vault word {BARE_SECRET}'
    state, folder = await run_debate(tmp_path, problem, before_run=traced)
    spans = traced.spans()
    assert not any(KEY in t or "tok3n" in t for t in every_text_value(spans))
    calls = [s for s in spans if s.kind == SpanKind.CLIENT]
    for s in calls:
        messages = json.loads(s.attributes["gen_ai.input.messages"])
        assert messages[0]["role"] == "system" and messages[-1]["role"] == "user"
        assert messages[-1]["parts"][0]["type"] == "text"
        output = json.loads(s.attributes["gen_ai.output.messages"])
        assert output[0]["role"] == "assistant" and output[0]["parts"][0]["content"]
    first = calls[0]
    system = json.loads(first.attributes["gen_ai.input.messages"])[0]["parts"][0]["content"]  # the topic's place
    assert "URL shortener" in system and "staging key sk-***" in system and 'Bearer sk-***"' in system
    by_call = {s.attributes["moot.call_id"]: s for s in calls}
    for c in state.all_contributions():
        if c.carried_from:
            continue  # no call of its own: a refinement carried into the next round
        assert json.loads(by_call[c.metadata.call_id].attributes["gen_ai.output.messages"])[0]["parts"][0][
            "content"] == c.content
    # A configured secret that looks like no key is masked too (the secrets the engine holds).
    after = build_spans(read_events(folder.events_path), content=True, secrets=[BARE_SECRET])
    values = [v for s in after for v in s.attributes.values() if isinstance(v, str)]
    assert any("vault word sk-***" in v for v in values) and not any(BARE_SECRET in v for v in values)


# ---------------------------------------------------------------- resume


def _cut(source: DebateFolder, root: Path, keep: int) -> DebateFolder:
    """A copy of the debate whose log stops after `keep` events, as if the process was killed there."""
    lines = source.events_path.read_bytes().split(b"\n")[:-1]
    folder = DebateFolder(root / source.id)
    folder.path.mkdir(parents=True)
    folder.events_path.write_bytes(b"".join(line + b"\n" for line in lines[:keep]))
    return folder


async def test_a_resumed_debate_is_one_trace(tmp_path: Path) -> None:
    """Killed at several moments (mid-call, between phases, in the judge's summary) and resumed
    with tracing: one trace id; what the first run sent plus what the resumed run sends is
    exactly the trace built from the whole log, each span once; the killed run's open work
    is closed, as errors, at its last event."""
    _, source = await run_debate(tmp_path / "src", PROBLEM, rounds=2, roles=["architect", "kiss"])
    events = list(read_events(source.events_path))
    trace_id = next(e for e in events if isinstance(e, DebateStarted)).trace_id
    cuts = {
        "mid-critique": next(i for i, e in enumerate(events) if e.type == "call_started" and e.view.phase == "critique"),
        "between rounds": next(i for i, e in enumerate(events) if e.type == "round_started" and e.round == 2) - 1,
        "mid-summary": next(i for i, e in enumerate(events) if e.type == "call_started" and e.view.phase == "summarize"
                            and e.view.agent_id == "judge"),
    }
    for name, k in cuts.items():
        root = tmp_path / name.replace(" ", "-")
        folder = _cut(source, root, k + 1)
        first: list[SpanRecord] = []  # what the killed run had sent: every span its events closed
        builder = TraceBuilder(first.append)
        for line in folder.events_path.read_bytes().split(b"\n")[:-1]:
            builder.on_event(parse_event(line))
        traced = Traced()
        session = resume_session(source.id, SessionOptions(state_dir=root, demo_delay=0))
        traced(session)
        state = await session.run()
        assert state.status == "completed"
        second = traced.spans()
        assert {hexid(s.context.trace_id, 32) for s in second} == {trace_id}, name
        sent = sorted([*map(record_key, first), *map(key, second)], key=repr)
        whole = sorted(map(record_key, build_spans(read_events(folder.events_path))), key=repr)
        assert sent == whole, name
        roots = [s for s in second if s.parent is None]
        assert sorted((s.attributes["moot.run"], s.status.description) for s in roots) == [(1, RESUME_GAP), (2, None)]
        cut_calls = [s for s in second if s.kind == SpanKind.CLIENT and s.status.description == RESUME_GAP]
        assert len(cut_calls) == (0 if name == "between rounds" else 1), name


async def test_a_stopped_then_resumed_debate_keeps_its_trace_id(tmp_path: Path) -> None:
    seen = 0
    traced = Traced()

    def stop_after_two(session: DebateSession) -> None:
        traced(session)

        def on(event: Any) -> None:
            nonlocal seen
            if isinstance(event, ContributionAdded):
                seen += 1
                if seen == 2:
                    session.orchestrator.stop()
        session.bus.listen(on)

    state, folder = await run_debate(tmp_path, PROBLEM, before_run=stop_after_two)
    assert state.status == "stopped"
    first = traced.spans()
    again = Traced()
    session = resume_session(folder.id, SessionOptions(state_dir=tmp_path / "debates", demo_delay=0))
    again(session)
    assert (await session.run()).status == "completed"
    second = again.spans()
    assert len({s.context.trace_id for s in [*first, *second]}) == 1
    assert sorted([*map(key, first), *map(key, second)], key=repr) == sorted(
        map(record_key, build_spans(read_events(folder.events_path))), key=repr)
    [stopped] = [s for s in first if s.parent is None]
    assert stopped.attributes["moot.status"] == "stopped" and stopped.status.status_code == StatusCode.UNSET
    [resumed] = [s for s in second if s.parent is None]
    assert resumed.attributes["moot.resumed"] is True and resumed.attributes["moot.run"] == 2


# ---------------------------------------------------------------- moot trace


def _b64_ids(value: Any) -> Any:
    """OTLP JSON writes ids in hex; protobuf's JSON mapping reads bytes as base64."""
    if isinstance(value, dict):
        return {k: base64.b64encode(bytes.fromhex(v)).decode() if k in ("traceId", "spanId", "parentSpanId")
                else _b64_ids(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_b64_ids(v) for v in value]
    return value


async def test_moot_trace_writes_otlp_json(tmp_path: Path) -> None:
    _, folder = await run_debate(tmp_path, PROBLEM, rounds=1, roles=["architect", "kiss"])
    out = tmp_path / "trace.json"
    done = cli("trace", folder.id, "--state-dir", str(tmp_path / "debates"), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == f"trace written to {out}"
    data = json.loads(out.read_text())
    [rs] = data["resourceSpans"]
    assert {"key": "service.name", "value": {"stringValue": "moot"}} in rs["resource"]["attributes"]
    [ss] = rs["scopeSpans"]
    assert ss["scope"]["name"] == "moot"
    spans = ss["spans"]
    ids = {s["spanId"] for s in spans}
    assert len(ids) == len(spans) and len({s["traceId"] for s in spans}) == 1
    for s in spans:
        assert len(s["traceId"]) == 32 and len(s["spanId"]) == 16 and int(s["traceId"], 16) and int(s["spanId"], 16)
        assert s["name"] and s["kind"] in (1, 3)
        assert int(s["startTimeUnixNano"]) <= int(s["endTimeUnixNano"])
        if "parentSpanId" in s:
            assert s["parentSpanId"] in ids
    assert [s["name"] for s in spans if "parentSpanId" not in s] == ["debate"]
    # It is a valid ExportTraceServiceRequest, equal to what the official OTLP encoder makes of these spans.
    message = json_format.ParseDict(_b64_ids(data), ExportTraceServiceRequest())
    records = sorted(build_spans(read_events(folder.events_path)), key=lambda s: (s.start_ns, s.end_ns))
    official = encode_spans([to_readable(s, Resource({"service.name": "moot", "service.version": __version__}),
                                         InstrumentationScope("moot", __version__)) for s in records])
    for span in official.resource_spans[0].scope_spans[0].spans:
        span.flags = 0  # the SDK's has-remote-parent bits, which the JSON leaves out
    assert message == official
    assert otlp_request(records) == data
    # stdout without -o; an unknown debate is one line.
    assert json.loads(cli("trace", folder.id, "--state-dir", str(tmp_path / "debates")).stdout) == data
    missing = cli("trace", "nope", "--state-dir", str(tmp_path / "debates"))
    assert missing.returncode != 0 and len(missing.stderr.strip().splitlines()) == 1


class _Collector(http.server.BaseHTTPRequestHandler):
    """A minimal OTLP/HTTP receiver: keeps every span posted to /v1/traces. Like Arize Phoenix,
    it takes protobuf only and answers anything else with HTTP 415."""

    received: list[Any] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_response(415)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                type(self).received.extend(ss.spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_trace_flag_sends_the_debate_to_a_collector(tmp_path: Path) -> None:
    _Collector.received = []
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{httpd.server_address[1]}"
        done = moot("run", PROBLEM, "--headless", "--trace", "-r", "1", "-a", "kiss", "--state-dir", str(tmp_path),
                    env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint})
    finally:
        httpd.shutdown()
    assert done.returncode == 0, done.stderr
    [folder] = [DebateFolder(p) for p in tmp_path.iterdir()]
    spans = build_spans(read_events(folder.events_path))
    trace_id = spans[0].trace_id
    assert done.stderr.strip().splitlines()[-1] == f"trace {trace_id} sent to {endpoint}/v1/traces"
    assert sorted(s.span_id.hex() for s in _Collector.received) == sorted(s.span_id for s in spans)
    assert folder.load().config["debate"]["trace"] is True  # so that `moot resume` traces it too


def _post(endpoint: str, body: bytes, content_type: str) -> int:
    request = urllib.request.Request(f"{endpoint}/v1/traces", data=body, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


async def test_moot_trace_writes_otlp_protobuf_that_a_protobuf_only_receiver_takes(tmp_path: Path) -> None:
    _, folder = await run_debate(tmp_path, PROBLEM, rounds=1, roles=["architect", "kiss"])
    state = ["--state-dir", str(tmp_path / "debates")]
    assert cli("trace", folder.id, *state, "-o", str(tmp_path / "trace.json")).returncode == 0
    as_json = json.loads((tmp_path / "trace.json").read_text())
    expected = json_format.ParseDict(_b64_ids(as_json), ExportTraceServiceRequest())
    assert len(expected.resource_spans[0].scope_spans[0].spans) > 3
    for name, extra in (("trace.pb", []), ("spans.bin", ["--format", "protobuf"])):
        done = cli("trace", folder.id, *state, "-o", str(tmp_path / name), *extra)
        assert done.returncode == 0 and done.stderr == f"trace written to {tmp_path / name}\n", done.stderr
        message = ExportTraceServiceRequest()
        message.ParseFromString((tmp_path / name).read_bytes())
        assert message == expected  # the same spans as the JSON, field for field
    piped = subprocess.run([sys.executable, "-m", "moot", "trace", folder.id, *state, "--format", "protobuf"],
                           capture_output=True, timeout=120)
    assert piped.returncode == 0 and piped.stdout == (tmp_path / "trace.pb").read_bytes()
    refused = cli("trace", folder.id, *state, "--format", "protobuf")  # stdout here is text, as a terminal is
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == "moot: a protobuf trace is binary: write it to a file (-o trace.pb) or pipe it\n"
    _Collector.received = []
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{httpd.server_address[1]}"
        assert _post(endpoint, (tmp_path / "trace.json").read_bytes(), "application/json") == 415
        assert _post(endpoint, (tmp_path / "trace.pb").read_bytes(), "application/x-protobuf") == 200
    finally:
        httpd.shutdown()
    assert sorted(s.span_id.hex() for s in _Collector.received) == sorted(s["spanId"] for s in
                                                                         as_json["resourceSpans"][0]["scopeSpans"][0]["spans"])


def test_unreachable_collector_is_one_line_and_the_debate_still_succeeds(tmp_path: Path) -> None:
    done = moot("run", PROBLEM, "--headless", "-r", "1", "-a", "kiss", "--state-dir", str(tmp_path),
                env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_TIMEOUT": "1"})
    assert done.returncode == 0 and done.stdout.strip()
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("moot: the trace was not sent to http://127.0.0.1:9/v1/traces (")
    assert "moot trace " in last and "Traceback" not in done.stderr


def test_no_collector_is_said_once_and_nothing_of_the_exporters_retries(tmp_path: Path) -> None:
    """With the exporter's own timeout (10 s) the retries of a refused connection held the process
    about 8 s after "saved"; now the first refusal ends the wait (timing: bench/trace_exit.py)."""
    done = moot("run", PROBLEM, "--headless", "--trace", "-r", "1", "-a", "kiss", "--state-dir", str(tmp_path),
                env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert done.returncode == 0 and done.stdout.strip()
    lines = done.stderr.strip().splitlines()
    assert lines[-2].startswith("saved in ")
    assert lines[-1].startswith("moot: the trace was not sent to http://127.0.0.1:9/v1/traces (connection refused); "
                                "write it to a file with `moot trace ")
    assert done.stderr.count("trace was not sent") == 1
    assert "retrying" not in done.stderr and "Failed to export" not in done.stderr


def test_a_collector_that_never_answers_does_not_hold_the_process(tmp_path: Path) -> None:
    """A collector that accepts the connection and never answers, with a 600 s exporter timeout:
    the process still ends (a few seconds after the debate), saying the collector did not answer.
    Before, it waited out the whole timeout and then claimed the trace was sent."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])  # and never read or answer
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        done = moot("run", PROBLEM, "--headless", "--trace", "-r", "1", "-a", "kiss", "--state-dir", str(tmp_path),
                    env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TIMEOUT": "600"}, timeout=120)
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        listener.close()
    assert done.returncode == 0 and done.stdout.strip()
    assert held, "the exporter never connected"
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"moot: the trace was not sent to {endpoint}/v1/traces (the collector did not answer "
                           "within 3 s); write it to a file with `moot trace ")


# ---------------------------------------------------------------- without the extra


@pytest.fixture
def no_otel(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if `moot[otel]` were not installed: every opentelemetry import fails."""
    for name in [m for m in sys.modules if m == "opentelemetry" or m.startswith("opentelemetry.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)


def test_trace_without_the_extra_is_one_line(tmp_path: Path, no_otel: None,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    state_dir = tmp_path / "debates"
    assert main(["run", PROBLEM, "--headless", "--trace", "--state-dir", str(state_dir)]) == 4
    assert capsys.readouterr().err == f"moot: {INSTALL_HINT}\n"
    assert not state_dir.exists()  # refused before any debate folder was made
    config = tmp_path / "moot.toml"
    config.write_text("[debate]\ntrace = true\n")
    assert main(["run", PROBLEM, "--headless", "-c", str(config), "--state-dir", str(state_dir)]) == 4
    assert capsys.readouterr().err == f"moot: {INSTALL_HINT}\n"


async def test_a_protobuf_trace_without_the_extra_is_one_line_and_json_still_works(tmp_path: Path,
                                                                                   no_otel: None) -> None:
    _, folder = await run_debate(tmp_path, PROBLEM, rounds=1, roles=["kiss"])
    state = ["--state-dir", str(tmp_path / "debates")]
    refused = cli("trace", folder.id, *state, "-o", str(tmp_path / "trace.pb"))
    assert refused.returncode == 4 and not (tmp_path / "trace.pb").exists()
    assert refused.stderr == "moot: writing OTLP protobuf needs the OpenTelemetry proto package: " \
                             "pip install 'moot[otel]'\n"
    assert cli("trace", folder.id, *state, "-o", str(tmp_path / "trace.json")).returncode == 0


def test_without_the_extra_env_and_saved_tracing_only_note_it(tmp_path: Path, no_otel: None,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The standard OTEL env, or a debate saved with tracing, do not stop moot from running."""
    state_dir = tmp_path / "debates"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    assert main(["run", PROBLEM, "--headless", "-r", "1", "-a", "kiss", "--state-dir", str(state_dir)]) == 0
    err = capsys.readouterr().err
    assert f"moot: OTEL_EXPORTER_OTLP_ENDPOINT is set, but {INSTALL_HINT}; running without a trace\n" in err
    [debate] = state_dir.iterdir()
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
    state = DebateFolder(debate).load()
    assert state.status == "completed"
    assert main(["resume", debate.name, "--headless", "--trace", "--state-dir", str(state_dir)]) == 4
    assert capsys.readouterr().err == f"moot: {INSTALL_HINT}\n"


def test_moot_never_imports_opentelemetry_when_tracing_is_off(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from moot.cli import main\n"
        f"rc = main(['run', 'Design a cache', '--headless', '-r', '1', '-a', 'kiss', '--state-dir', {str(tmp_path)!r}])\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'opentelemetry')\n"
        "print(rc, loaded)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k not in ("OPENAI_API_KEY",
                                                                                           "OPENROUTER_API_KEY")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stderr

"""Live tracing: a running debate's spans sent to an OpenTelemetry collector as they finish.

Only this module touches the OpenTelemetry SDK, and only inside the functions that send
spans, so that moot without the `otel` extra (or with tracing off) never imports it. The
spans themselves come from `moot.core.observe.tracing.TraceBuilder`, listening on the event bus;
each finished span becomes an SDK `ReadableSpan` handed to a span processor (a batch
processor with the OTLP/HTTP exporter, configured by the standard `OTEL_EXPORTER_OTLP_*`
environment; tests pass the SDK's in-memory exporter).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..events import Event
from ..safety.secrets import known_secrets, one_line, redact
from ..storage.log import read_events
from ..version import VERSION as __version__
from .spans import SpanRecord
from .tracing import TraceBuilder

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter, SpanProcessor

    from ..session import DebateSession

INSTALL_HINT = "tracing needs the otel extra: pip install 'moot[otel]'"
ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
DEFAULT_ENDPOINT = "http://localhost:4318/v1/traces"
BATCH_DELAY_MS = 1000
FLUSH_TIMEOUT_S = 3.0
"""How long the end of a run waits for the collector to take the last spans. The exporter retries
a collector that refuses the connection for up to its timeout (10 s), which held the process
about 8 s after "saved" when none was running; one that accepts and never answers held it for
the whole timeout."""

log = logging.getLogger(__name__)


def env_endpoint(env: Mapping[str, str] | None = None) -> str | None:
    """The collector the standard environment names (None: none), unless `OTEL_SDK_DISABLED` is true."""
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    traces = env.get(ENDPOINT_VARS[0], "").strip()
    if traces:
        return traces
    base = env.get(ENDPOINT_VARS[1], "").strip()
    return base.rstrip("/") + "/v1/traces" if base else None


def endpoint_label(env: Mapping[str, str] | None = None) -> str:
    """Where spans go, for a message (credentials in the URL masked)."""
    return redact(env_endpoint(env) or DEFAULT_ENDPOINT)


def otel_available() -> bool:
    """Are the SDK and the OTLP/HTTP exporter installed? (Imports them: call only when tracing.)"""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
        import opentelemetry.sdk.trace  # noqa: F401
    except Exception:  # noqa: BLE001 - missing, or installed broken (a protobuf mismatch): install it again
        return False
    return True


def require_otel() -> None:
    """ConfigError (one line, exit 4) when tracing was asked for and the extra is missing."""
    if not otel_available():
        raise ConfigError(INSTALL_HINT)


def wants_tracing(asked: bool, *, saved: bool = False) -> bool:
    """Trace this run? `asked` (`--trace`, or `debate.trace` in the config file given) needs the
    extra: without it, a ConfigError saying how to install it. A debate saved with tracing on
    (`saved`), or the standard OTEL_EXPORTER_OTLP_ENDPOINT, only notes on stderr that the extra
    is missing, and the debate runs as it would without them."""
    if asked:
        require_otel()
        return True
    why = "the debate was saved with debate.trace = true" if saved else (
        "OTEL_EXPORTER_OTLP_ENDPOINT is set" if env_endpoint() is not None else None)
    if why is None:
        return False
    if otel_available():
        return True
    print(f"moot: {why}, but {INSTALL_HINT}; running without a trace", file=sys.stderr)
    return False


@contextmanager
def traced(session: DebateSession, on: bool) -> Iterator[None]:
    """Send the session's trace while the body runs it (nothing when not `on`); then one line on
    stderr: the trace id and where it went, or why it did not and how to write it to a file."""
    if not on:
        yield
        return
    from ..storage.state_dir import default_state_dir

    root = session.folder.path.parent
    flag = "" if root.resolve() == default_state_dir().resolve() else f" --state-dir {root}"
    hint = f"write it to a file with `moot trace {session.folder.id}{flag} -o trace.json`"
    try:
        tracer = start_tracing(session)
    except Exception as exc:  # noqa: BLE001 - a bad OTEL_* setting must not cost the debate
        print(f"moot: tracing could not start ({one_line(f'{type(exc).__name__}: {exc}', 300)}); running "
              f"without it; {hint}", file=sys.stderr)
        yield
        return
    try:
        yield
    finally:
        problem = tracer.shutdown()
        where = endpoint_label()
        if problem is None:
            print(f"trace {tracer.trace_id} sent to {where}", file=sys.stderr)
        else:
            print(f"moot: the trace was not sent to {where} ({one_line(problem, 300, tracer.builder.secrets)}); "
                  f"{hint}", file=sys.stderr)


class _ExportErrors(logging.Handler):
    """Keeps the exporter's complaints (a collector that is down) for one line at the end,
    instead of log records on a terminal the TUI is drawing."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.complained = threading.Event()
        """Set at each complaint: the end of a run stops waiting for a collector at its first one."""

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.messages) < 20:
            self.messages.append(record.getMessage() or record.levelname)
        self.complained.set()

    @property
    def first(self) -> str | None:
        """The clearest cause: a socket error if one was seen ("connection refused"), else the first line."""
        for text in self.messages:
            errno = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
            if errno:
                return errno.group(1).strip().lower()
        return self.messages[0].splitlines()[0][:200] if self.messages else None


class LiveTracer:
    """The event-bus listener that turns a running debate into spans and sends them."""

    def __init__(self, processor: SpanProcessor, *, content: bool, secrets: list[str],
                 abort: Callable[[], None] | None = None) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        self.processor = processor
        self.abort = abort
        """Stops the exporter's retries (its `shutdown`), for a flush that outlives FLUSH_TIMEOUT_S."""
        self.builder = TraceBuilder(self._send, content=content, secrets=secrets)
        attrs: dict[str, Any] = {"service.version": __version__}
        if not os.environ.get("OTEL_SERVICE_NAME") and "service.name" not in os.environ.get(
                "OTEL_RESOURCE_ATTRIBUTES", ""):
            attrs["service.name"] = "moot"
        self.resource = Resource.create(attrs)
        self.scope = InstrumentationScope("moot", __version__)
        self.sent = 0
        self.failure: str | None = None
        self._errors = _ExportErrors()
        self._otel_log = logging.getLogger("opentelemetry")
        self._propagate = self._otel_log.propagate
        self._otel_log.addHandler(self._errors)
        self._otel_log.propagate = False

    @property
    def trace_id(self) -> str:
        return self.builder.trace_id

    def replay(self, events: list[Event] | Any) -> None:
        """Fold what an earlier run recorded, sending nothing (that run sent it)."""
        self.builder.quiet = True
        try:
            for event in events:
                self.builder.on_event(event)
        finally:
            self.builder.quiet = False

    def on_event(self, event: Event) -> None:
        if self.failure is not None:
            return
        try:
            self.builder.on_event(event)
        except Exception as exc:  # noqa: BLE001 - a tracing bug must never stop the debate
            self.failure = f"{type(exc).__name__}: {exc}"
            log.debug("tracing stopped", exc_info=True)

    def _send(self, span: SpanRecord) -> None:
        self.processor.on_end(to_readable(span, self.resource, self.scope))
        self.sent += 1

    def shutdown(self, timeout: float = FLUSH_TIMEOUT_S) -> str | None:
        """Flush what is pending, waiting at most `timeout` seconds and no longer than the exporter's
        first complaint (a refused connection, an error status): then it is told to stop retrying, and
        given one more second. The first export error, if any."""
        done = threading.Event()
        self._errors.complained.clear()  # what the run's own batches met is already in the messages
        raised: list[BaseException] = []

        def flush() -> None:
            try:
                self.processor.shutdown()
            except Exception as exc:  # noqa: BLE001 - reported as the trace's problem, never raised
                raised.append(exc)
            finally:
                done.set()

        threading.Thread(target=flush, name="moot-trace-flush", daemon=True).start()
        deadline = time.monotonic() + timeout
        while not done.wait(0.02) and not self._errors.complained.is_set() and time.monotonic() < deadline:
            pass
        if not done.is_set() and self.abort is not None:
            self.abort()  # a collector that refused the last batch is not retried for seconds more
            done.wait(1.0)
        if done.is_set():  # else the exporter may still log: keep its records off the terminal
            self._otel_log.removeHandler(self._errors)
            self._otel_log.propagate = self._propagate
        if self.failure is not None:
            return f"tracing stopped: {self.failure}"
        if not done.is_set():
            return f"the collector did not answer within {timeout:g} s"
        if raised:
            return f"{type(raised[0]).__name__}: {raised[0]}"
        return self._errors.first


def to_readable(span: SpanRecord, resource: Any, scope: Any) -> ReadableSpan:
    """A finished SDK span with the record's ids, parent, times, attributes, events and status."""
    from opentelemetry.sdk.trace import Event as SdkEvent
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

    trace_id = int(span.trace_id, 16)
    flags = TraceFlags(TraceFlags.SAMPLED)
    parent = SpanContext(trace_id, int(span.parent_id, 16), False, flags) if span.parent_id else None
    status = Status(StatusCode.ERROR, span.error) if span.error is not None else Status(StatusCode.UNSET)
    return ReadableSpan(
        name=span.name,
        context=SpanContext(trace_id, int(span.span_id, 16), False, flags),
        parent=parent,
        resource=resource,
        attributes=span.attributes,
        events=[SdkEvent(e.name, e.attributes, e.time_ns) for e in span.events],
        kind=SpanKind.CLIENT if span.kind == "client" else SpanKind.INTERNAL,
        status=status,
        start_time=span.start_ns,
        end_time=span.end_ns,
        instrumentation_scope=scope,
    )


def start_tracing(session: DebateSession, *, content: bool | None = None,
                  exporter: SpanExporter | None = None) -> LiveTracer:
    """Listen on the session's bus and send its spans: to `exporter` as each ends (tests), else in
    batches to the OTLP/HTTP collector the environment names (default localhost:4318).

    A resumed debate first replays its log, so the trace goes on with the same id and the spans
    an earlier run left open (a killed process) are closed and sent now."""
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    processor: SpanProcessor
    abort: Callable[[], None] | None = None
    if exporter is not None:
        processor = SimpleSpanProcessor(exporter)
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # Endpoint, headers, timeout: OTEL_EXPORTER_OTLP_*. A batch every second, not the SDK's five
        # (unless OTEL_BSP_SCHEDULE_DELAY says): a process killed with SIGKILL loses less of its trace.
        delay = None if os.environ.get("OTEL_BSP_SCHEDULE_DELAY") else BATCH_DELAY_MS
        otlp = OTLPSpanExporter()
        processor = BatchSpanProcessor(otlp, schedule_delay_millis=delay)
        abort = otlp.shutdown
    settings = session.orchestrator.config.debate
    tracer = LiveTracer(processor, content=settings.trace_content if content is None else content,
                        secrets=[*session.providers.secrets, *known_secrets()], abort=abort)
    if session.orchestrator.resuming and session.folder.events_path.exists():
        tracer.replay(read_events(session.folder.events_path))
    session.bus.listen(tracer.on_event)
    return tracer


__all__ = ["INSTALL_HINT", "LiveTracer", "endpoint_label", "env_endpoint", "otel_available", "require_otel",
           "start_tracing", "to_readable", "traced", "wants_tracing"]

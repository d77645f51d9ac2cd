"""`moot report` and `moot trace`: a saved debate written out from its folder alone (no provider,
no network), as a markdown report or as an OpenTelemetry trace (OTLP JSON or protobuf)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from moot.core.errors import ExitCode, InputError

from .flags import add_debate_id, add_state_dir, completes, deliver, open_debate, positive_int

if TYPE_CHECKING:
    from .flags import Subcommands

PROTOBUF_SUFFIXES = (".pb", ".binpb", ".protobuf")
"""`-o` names that mean binary protobuf when `--format` is not given."""


def register(sub: Subcommands) -> None:
    rep = sub.add_parser("report", help="write a markdown (or --html) report of a debate")
    add_debate_id(rep)
    completes(rep.add_argument("-o", "--output", help="write to FILE instead of stdout"), "file")
    rep.add_argument("--verbose", action="store_true", help="add latency and tokens to each contribution")
    rep.add_argument("--html", action="store_true",
                     help="one self-contained HTML file (no scripts, no fetches), with what each agent saw")
    rep.add_argument("--max-calls", type=positive_int, metavar="N",
                     help="--html: keep each agent's latest N calls in its section (default: every call)")
    add_state_dir(rep)
    rep.set_defaults(handler=cmd_report)

    tr = sub.add_parser("trace", help="write a debate's OpenTelemetry trace as OTLP JSON or protobuf (from its event log)")
    add_debate_id(tr)
    completes(tr.add_argument("-o", "--output", help="write to FILE instead of stdout (FILE.pb: protobuf)"), "file")
    tr.add_argument("--format", choices=("json", "protobuf"),
                    help="OTLP JSON or binary protobuf (default: protobuf for -o *.pb, else JSON)")
    tr.add_argument("--content", action="store_true",
                    help="include prompt and completion text, masked (default: as debate.trace_content)")
    add_state_dir(tr)
    tr.set_defaults(handler=cmd_trace)


def cmd_report(args: argparse.Namespace) -> int:
    from moot.core.experiments import experiments
    from moot.core.report.markdown import report_chunks

    folder = open_debate(args)
    state = folder.load()
    if args.html:
        from moot.core.context.log_index import index_for_records
        from moot.core.report.html import html_chunks
        from moot.core.safety.secrets import known_secrets

        # Every step read back from the log a step at a time, and of the calls shown only what
        # they saw (a long debate's state holds its last steps; the page is never held whole).
        pieces = html_chunks(state, folder.steps(), known_secrets(), args.max_calls,
                             lambda records: index_for_records(folder.events_path, state, records),
                             experiments(folder))
        deliver(pieces, args.output, "report")
        return ExitCode.OK
    if args.max_calls is not None:
        raise InputError("--max-calls goes with --html")
    deliver(report_chunks(state, verbose=bool(args.verbose), steps=folder.steps(), experiments=experiments(folder)),
            args.output, "report")
    return ExitCode.OK


def cmd_trace(args: argparse.Namespace) -> int:
    from moot.core.observe.otlp import export_trace, to_protobuf
    from moot.core.safety.sanitize import json_safe
    from moot.core.safety.secrets import known_secrets
    from moot.core.storage.files import write_atomic

    output: str | None = args.output
    protobuf = args.format == "protobuf" or (args.format is None and bool(output) and
                                            Path(output or "").suffix.lower() in PROTOBUF_SUFFIXES)
    binary_out = getattr(sys.stdout, "buffer", None)
    if protobuf and not output and (binary_out is None or sys.stdout.isatty()):
        raise InputError("a protobuf trace is binary: write it to a file (-o trace.pb) or pipe it")
    text = json_safe(export_trace(open_debate(args), content=True if args.content else None, secrets=known_secrets()))
    if not protobuf:
        deliver(text, output, "trace")
        return ExitCode.OK
    data = to_protobuf(text)
    if output:
        try:
            write_atomic(Path(output), data)
        except OSError as exc:
            raise InputError(f"cannot write {output}: {exc.strerror or exc}") from None
        print(f"trace written to {output}", file=sys.stderr)
    elif binary_out is not None:
        sys.stdout.flush()
        binary_out.write(data)
        binary_out.flush()
    return ExitCode.OK

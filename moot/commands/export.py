"""`moot report` and `moot trace`: a saved debate written out from its folder alone (no provider,
no network), as a markdown report or as an OpenTelemetry trace (OTLP JSON)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from moot.core.errors import ExitCode, InputError

from .flags import add_debate_id, add_state_dir, completes, deliver, open_debate, positive_int

if TYPE_CHECKING:
    from .flags import Subcommands


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

    tr = sub.add_parser("trace", help="write a debate's OpenTelemetry trace as OTLP JSON (from its event log)")
    add_debate_id(tr)
    completes(tr.add_argument("-o", "--output", help="write to FILE instead of stdout"), "file")
    tr.add_argument("--content", action="store_true",
                    help="include prompt and completion text, masked (default: as debate.trace_content)")
    add_state_dir(tr)
    tr.set_defaults(handler=cmd_trace)


def cmd_report(args: argparse.Namespace) -> int:
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
                             lambda records: index_for_records(folder.events_path, state, records))
        deliver(pieces, args.output, "report")
        return ExitCode.OK
    if args.max_calls is not None:
        raise InputError("--max-calls goes with --html")
    deliver(report_chunks(state, verbose=bool(args.verbose), steps=folder.steps()), args.output, "report")
    return ExitCode.OK


def cmd_trace(args: argparse.Namespace) -> int:
    from moot.core.observe.otlp import export_trace
    from moot.core.safety.sanitize import json_safe
    from moot.core.safety.secrets import known_secrets

    text = export_trace(open_debate(args), content=True if args.content else None, secrets=known_secrets())
    deliver(json_safe(text), args.output, "trace")
    return ExitCode.OK

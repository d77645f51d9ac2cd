"""`moot eval`: evaluator agents score a debate's final solution (markdown, JSON or CSV)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from moot.core.errors import ExitCode, InputError

from .flags import add_debate_id, add_provider_args, add_state_dir, completes, deliver, open_debate

if TYPE_CHECKING:
    from .flags import Subcommands


def register(sub: Subcommands) -> None:
    ev = sub.add_parser("eval", help="score a debate's final solution with evaluator agents")
    add_debate_id(ev)
    completes(ev.add_argument("-c", "--config", help="evaluator config (JSON or TOML); default: the debate's own "
                                                     "provider and models"), "file")
    completes(ev.add_argument("-o", "--output", help="write results: .md table, .json or .csv by extension"), "file")
    add_provider_args(ev)
    add_state_dir(ev)
    ev.set_defaults(handler=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    from moot.core.errors import ProviderError
    from moot.core.evaluate import (
        FORMATS,
        default_evaluators,
        load_eval_config,
        render_csv,
        render_json,
        render_markdown,
        run_evaluators,
    )
    from moot.core.models.provider_kinds import kind_of
    from moot.core.safety.sanitize import one_line_safe

    fmt = "md"
    if args.output:
        suffix = Path(args.output).suffix.lower()
        if suffix not in FORMATS:
            raise InputError(f"unknown output format {suffix or '(none)'!r} for {args.output}; use .md, .json or .csv")
        fmt = FORMATS[suffix]
    flags = {"provider": args.provider, "model": args.model, "base_url": args.base_url}
    evaluators = load_eval_config(Path(args.config), **flags) if args.config else None
    state = open_debate(args).load()
    if state.final_solution is None:
        raise InputError(f"debate {state.id} has no final solution (status {state.status}); nothing to evaluate")
    if evaluators is None:
        evaluators = default_evaluators(state, **flags)
        on = ", ".join(f"{ev.id} {ev.provider}:{one_line_safe(str(ev.model), 80)}" for ev in evaluators)
        print(f"moot: no -c FILE: evaluating with the debate's own provider ({on})", file=sys.stderr)
    demo = [ev.id for ev in evaluators if ev.provider and kind_of(ev.provider).scripted]
    if demo:
        verb = "uses" if len(demo) == 1 else "use"
        print(f"moot: {', '.join(demo)} {verb} the offline DEMO provider (scripted scores)", file=sys.stderr)
    import asyncio

    results = asyncio.run(run_evaluators(state, evaluators, demo_delay=args.demo_delay))
    failed = [r for r in results if r.error]
    if len(failed) == len(results):
        raise ProviderError(f"all {len(results)} evaluators failed; {failed[0].id}: {failed[0].error}")
    for r in failed:
        print(f"moot: evaluator {r.id} failed: {one_line_safe(r.error or '', 400)}", file=sys.stderr)
    text = (render_json(state, results) if fmt == "json" else render_csv(results) if fmt == "csv"
            else render_markdown(state, results))
    deliver(text, args.output, "evaluation")
    return ExitCode.OK

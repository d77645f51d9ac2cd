"""`moot bench DATASET`: a data set through protocols, accuracy and cost side by side.

The parser and the command; the work is library calls into `moot.core.bench`. In a terminal a
live dashboard (`moot.tui.bench`), headless a progress line per question on stderr and the
table on stdout; `-o` writes `.json`, `.md` (with an SVG plot beside it) or `.csv`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from moot.core.errors import ExitCode, InputError
from moot.core.models.terms import PROTOCOL_NAMES, ROLES, ProtocolName

from .flags import add_provider_args, add_state_dir, bounded, completes, known_roles, overrides, positive_int, write_file

if TYPE_CHECKING:
    from moot.core.bench.progress import BenchProgress
    from moot.core.bench.results import ResultRow
    from moot.core.bench.runner import Job
    from moot.core.models.config import MootConfig

    from .flags import Subcommands

DEFAULT_PROTOCOLS = "single,vote,simultaneous"
BENCH_ROLES = ["generalist", "generalist", "generalist"]
"""Du et al.'s setting: three agents alike (with no -a, -c or ./moot.toml)."""
BENCH_ROUNDS = 2
MAX_REPEAT = 100


def register(sub: Subcommands) -> None:
    b = sub.add_parser("bench", help="run a data set through protocols: accuracy, tokens and cost side by side")
    completes(b.add_argument("dataset", help="a JSONL file of {id, question, answer[, choices]} or a generator: "
                                             "arithmetic:N[:terms=K][:seed=S]"), "file")
    b.add_argument("--protocols", default=DEFAULT_PROTOCOLS,
                   help=f"comma-separated, from {', '.join(PROTOCOL_NAMES)} (default {DEFAULT_PROTOCOLS})")
    completes(b.add_argument("-c", "--config", help="JSON or TOML config (default ./moot.toml when present)"), "file")
    # Unlike `run`, a role may repeat (Du et al.'s agents are alike): copies are named generalist-2, -3.
    b.add_argument("-a", "--agents", type=known_roles, help="comma-separated roles, a role may repeat (default: three "
                                                            f"generalists); {', '.join(ROLES)}")
    b.add_argument("-r", "--rounds", type=bounded("rounds"), help=f"rounds of the debates (default {BENCH_ROUNDS})")
    b.add_argument("--turns", type=bounded("turns"), help="turns of a conversation")
    b.add_argument("--samples", type=bounded("samples"), help="vote: answers per question (default: as many as the "
                                                              "first debate protocol makes calls: equal cost)")
    b.add_argument("--weight", choices=["plain", "confidence"],
                   help="vote, simultaneous, adaptive: weigh each answer by its stated confidence (default plain)")
    b.add_argument("--topology", choices=["full", "ring", "star"],
                   help="rounds, simultaneous, adaptive: whose answers each agent reads (default full)")
    b.add_argument("--limit", type=positive_int, help="only the first N questions")
    b.add_argument("--panel", metavar="MODELS", help="a mixed panel: comma-separated models, agent i gets model i "
                                                     "(without -a, -c: that many generalists); per-model accuracy "
                                                     "is reported beside the panel's")
    b.add_argument("--repeat", type=_repeat, default=1, metavar="K",
                   help="run each question K times with different seeds (each agent's seed + 10000 per run) "
                        "and report the spread between runs (default 1)")
    b.add_argument("--concurrency", type=positive_int, default=4, help="questions in flight at once (default 4)")
    b.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local asyncio (default) or Ray tasks (pip install 'moot[ray]'; RAY_ADDRESS for a cluster)")
    completes(b.add_argument("-o", "--output", help="write results: .json, .md (+ .svg plot) or .csv by extension"),
              "file")
    b.add_argument("--from", dest="from_point", metavar="POINT",
                   help="run each debate protocol again from this point (round:N, round:N:PHASE, turn:N) of the "
                        "question's saved debate, made by the same command without --from")
    b.add_argument("--headless", action="store_true", help="no dashboard: progress on stderr, table on stdout")
    b.add_argument("--theme", help="TUI theme")
    add_provider_args(b)
    add_state_dir(b)
    b.set_defaults(handler=cmd_bench)


def _repeat(text: str) -> int:
    v = positive_int(text)
    if v > MAX_REPEAT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_REPEAT}: {text!r}")
    return v


def _panel(text: str) -> list[str]:
    models = [m.strip() for m in text.split(",")]
    if not all(models):
        raise InputError(f"--panel {text!r} names an empty model; give comma-separated models, one per agent")
    return models


def _with_panel(base: MootConfig, models: list[str]) -> MootConfig:
    """Agent i on model i (the judge keeps its own)."""
    from moot.core.config import Overrides, build_config

    agents = base.active_agents
    if len(agents) != len(models):
        raise InputError(f"--panel names {len(models)} models for {len(agents)} agents; give one model per agent")
    data = base.model_dump(mode="json", exclude_none=True)
    active = [a for a in data["agents"] if a.get("enabled", True)]
    for agent, model in zip(active, models, strict=True):
        agent["model"] = model
    return build_config(data, Overrides(), source="--panel")


def _protocols(text: str) -> list[ProtocolName]:
    from moot.core.agents import did_you_mean

    names = [p.strip() for p in text.split(",") if p.strip()]
    for name in names:
        if name not in PROTOCOL_NAMES:
            raise InputError(f"unknown protocol {name!r}{did_you_mean(name, PROTOCOL_NAMES)}; "
                             f"expected some of {', '.join(PROTOCOL_NAMES)}")
    if not names:
        raise InputError("--protocols names none")
    return cast("list[ProtocolName]", list(dict.fromkeys(names)))


def _output_format(path: str | None) -> str | None:
    from moot.core.bench.output import FORMATS

    if path is None:
        return None
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise InputError(f"unknown output format {suffix or '(none)'!r} for {path}; use .json, .md or .csv")
    return FORMATS[suffix]


def cmd_bench(args: argparse.Namespace) -> int:
    import asyncio  # here, not at `import moot.cli`: every other command starts without it

    from moot.core.bench.datasets import load_dataset
    from moot.core.bench.executors import make_executor
    from moot.core.bench.output import render_csv, render_json, render_markdown, render_svg, render_text, summarize
    from moot.core.bench.progress import BenchProgress
    from moot.core.bench.runner import check_startable, finished_row, plan
    from moot.core.config import DEFAULT_CONFIG_NAME, load_config
    from moot.core.observe.headless import wants_tui
    from moot.core.storage.state_dir import default_state_dir

    fmt = _output_format(args.output)
    protocols = _protocols(args.protocols)
    if args.from_point is not None:
        from moot.core.storage.fork import parse_point

        point = parse_point(args.from_point)
        if point.kind == "summary":
            raise InputError("--from takes round:N, round:N:PHASE or turn:N (a summary's id differs per question)")
        args.from_point = point.label
    dataset = load_dataset(args.dataset)
    ov = overrides(args)
    own = args.config or Path(DEFAULT_CONFIG_NAME).is_file()
    panel = _panel(args.panel) if args.panel is not None else None
    if ov.roles is None and not own:
        ov.roles = ["generalist"] * len(panel) if panel else list(BENCH_ROLES)
    if ov.rounds is None and not own:
        ov.rounds = BENCH_ROUNDS
    base = load_config(args.config, ov)
    if panel:
        base = _with_panel(base, panel)
    state_dir = Path(args.state_dir) if args.state_dir else default_state_dir()
    tui = wants_tui(args.headless)
    the_plan = plan(dataset, protocols, base, state_dir=state_dir, limit=args.limit, samples=args.samples,
                    demo_delay=args.demo_delay if args.demo_delay is not None else (None if tui else 0.0),
                    from_point=args.from_point, repeat=args.repeat)
    asyncio.run(check_startable(the_plan.jobs[0]))
    demo = _uses_demo(the_plan.jobs[0].config)
    if demo and not args.provider:
        print("moot: no API key found (OPENAI_API_KEY / OPENROUTER_API_KEY); using the offline DEMO provider",
              file=sys.stderr)
    progress = BenchProgress(the_plan)
    todo = []
    for job in the_plan.jobs:  # finished on disk: read back, no request
        row = finished_row(job)
        if row is not None:
            progress.done(job, row)
        else:
            todo.append(job)
    executor = make_executor(args.executor, args.concurrency)
    if progress.finished:
        print(f"moot: {progress.finished} of {progress.total} already finished in {state_dir}; running the other "
              f"{len(todo)}", file=sys.stderr)
    if tui:
        from moot.tui.bench_app import run_bench_app

        code = run_bench_app(progress, executor, todo, state_dir=state_dir, demo=demo, theme=args.theme)
        if code:
            print(f"moot: interrupted; {progress.finished} of {progress.total} finished and saved; run the same "
                  "command again to continue", file=sys.stderr)
            return code
    else:
        progress.listeners.append(_printer(progress))
        asyncio.run(executor.run(todo, progress.start, progress.done))
    doc = summarize(the_plan, progress.ordered_rows(), executor=executor.name, demo=demo)
    sys.stdout.write(render_text(doc))
    if args.output:
        out = Path(args.output)
        if fmt == "md":
            svg = out.with_suffix(".svg")
            write_file(svg, render_svg(doc))
            write_file(out, render_markdown(doc, plot=svg.name))
        else:
            write_file(out, render_json(doc) if fmt == "json" else render_csv(doc))
        print(f"results written to {args.output}", file=sys.stderr)
    failed = [r for r in progress.rows.values() if not r.complete]
    if failed:
        print(f"moot: {len(failed)} debates did not finish (first: {failed[0].debate_id}: {failed[0].error}); "
              "run the same command again to continue them", file=sys.stderr)
        return int(ExitCode.PROVIDER)
    return int(ExitCode.OK)


def _uses_demo(config: dict[str, Any]) -> bool:
    from moot.core.models.provider_kinds import any_scripted
    from moot.core.providers.pool import default_provider_name

    base_url = next((a.get("base_url") for a in config.get("agents", []) if a.get("base_url")), None)
    default = default_provider_name(base_url)
    return any_scripted((a.get("provider") or default) for a in [*config.get("agents", []), config.get("judge", {})])


def _printer(progress: BenchProgress) -> Callable[[Job, ResultRow | None], None]:
    """A line per finished question on stderr, with a bar of the whole run."""

    def line(job: Job, row: ResultRow | None) -> None:
        if row is None:
            return
        from moot.core.safety.sanitize import one_line_safe

        n, total = progress.finished, progress.total
        bar = "#" * round(20 * n / total) + "." * (20 - round(20 * n / total))
        p = progress.protocols[job.protocol]
        if row.complete:
            mark = "✓" if row.correct else "✗"
            what = (f"{mark} {one_line_safe(str(row.answer), 30)} (expected {one_line_safe(row.expected, 30)}) · "
                    f"{row.prompt_tokens + row.completion_tokens:,} tok · {row.seconds:.1f} s")
        else:
            what = f"not finished: {one_line_safe(row.error or row.status, 200)}"
        print(f"[{bar}] {n}/{total} {job.protocol} {one_line_safe(job.question_id, 40)} {what} · "
              f"{job.protocol} {100 * p.accuracy:.0f}% ± {100 * p.stderr:.0f}", file=sys.stderr, flush=True)

    return line

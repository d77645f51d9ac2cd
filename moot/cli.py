"""The `moot` command: the composition root, above the engine (`moot.core`) and the TUI (`moot.tui`).

It parses arguments, builds a session, and starts either the headless printer or
the TUI; report, eval, inspection and the rest are library calls into `moot.core`.
Exit codes: 0 ok, 2 bad arguments or input, 3 provider failure, 4 config error,
130 interrupted. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, cast

from . import __version__
from moot.core.errors import ExitCode, InputError, MootError
from moot.core.models.terms import ROLES, ProviderName

if TYPE_CHECKING:  # the commands import what they need when they run (start-up time)
    from moot.core.config import Overrides
    from moot.core.models.state import DebateState
    from moot.core.session import DebateSession
    from moot.core.storage.folder import DebateFolder

PHASES = ["clarify", "summarize", "proposal", "critique", "refinement", "answer", "turn", "score", "synthesis"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not the usage block
        where = f"moot {self.prog.split()[-1]}" if " " in self.prog else "moot"
        print(f"moot: {message} (see `{where} --help`)", file=sys.stderr)
        raise SystemExit(ExitCode.INPUT)


def _finite_seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (0 <= v < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number ≥ 0: {text!r}")
    return v


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1: {text!r}")
    return v


def _bounded(field: str) -> Callable[[str], int]:
    """An integer flag checked against the bounds of `debate.<field>` (exit 2, not a config error)."""

    def parse(text: str) -> int:
        from moot.core.models.config import DebateSettings

        v = _positive_int(text)
        limit = next(m.le for m in DebateSettings.model_fields[field].metadata if hasattr(m, "le"))
        if v > limit:
            raise argparse.ArgumentTypeError(f"must be at most {limit}: {text!r}")
        return v

    return parse


_rounds = _bounded("rounds")
_turns = _bounded("turns")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="moot", description="Multi-agent LLM debates, watched live in the terminal.")
    p.add_argument("--version", action="version", version=f"moot {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def state_dir(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--state-dir", help="folder of saved debates (env MOOT_STATE_DIR, default ./debates)")

    def provider_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--provider", choices=["demo", "openai"], help="default: openai when a key is set, else demo")
        sp.add_argument("--model", help="model for every agent and the judge")
        sp.add_argument("--base-url", help="OpenAI-compatible endpoint (OpenRouter, Ollama, vLLM, LM Studio…)")
        sp.add_argument("--demo-delay", type=_finite_seconds, help="seconds between demo chunks (env MOOT_DEMO_DELAY)")

    run = sub.add_parser("run", help="run a debate (TUI in a terminal, else headless)")
    run.add_argument("problem", nargs="?", help="the problem statement (or use -p FILE)")
    run.add_argument("-p", "--problem-file", help="read the problem from a file")
    run.add_argument("-c", "--config", help="JSON or TOML config (default ./moot.toml when present)")
    run.add_argument("-a", "--agents", help=f"comma-separated roles: {', '.join(ROLES)}")
    run.add_argument("--protocol", choices=["rounds", "conversation", "simultaneous"],
                     help="debate shape (default rounds; see the README)")
    run.add_argument("-r", "--rounds", type=_rounds, help="number of rounds (default 3)")
    run.add_argument("--turns", type=_turns, help="turns of a conversation (default 200)")
    run.add_argument("--headless", action="store_true", help="no TUI: progress on stderr, solution on stdout")
    run.add_argument("-o", "--output", help="also write the final solution (JSON or markdown by extension)")
    run.add_argument("--theme", help="TUI theme (dark, light, high-contrast)")
    run.add_argument("--allow-truncate", action="store_true", help="cut a problem that is larger than the budget")
    run.add_argument("--clarify", action="store_true", help="agents ask clarifying questions first; you answer")
    run.add_argument("--termination", choices=["fixed", "convergence"],
                     help="convergence: stop early when the judge's confidence reaches debate.convergence_threshold")
    run.add_argument("--max-cost", type=_finite_seconds, metavar="USD", help="stop starting calls past this cost")
    run.add_argument("--max-tokens", type=_positive_int, metavar="N", help="stop starting calls past N tokens")
    run.add_argument("--report", metavar="FILE", help="write the markdown report at the end")
    run.add_argument("--trace", action="store_true", help="send an OpenTelemetry trace (needs moot[otel]; see README)")
    run.add_argument("--ref", action="append", metavar="PATH",
                     help="a file or folder the agents may read with tools (repeatable; .gitignore respected)")
    provider_args(run)
    state_dir(run)

    ls = sub.add_parser("list", help="list saved debates")
    state_dir(ls)

    show = sub.add_parser("show", help="show a saved debate")
    show.add_argument("id")
    show.add_argument("--json", action="store_true", help="print the whole state as JSON")
    state_dir(show)

    ctx = sub.add_parser("context", help="show exactly what an agent saw in a round")
    ctx.add_argument("id")
    which = ctx.add_mutually_exclusive_group(required=True)
    which.add_argument("--round", type=_positive_int, help="a round (rounds, simultaneous)")
    which.add_argument("--turn", type=_positive_int, help="a turn (conversation)")
    ctx.add_argument("--agent", help="agent id, name or role (or the judge: its id or `judge`); with --turn, "
                                     "default: every call of that turn (the speaker's, the summarizer's)")
    ctx.add_argument("--phase", choices=PHASES)
    ctx.add_argument("--json", action="store_true")
    state_dir(ctx)

    rep = sub.add_parser("report", help="write a markdown report of a debate")
    rep.add_argument("id")
    rep.add_argument("-o", "--output", help="write to FILE instead of stdout")
    rep.add_argument("--verbose", action="store_true", help="add latency and tokens to each contribution")
    state_dir(rep)

    ev = sub.add_parser("eval", help="score a debate's final solution with evaluator agents")
    ev.add_argument("id")
    ev.add_argument("-c", "--config", help="evaluator config (JSON or TOML); default: the debate's own "
                                           "provider and models")
    ev.add_argument("-o", "--output", help="write results: .md table, .json or .csv by extension")
    provider_args(ev)
    state_dir(ev)

    for name, helptext in (("watch", "watch a running or finished debate (tails its event log)"),
                           ("replay", "play a recorded debate back with its original timing")):
        w = sub.add_parser(name, help=helptext)
        w.add_argument("id", nargs="?", help="debate id (default: pick from a list)")
        w.add_argument("--theme", help="TUI theme")
        if name == "replay":
            w.add_argument("--speed", type=_finite_seconds, default=1.0, help="playback speed (default 1)")
        else:
            w.add_argument("--headless", action="store_true", help="print event lines instead of the TUI")
        state_dir(w)

    ctl = sub.add_parser("ctl", help="steer a debate that another process runs (pause, summarize, inject…)")
    ctl.add_argument("id")
    ctl.add_argument("action", choices=["pause", "resume", "stop", "summarize", "inject"])
    ctl.add_argument("words", nargs="*", metavar="ARG",
                     help="summarize: AGENT|all [FOCUS…]; inject: the note's text")
    ctl.add_argument("--wait", type=_finite_seconds, default=10.0,
                     help="seconds to wait until it is in effect (default 10); one not taken by then is "
                          "withdrawn; 0: send and return")
    state_dir(ctl)

    res = sub.add_parser("resume", help="continue an unfinished debate")
    res.add_argument("id")
    res.add_argument("--headless", action="store_true")
    res.add_argument("--theme", help="TUI theme (dark, light, high-contrast)")
    res.add_argument("--trace", action="store_true", help="send an OpenTelemetry trace (needs moot[otel]; see README)")
    provider_args(res)
    state_dir(res)

    tr = sub.add_parser("trace", help="write a debate's OpenTelemetry trace as OTLP JSON (from its event log)")
    tr.add_argument("id")
    tr.add_argument("-o", "--output", help="write to FILE instead of stdout")
    tr.add_argument("--content", action="store_true",
                    help="include prompt and completion text, masked (default: as debate.trace_content)")
    state_dir(tr)
    return p


# ---------------------------------------------------------------- helpers


def _demo_delay(args: argparse.Namespace, tui: bool) -> float | None:
    """The demo provider's pacing exists for watching: headless runs default to none."""
    if args.demo_delay is not None:
        return float(args.demo_delay)
    if not tui and os.environ.get("MOOT_DEMO_DELAY") is None:
        return 0.0
    return None  # the provider reads MOOT_DEMO_DELAY or its lively default


def _overrides(args: argparse.Namespace, *, with_rounds: bool = True) -> Overrides:
    from moot.core.config import Overrides

    roles = None
    if getattr(args, "agents", None):
        roles = [r.strip() for r in args.agents.split(",") if r.strip()]
    debate: dict[str, object] = {}
    if getattr(args, "clarify", False):
        debate["clarify"] = True
    if getattr(args, "termination", None):
        debate["termination"] = args.termination
    if getattr(args, "max_cost", None) is not None:
        debate["max_cost_usd"] = args.max_cost
    if getattr(args, "max_tokens", None) is not None:
        debate["max_total_tokens"] = args.max_tokens
    if getattr(args, "protocol", None):
        debate["protocol"] = args.protocol
    if getattr(args, "turns", None) is not None:
        debate["turns"] = args.turns
    if getattr(args, "trace", False):  # saved with a new debate, so that its resume traces too
        debate["trace"] = True
    if getattr(args, "ref", None):  # saved (absolute) with the debate: a resume keeps them
        debate["references"] = list(args.ref)
    return Overrides(rounds=getattr(args, "rounds", None) if with_rounds else None, roles=roles,
                     provider=cast("ProviderName | None", args.provider), model=args.model, base_url=args.base_url,
                     debate=debate)


def _write(path: Path, text: str) -> None:
    """Write a file atomically; an unwritable path is a one-line error (exit 2)."""
    from moot.core.storage.files import write_atomic

    try:
        write_atomic(path, text.encode("utf-8"))
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _deliver(text: str, output: str | None, what: str) -> None:
    """Write `text` to the -o file (atomically, naming it on stderr) or to stdout."""
    if output:
        _write(Path(output), text)
        print(f"{what} written to {output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def _open(args: argparse.Namespace) -> DebateFolder:
    from moot.core.storage.state_dir import StateDir

    return StateDir(args.state_dir).open(args.id)


# ---------------------------------------------------------------- commands


def _start(session: DebateSession, *, tui: bool, theme: str | None) -> int:
    """Run a built session in the TUI or headless; the exit code."""
    if tui:
        from moot.tui.app import run_app

        return run_app(session, theme=theme)
    import asyncio

    from moot.core.observe.headless import finish_headless, run_headless

    state = asyncio.run(run_headless(session))
    return finish_headless(session, state)


def cmd_run(args: argparse.Namespace) -> int:
    from moot.core.ask import ask_on_stdin
    from moot.core.config import load_config, resolve_agent
    from moot.core.observe.headless import wants_tui
    from moot.core.inputs import fit_problem, problem_text
    from moot.core.observe.otel import traced, wants_tracing
    from moot.core.providers.pool import default_provider_name
    from moot.core.session import SessionOptions, new_session
    from moot.core.safety.secrets import known_secrets, redact

    problem = redact(problem_text(args.problem, args.problem_file), known_secrets())  # a pasted key is never saved
    config = load_config(args.config, _overrides(args))
    default = default_provider_name(next((a.base_url for a in config.agents if a.base_url), None))
    people = [resolve_agent(a, config, default) for a in [*config.active_agents, config.judge]]
    tightest = min(people, key=lambda a: a.context.input_budget)  # counted with its model's encoding
    problem = fit_problem(problem, tightest.context.input_budget, tightest.model, args.allow_truncate)
    tracing = wants_tracing(config.debate.trace)  # before the debate's folder exists
    tui = wants_tui(args.headless)
    session = new_session(problem, config, SessionOptions(state_dir=args.state_dir, demo_delay=_demo_delay(args, tui),
                                                          clarifier=None if tui else ask_on_stdin))
    if any(a.provider == "demo" for a in session.orchestrator.agents) and not args.provider:
        print("moot: no API key found (OPENAI_API_KEY / OPENROUTER_API_KEY); using the offline DEMO provider",
              file=sys.stderr)
    with traced(session, tracing):
        code = _start(session, tui=tui, theme=args.theme)
    state = session.state
    if state.final_solution is not None:
        if args.output:
            _write_solution(Path(args.output), state)
        if args.report:
            from moot.core.report.markdown import render_report

            _write(Path(args.report), render_report(state))
            print(f"report written to {args.report}", file=sys.stderr)
    return code


def _write_solution(path: Path, state: DebateState) -> None:
    from moot.core.observe.printer import solution_document
    from moot.core.safety.sanitize import json_safe

    if path.suffix.lower() == ".json":
        data = json_safe(state.final_solution.model_dump_json(indent=2)) if state.final_solution else "null"
    else:
        data = solution_document(state)
    _write(path, data)


def cmd_resume(args: argparse.Namespace) -> int:
    from moot.core.ask import ask_on_stdin
    from moot.core.observe.headless import wants_tui
    from moot.core.observe.otel import traced, wants_tracing
    from moot.core.session import SessionOptions, resume_session

    tui = wants_tui(args.headless)
    if args.trace:
        wants_tracing(True)  # before anything is locked
    session = resume_session(args.id, SessionOptions(state_dir=args.state_dir, demo_delay=_demo_delay(args, tui),
                                                     clarifier=None if tui else ask_on_stdin),
                             _overrides(args, with_rounds=False))
    with traced(session, args.trace or wants_tracing(False, saved=session.orchestrator.config.debate.trace)):
        return _start(session, tui=tui, theme=args.theme)


def cmd_list(args: argparse.Namespace) -> int:
    import shutil

    from moot.core.safety.sanitize import one_line_safe
    from moot.core.storage.state_dir import StateDir, summarize_folder

    sd = StateDir(args.state_dir)
    sd.clean_pending()  # debates whose start was cut short: published if resumable, else removed
    rows = [summarize_folder(f) for f in sd.debates()]
    if not rows:
        print(f"no debates in {sd.root}", file=sys.stderr)
        return ExitCode.OK
    rows.sort(key=lambda r: (cast(float, r["created_at"]), str(r["id"])), reverse=True)  # newest first
    # No CREATED column: an id is its creation time (YYYYMMDD-HHMMSS-xxxx), and the problem needs the room.
    table = [["ID", "STATUS", "PROGRESS", "PROVIDER"]]
    problems = ["PROBLEM"]
    for r in rows:
        providers = [str(p) for p in cast("list[object]", r["providers"])]
        progress = f"{r['rounds']} {r['steps']}" if r.get("steps") else ""
        table.append([one_line_safe(str(r["id"]), 40), str(r["status"]), progress,
                      "+".join("DEMO" if p == "demo" else one_line_safe(p, 12) for p in providers)])
        problems.append(str(r["problem"]))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    used = sum(widths) + 2 * len(widths)
    room = max(16, shutil.get_terminal_size((120, 24)).columns - used)  # the problem is cut, not wrapped
    for row, problem in zip(table, problems, strict=True):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        print("  ".join([*cells, one_line_safe(problem, room)]).rstrip())
    return ExitCode.OK


def cmd_show(args: argparse.Namespace) -> int:
    from moot.core.observe.printer import solution_text
    from moot.core.safety.sanitize import json_safe, one_line_safe, terminal_safe

    state = _open(args).load()
    if args.json:
        print(json_safe(state.model_dump_json(indent=2)))
        return ExitCode.OK

    def say(line: str) -> None:
        """One line of text from the debate's files, made safe for the terminal."""
        sys.stdout.write(terminal_safe(line) + "\n")

    steps = "turns" if state.protocol == "conversation" else "rounds"
    say(f"debate {state.id} · {state.protocol} · {state.status} · {len(state.rounds)}/{state.total_rounds} {steps}")
    say(f"problem: {one_line_safe(state.problem.splitlines()[0] if state.problem else '', 200)}")
    say("agents: " + ", ".join(f"{a.id} ({a.role}, {a.provider}:{one_line_safe(a.model, 80)})" for a in state.agents))
    if any(a.provider == "demo" for a in [*state.agents, *([state.judge] if state.judge else [])]):
        say("provider: DEMO (offline, scripted answers, not a real model)")
    from moot.core.report.grounding import summary_lines

    for line in summary_lines(state):
        say(line)
    if state.protocol == "conversation":
        rolls = [s for rnd in state.rounds for s in [*rnd.replaced_summaries, *rnd.summaries.values()]]
        say(f"turns: {sum(len(r.contributions) for r in state.rounds)} messages; rolling summaries: {len(rolls)}")
        for s in rolls[-5:]:
            say(f"  turn {s.round}: {s.agent_id} {s.trigger}, turns 1–{s.covered_count}, "
                f"{s.metadata.before_tokens}→{s.metadata.after_tokens} tok")
    for rnd in state.rounds if state.protocol != "conversation" else []:
        kinds: dict[str, int] = {}
        for c in rnd.contributions:
            kinds[c.type] = kinds.get(c.type, 0) + 1
        replaced = {s.id for s in rnd.replaced_summaries}
        summ = ", ".join(f"{s.agent_id} {s.metadata.before_tokens}→{s.metadata.after_tokens} tok"
                         + (" (replaced)" if s.id in replaced else "")
                         for s in [*rnd.replaced_summaries, *rnd.summaries.values()])
        say(f"round {rnd.number}: " + ", ".join(f"{v} {k}s" for k, v in kinds.items())
            + (f"; summaries: {summ}" if summ else ""))
    say(f"tokens: {state.totals.prompt_tokens} prompt, {state.totals.completion_tokens} completion")
    if state.error:
        label = "interrupted by" if state.status == "interrupted" else "error"
        say(f"{label}: {one_line_safe(state.error, 600)}")
    if state.final_solution:
        say("\n" + solution_text(state))
    return ExitCode.OK


def cmd_context(args: argparse.Namespace) -> int:
    from moot.core.context.inspect import calls_at_turn_in_log, calls_for, format_calls
    from moot.core.safety.sanitize import json_safe, terminal_safe

    if args.turn is not None:
        calls = calls_at_turn_in_log(_open(args), args.turn, args.agent, args.phase)
    elif args.agent is None:
        raise InputError("--round needs --agent (which agent's calls)")
    else:
        calls = calls_for(_open(args).load(), args.round, args.agent, args.phase)
    if args.json:
        print(json_safe(json.dumps(calls, indent=2, ensure_ascii=False)))
    else:
        print(terminal_safe(format_calls(calls)))
    return ExitCode.OK


def cmd_trace(args: argparse.Namespace) -> int:
    from moot.core.observe.otlp import export_trace
    from moot.core.safety.sanitize import json_safe
    from moot.core.safety.secrets import known_secrets

    text = export_trace(_open(args), content=True if args.content else None, secrets=known_secrets())
    _deliver(json_safe(text), args.output, "trace")
    return ExitCode.OK


def cmd_report(args: argparse.Namespace) -> int:
    from moot.core.report.markdown import render_report

    state = _open(args).load()
    _deliver(render_report(state, verbose=bool(args.verbose)), args.output, "report")
    return ExitCode.OK


def cmd_eval(args: argparse.Namespace) -> int:
    from moot.core.errors import ProviderError
    from moot.core.evaluate import (FORMATS, default_evaluators, load_eval_config, render_csv, render_json,
                                    render_markdown, run_evaluators)
    from moot.core.safety.sanitize import one_line_safe

    fmt = "md"
    if args.output:
        suffix = Path(args.output).suffix.lower()
        if suffix not in FORMATS:
            raise InputError(f"unknown output format {suffix or '(none)'!r} for {args.output}; use .md, .json or .csv")
        fmt = FORMATS[suffix]
    flags = {"provider": args.provider, "model": args.model, "base_url": args.base_url}
    evaluators = load_eval_config(Path(args.config), **flags) if args.config else None
    state = _open(args).load()
    if state.final_solution is None:
        raise InputError(f"debate {state.id} has no final solution (status {state.status}); nothing to evaluate")
    if evaluators is None:
        evaluators = default_evaluators(state, **flags)
        on = ", ".join(f"{ev.id} {ev.provider}:{one_line_safe(str(ev.model), 80)}" for ev in evaluators)
        print(f"moot: no -c FILE: evaluating with the debate's own provider ({on})", file=sys.stderr)
    demo = [ev.id for ev in evaluators if ev.provider == "demo"]
    if demo:
        verb = "uses" if len(demo) == 1 else "use"
        print(f"moot: {', '.join(demo)} {verb} the offline DEMO provider (scripted scores)", file=sys.stderr)
    import asyncio

    results = asyncio.run(run_evaluators(state, evaluators, demo_delay=args.demo_delay))
    failed = [r for r in results if r.error]
    if len(failed) == len(results):
        raise ProviderError(f"all {len(results)} evaluators failed; {failed[0].id}: {failed[0].error}")
    from moot.core.safety.sanitize import one_line_safe

    for r in failed:
        print(f"moot: evaluator {r.id} failed: {one_line_safe(r.error or '', 400)}", file=sys.stderr)
    text = (render_json(state, results) if fmt == "json" else render_csv(results) if fmt == "csv"
            else render_markdown(state, results))
    _deliver(text, args.output, "evaluation")
    return ExitCode.OK


def cmd_watch(args: argparse.Namespace) -> int:
    from moot.core.observe.headless import tail_events, wants_tui
    from moot.core.storage.state_dir import StateDir

    sd = StateDir(args.state_dir)
    if not wants_tui(args.headless):
        if args.id is None:
            raise InputError("give a debate id to watch without a terminal (see `moot list`)")
        import asyncio

        return asyncio.run(tail_events(sd.open(args.id)))
    from moot.tui.app import run_picker, run_watch

    if args.id is None:
        return run_picker(sd.root, args.theme)
    return run_watch(sd.open(args.id), args.theme)


def cmd_replay(args: argparse.Namespace) -> int:
    from moot.core.storage.state_dir import StateDir

    sd = StateDir(args.state_dir)
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        raise InputError("replay needs a terminal; use `moot show` or `moot report` to read a debate")
    from moot.tui.app import run_picker, run_replay

    if args.id is None:
        return run_picker(sd.root, args.theme)
    return run_replay(sd.open(args.id), args.speed, args.theme)


def cmd_ctl(args: argparse.Namespace) -> int:
    """Send one command to the process running a debate, then follow the event log until it is
    in effect (exit 0), refused (exit 2) or `--wait` runs out. A command not taken by then is
    withdrawn (exit 2): it is applied exactly once or not at all."""
    import time

    from moot.core.agents import require_agent
    from moot.core.control.commands import MAX_TEXT, ControlCommand, effect_of, send, withdraw
    from moot.core.observe.describe import describe
    from moot.core.events import ControlChanged, DebateStarted, Event, is_terminal, parse_event
    from moot.core.safety.sanitize import one_line_safe
    from moot.core.errors import StoreError
    from moot.core.storage.files import open_regular
    from moot.core.storage.folder import writer_alive

    folder = _open(args)
    words = list(args.words)
    agent = text = None
    if args.action == "summarize":
        if not words:
            raise InputError("usage: moot ctl ID summarize AGENT|all [FOCUS…]")
        agent, text = words[0], " ".join(words[1:]).strip() or None
        if agent.lower() != "all":
            try:
                with os.fdopen(open_regular(folder.events_path), "rb") as fh:
                    started = parse_event(fh.readline())
            except (OSError, ValueError) as exc:
                raise InputError(f"cannot read debate {folder.id}: {exc}") from None
            if isinstance(started, DebateStarted):
                agent = require_agent(agent, started.agents, where=f" in debate {folder.id}").id
    elif args.action == "inject":
        text = " ".join(words).strip()
        if not text:
            raise InputError("usage: moot ctl ID inject TEXT…")
    elif words:
        raise InputError(f"{args.action} takes no arguments")
    if text is not None:
        what = "the note" if args.action == "inject" else "the focus"
        if len(text) > MAX_TEXT:
            raise InputError(f"{what} is {len(text)} characters; the limit is {MAX_TEXT}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # bytes that are not UTF-8 arrive as lone surrogates
            raise InputError(f"{what} is not valid UTF-8 text") from None
    command = ControlCommand(action=args.action, agent=agent, text=text)
    start = folder.events_path.stat().st_size if folder.events_path.exists() else 0
    send(folder, command)
    if args.wait <= 0:
        print(f"sent {command.id}; the running debate takes it at its next call boundary")
        return ExitCode.OK

    def show(event: Event) -> None:
        if isinstance(event, ControlChanged) and event.effective:
            print(f"{command.id}: ⏸ paused: no call in flight; nothing runs until `moot ctl {folder.id} resume`")
            return
        line = describe(event)
        if line is not None:
            print(f"{command.id}: {line.text}")

    def refused(event: Event) -> int:
        print(f"moot: {one_line_safe(getattr(event, 'message', 'refused'), 400)}", file=sys.stderr)
        return ExitCode.INPUT

    offset, rest = start, b""
    taken = False
    deadline = time.monotonic() + args.wait
    while True:
        try:
            with os.fdopen(open_regular(folder.events_path), "rb") as fh:
                fh.seek(offset)
                data = fh.read()
        except StoreError as exc:
            raise InputError(str(exc)) from None
        except OSError as exc:
            raise InputError(f"cannot read debate {folder.id}: {exc.strerror or exc}") from None
        offset += len(data)
        *lines, rest = (rest + data).split(b"\n")
        for raw in lines:
            try:
                event = parse_event(raw)
            except ValueError:  # pydantic's ValidationError included
                continue
            effect = effect_of(command, event, taken=taken)
            if effect == "refused":
                return refused(event)
            if effect is not None:
                show(event)
                if effect == "in_effect":
                    return ExitCode.OK
                taken = True
            elif taken and is_terminal(event):
                show(event)  # the debate ended before the pause could hold anything
                return ExitCode.OK
        alive = writer_alive(folder)
        if not taken and (not alive or time.monotonic() >= deadline):
            if withdraw(folder, command):
                why = ("the process running it ended" if not alive
                       else f"its process did not take it within {args.wait:g} s (is it stuck?)")
                print(f"moot: debate {folder.id}: {why}; {command.id} withdrawn, nothing changed", file=sys.stderr)
                return ExitCode.INPUT
            taken = True  # claimed at the last moment: its outcome is on its way to the log
            deadline = time.monotonic() + max(args.wait, 5.0)
            continue
        if taken and (not alive or time.monotonic() >= deadline):
            then = "paused once they finish" if args.action == "pause" else "the debate ends once they finish"
            print(f"{command.id}: {args.action} taken; calls still in flight after {args.wait:g} s (nothing new "
                  f"starts; {then})" if alive else f"{command.id}: taken; the debate's process ended")
            return ExitCode.OK
        time.sleep(0.05)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": cmd_run, "resume": cmd_resume, "list": cmd_list, "show": cmd_show, "context": cmd_context,
    "report": cmd_report, "eval": cmd_eval, "watch": cmd_watch, "replay": cmd_replay, "ctl": cmd_ctl,
    "trace": cmd_trace,
}


def main(argv: list[str] | None = None) -> int:
    from moot.core.safety.secrets import known_secrets, one_line

    def fail(message: object, code: int) -> int:
        """The one error line on stderr: masked, terminal-safe (servers echo keys and escapes in errors)."""
        print(f"moot: {one_line(str(message), 2000, known_secrets())}", file=sys.stderr)
        return code

    def on_sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    args = build_parser().parse_args(argv)
    # SIGTERM before a debate's own handlers are in place acts like Ctrl-C (a line and
    # exit 130), not a silent kill.
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        return int(COMMANDS[args.command](args))
    except MootError as exc:
        return fail(exc, exc.exit_code)
    except KeyboardInterrupt:
        print("moot: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        return ExitCode.OK
    except Exception as exc:  # the promise: one line, never a traceback (MOOT_DEBUG=1 shows it)
        if os.environ.get("MOOT_DEBUG"):
            raise
        return fail(f"unexpected error: {type(exc).__name__}: {exc}", ExitCode.UNEXPECTED)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""`moot run` and `moot resume`: build a session (new, or from a saved debate) and run it in
the TUI or headless."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .flags import (
    add_debate_id,
    add_provider_args,
    add_state_dir,
    bounded,
    completes,
    debate_name,
    demo_delay,
    finite_seconds,
    overrides,
    positive_int,
    role_list,
    write_file,
)
from .run_checks import MAX_AGENTS, alone, check_agent_count, say
from .warmup import warm_up

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from typing import Any

    from moot.core.models.state import DebateState
    from moot.core.observe.plain_input import PlainInput
    from moot.core.session import DebateSession

    from .flags import Subcommands


def register(sub: Subcommands) -> None:
    from moot.core.models.terms import PROTOCOL_NAMES, ROLES

    run = sub.add_parser("run", help="run a debate (TUI in a terminal, else headless)")
    run.add_argument("problem", nargs="?", help="the problem statement (or use -p FILE)")
    completes(run.add_argument("-p", "--problem-file", help="read the problem from a file"), "file")
    completes(run.add_argument("-c", "--config", help="JSON or TOML config (default ./moot.toml when present)"), "file")
    run.add_argument("-a", "--agents", type=role_list, help=f"comma-separated roles: {', '.join(ROLES)}")
    run.add_argument("--protocol", choices=list(PROTOCOL_NAMES), help="debate shape (default rounds; see the README)")
    run.add_argument("--samples", type=bounded("samples"), help="vote: how many independent answers (default: one "
                                                                "per agent)")
    run.add_argument("--weight", choices=["plain", "confidence"],
                     help="vote, simultaneous, adaptive: weigh each answer by its stated confidence (default plain)")
    run.add_argument("--topology", choices=["full", "ring", "star"],
                     help="rounds, simultaneous, adaptive: whose answers each agent reads (default full)")
    run.add_argument("--human", action="append", metavar="NAME",
                     help="take a seat as NAME: you propose, critique and refine (or speak in turn) like an agent; "
                          "type in the TUI, on stdin headless, or with `moot ctl ID say` (repeat for more people)")
    run.add_argument("-r", "--rounds", type=bounded("rounds"), help="number of rounds (default 3)")
    run.add_argument("--turns", type=bounded("turns"), help="turns of a conversation (default 200)")
    run.add_argument("--headless", action="store_true", help="no TUI: progress on stderr, solution on stdout")
    run.add_argument("--plain", action="store_true",
                     help="linear text for screen readers on stdout, slash commands on stdin (also MOOT_PLAIN=1)")
    completes(run.add_argument("-o", "--output", help="also write the final solution (JSON or markdown by extension)"),
              "file")
    run.add_argument("--id", type=debate_name, metavar="NAME",
                     help="name the debate (its folder in the state dir) instead of a dated id")
    run.add_argument("--theme", help="TUI theme (dark, light, high-contrast)")
    run.add_argument("--allow-truncate", action="store_true", help="cut a problem that is larger than the budget")
    run.add_argument("--clarify", action="store_true", help="agents ask clarifying questions first; you answer")
    run.add_argument("--termination", choices=["fixed", "convergence"],
                     help="convergence: stop early when the judge's confidence reaches debate.convergence_threshold")
    run.add_argument("--max-cost", type=finite_seconds, metavar="USD", help="stop starting calls past this cost")
    run.add_argument("--max-tokens", type=positive_int, metavar="N", help="stop starting calls past N tokens")
    run.add_argument("--max-agents", type=positive_int, metavar="N",
                     help=f"run up to N agents (default {MAX_AGENTS}: a round's critiques grow with their square)")
    completes(run.add_argument("--report", metavar="FILE", help="write the markdown report at the end"), "file")
    run.add_argument("--trace", action="store_true", help="send an OpenTelemetry trace (needs moot[otel]; see README)")
    run.add_argument("--ref", action="append", metavar="PATH",
                     help="a file or folder the agents may read with tools (repeatable; .gitignore respected)")
    add_provider_args(run)
    add_state_dir(run)
    run.set_defaults(handler=cmd_run)

    res = sub.add_parser("resume", help="continue an unfinished debate")
    add_debate_id(res)
    res.add_argument("--headless", action="store_true")
    res.add_argument("--plain", action="store_true", help="linear text for screen readers (also MOOT_PLAIN=1)")
    res.add_argument("--theme", help="TUI theme (dark, light, high-contrast)")
    res.add_argument("--trace", action="store_true", help="send an OpenTelemetry trace (needs moot[otel]; see README)")
    add_provider_args(res)
    add_state_dir(res)
    res.set_defaults(handler=cmd_resume)


def cmd_run(args: argparse.Namespace) -> int:
    from moot.core.inputs import problem_text
    from moot.core.observe.terminal import wants_tui

    problem = problem_text(args.problem, args.problem_file)  # a missing problem is said before any screen
    plain = plain_input(args)
    if plain is None and wants_tui(args.headless):
        return run_in_tui(args, problem)
    built = build_run(args, problem, tui=False, plain=plain)
    say(built.notices)  # once nothing more can fail before the debate starts
    from moot.core.observe.otel import traced

    with traced(built.session, built.tracing):
        code = start(built.session, tui=False, theme=args.theme, plain=plain)
    return finish_run(args, built.session, code)


class Built:
    """A new debate ready to start, with the lines to say before it and whether it is traced."""

    def __init__(self, session: DebateSession, notices: list[str | None], tracing: bool) -> None:
        self.session = session
        self.notices = notices
        self.tracing = tracing


def build_run(args: argparse.Namespace, problem: str, *, tui: bool, plain: PlainInput | None,
              step: Callable[[str], None] = lambda what: None) -> Built:
    """Config, the problem fitted to the tightest budget, the debate's folder and its engine;
    `step` hears what is being loaded (the TUI's header shows it meanwhile)."""
    step("reading the config")
    from moot.core.config import load_config, resolve_agent
    from moot.core.models.provider_kinds import any_scripted, kind_of
    from moot.core.providers.pool import default_provider_name
    from moot.core.tokens import encoding_name_for_model

    config = load_config(args.config, overrides(args))
    default = default_provider_name(next((a.base_url for a in config.agents if a.base_url), None))
    people = [resolve_agent(a, config, default) for a in [*config.active_agents, config.judge]]
    sdk = any(kind_of(a.provider).uses_openai_sdk for a in people)
    # Known from here: what the first request needs, started now (see `warmup`).
    warm_up([encoding_name_for_model(a.model) for a in people], sdk=sdk)

    step("loading the engine")
    from moot.core.ask import ask_on_stdin
    from moot.core.inputs import fit_problem, truncation_note
    from moot.core.observe.otel import wants_tracing
    from moot.core.safety.secrets import known_secrets, redact
    from moot.core.session import SessionOptions, new_session

    secrets = known_secrets()
    problem = redact(problem, secrets)  # a pasted key is never saved
    if config.debate.pinned:  # the problem's constraints are saved as the problem is
        config.debate.pinned = [redact(text, secrets) for text in config.debate.pinned]
    source = args.config or "moot.toml"
    notices = [check_agent_count(config, args.max_agents), None if args.agents else alone(config, source)]
    step("counting the problem's tokens")
    tightest = min(people, key=lambda a: a.context.input_budget)  # counted with its model's encoding
    fitted = fit_problem(problem, tightest.context.input_budget, tightest.model, args.allow_truncate)
    if fitted != problem:  # said on stderr here, and by `moot show` later
        notices.append(truncation_note(fitted))
    problem = fitted
    tracing = wants_tracing(config.debate.trace)  # before the debate's folder exists
    clarifier = None if tui else plain.ask if plain is not None else ask_on_stdin
    step("loading the openai SDK" if sdk else "making the debate's folder")
    session = new_session(problem, config, SessionOptions(state_dir=args.state_dir, demo_delay=demo_delay(args, tui),
                                                          clarifier=clarifier, debate_id=args.id))
    if any_scripted(a.provider for a in session.orchestrator.agents) and not args.provider:
        notices.append("no API key found (OPENAI_API_KEY / OPENROUTER_API_KEY); using the offline DEMO provider")
    return Built(session, notices, tracing)


def run_in_tui(args: argparse.Namespace, problem: str) -> int:
    """The app first, the debate built behind its first screen: the header names the problem and
    says what is still loading; an error in building ends the app and is said as it is headless."""
    from contextlib import ExitStack

    from moot.core.safety.secrets import known_secrets, one_line
    from moot.tui.app import run_app_building

    built: list[Built] = []
    stack = ExitStack()

    def build(step: Callable[[str], None]) -> DebateSession:
        made = build_run(args, problem, tui=True, plain=None, step=step)
        from moot.core.observe.otel import traced  # behind the first screen: it loads the event models

        built.append(made)
        stack.enter_context(traced(made.session, made.tracing))
        return made.session

    with stack:
        code, session = run_app_building(build, title=one_line(problem, 200, known_secrets()), theme=args.theme,
                                         on_close=lambda: say(built[0].notices if built else []))
    return finish_run(args, session, code)


def finish_run(args: argparse.Namespace, session: DebateSession | None, code: int) -> int:
    """`-o` and `--report` once the debate has its final solution; the exit code."""
    if session is None:  # quit before the debate was built
        return code
    state = session.state
    if state.final_solution is not None:
        if args.output:
            write_solution(Path(args.output), state)
        if args.report:
            from moot.core.report.markdown import report_chunks

            write_file(Path(args.report), report_chunks(state, steps=session.folder.steps()))
            print(f"report written to {args.report}", file=sys.stderr)
    return code


def cmd_resume(args: argparse.Namespace) -> int:
    from moot.core.observe.terminal import wants_tui

    plain = plain_input(args)
    tui = plain is None and wants_tui(args.headless)
    if args.trace:
        from moot.core.observe.otel import wants_tracing

        wants_tracing(True)  # before anything is locked
    if tui:
        return resume_in_tui(args)
    from moot.core.ask import ask_on_stdin
    from moot.core.observe.otel import traced, wants_tracing
    from moot.core.session import SessionOptions, resume_session

    clarifier = plain.ask if plain is not None else ask_on_stdin
    session = resume_session(args.id, SessionOptions(state_dir=args.state_dir, demo_delay=demo_delay(args, False),
                                                     clarifier=clarifier),
                             overrides(args, with_rounds=False))
    with traced(session, args.trace or wants_tracing(False, saved=session.orchestrator.config.debate.trace)):
        return start(session, tui=False, theme=args.theme, plain=plain)


def resume_in_tui(args: argparse.Namespace) -> int:
    """The app first, as for `moot run`: the saved debate is read and its engine built behind the
    first screen, whose header says what is still loading; an error in building (no such debate, one
    already completed or locked by another process) ends the app and is said as it is headless."""
    from contextlib import ExitStack

    from moot.core.safety.secrets import one_line
    from moot.tui.app import run_app_building

    stack = ExitStack()

    def build(step: Callable[[str], None]) -> DebateSession:
        step("loading the engine")
        from moot.core.observe.otel import traced, wants_tracing
        from moot.core.session import SessionOptions, resume_session

        step("reading the debate")
        session = resume_session(args.id, SessionOptions(state_dir=args.state_dir, demo_delay=demo_delay(args, True)),
                                 overrides(args, with_rounds=False))
        saved = session.orchestrator.config.debate.trace
        stack.enter_context(traced(session, args.trace or wants_tracing(False, saved=saved)))
        return session

    with stack:  # the title until the debate is read, which then names its problem
        code, _ = run_app_building(build, title=one_line(f"resuming debate {args.id}", 200), theme=args.theme)
    return code


def plain_input(args: argparse.Namespace) -> PlainInput | None:
    """Plain mode's stdin (`--plain`, or MOOT_PLAIN set to anything but 0 or empty), else None."""
    import os

    if not (args.plain or os.environ.get("MOOT_PLAIN", "") not in ("", "0")):
        return None
    from moot.core.observe.plain_input import PlainInput

    return PlainInput()


def start(session: DebateSession, *, tui: bool, theme: str | None, plain: PlainInput | None = None) -> int:
    """Run a built session in the TUI, headless or in plain mode; the exit code."""
    if tui:
        from moot.tui.app import run_app

        return run_app(session, theme=theme)
    import asyncio

    from moot.core.observe.headless import finish_headless, run_headless

    if plain is None:
        state = asyncio.run(run_headless(session))
        return finish_headless(session, state)
    from moot.core.observe.plain import print_plain

    def steering(interrupt: Callable[[str], None]) -> Coroutine[Any, Any, None]:
        return plain.serve(session.orchestrator, interrupt)

    plain.people = bool(session.people)  # a person's turns are shown in order on stdout, typed on stdin
    state = asyncio.run(run_headless(session, print_plain, steering, seat_out=sys.stdout, seat_lines=plain.typed,
                                     plain=True))
    return finish_headless(session, state, plain=True)


def write_solution(path: Path, state: DebateState) -> None:
    """`-o FILE`: the final solution as JSON (`.json`) or a markdown document."""
    from moot.core.observe.printer import solution_document
    from moot.core.safety.sanitize import json_safe

    if path.suffix.lower() == ".json":
        data = json_safe(state.final_solution.model_dump_json(indent=2)) if state.final_solution else "null"
    else:
        data = solution_document(state)
    write_file(path, data)

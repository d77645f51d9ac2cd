"""`moot fork`: a saved debate's history up to a point, then run on from there with changes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .flags import add_debate_id, add_provider_args, add_state_dir, bounded, completes, demo_delay, overrides

if TYPE_CHECKING:
    from .flags import Subcommands


def agent_model(text: str) -> tuple[str, str]:
    agent, sep, model = text.partition("=")
    if not sep or not agent.strip() or not model.strip():
        raise argparse.ArgumentTypeError(f"expected AGENT=MODEL, got {text!r}")
    return agent.strip(), model.strip()


def register(sub: Subcommands) -> None:
    fork = sub.add_parser("fork", help="a new debate with a saved one's history up to a point, run on from there")
    add_debate_id(fork)
    fork.add_argument("--at", required=True, metavar="POINT",
                      help="round:N (the start of round N), round:N:PHASE, turn:N (conversation) or summary:ID "
                           "(just before that summary was written)")
    fork.add_argument("--inject", metavar="TEXT", help="a moderator note every agent sees from the fork point on")
    fork.add_argument("--agent-model", action="append", type=agent_model, default=[], metavar="AGENT=MODEL",
                      help="run AGENT on MODEL from the fork point (repeatable; the judge's id works too)")
    fork.add_argument("--summary-method", choices=["rule-based", "llm", "hybrid"],
                      help="how summaries from the fork point on are written")
    fork.add_argument("-r", "--rounds", type=bounded("rounds"), help="rounds in all (more or fewer than the parent)")
    fork.add_argument("--turns", type=bounded("turns"), help="turns in all, for a conversation")
    completes(fork.add_argument("-c", "--config", metavar="FILE",
                                help="other configuration changes (JSON or TOML, merged over the parent's); "
                                     "a different protocol, judge or set of agents is refused"), "file")
    fork.add_argument("--headless", action="store_true")
    fork.add_argument("--plain", action="store_true", help="linear text for screen readers (also MOOT_PLAIN=1)")
    fork.add_argument("--theme", help="TUI theme (dark, light, high-contrast)")
    fork.add_argument("--trace", action="store_true", help="send an OpenTelemetry trace (needs moot[otel]; see README)")
    fork.add_argument("--no-run", action="store_true", help="only make the fork; `moot resume ID` runs it later")
    add_provider_args(fork)
    add_state_dir(fork)
    fork.set_defaults(handler=cmd_fork)


def cmd_fork(args: argparse.Namespace) -> int:
    from moot.core.forking import ForkChanges, fork_debate
    from moot.core.storage.fork import parse_point

    point = parse_point(args.at)
    changes = ForkChanges(inject=args.inject, agent_models=dict(args.agent_model), summary_method=args.summary_method,
                          rounds=args.rounds, turns=args.turns,
                          config_file=Path(args.config) if args.config else None)
    forked = fork_debate(args.id, point, changes, args.state_dir)
    print(f"moot: forked {forked.origin.debate} at {point.shown} as {forked.id} "
          f"({forked.copied.lines} events copied)", file=sys.stderr)
    if args.no_run:
        print(forked.id)
        return 0
    from moot.core.observe.headless import wants_tui
    from moot.core.observe.otel import traced, wants_tracing
    from moot.core.ask import ask_on_stdin
    from moot.core.session import SessionOptions, resume_session

    from .run import plain_input, start

    plain = plain_input(args)
    tui = plain is None and wants_tui(args.headless)
    if args.trace:
        wants_tracing(True)
    clarifier = None if tui else plain.ask if plain is not None else ask_on_stdin
    session = resume_session(forked.id, SessionOptions(state_dir=args.state_dir, demo_delay=demo_delay(args, tui),
                                                       clarifier=clarifier),
                             overrides(args, with_rounds=False))
    with traced(session, args.trace or wants_tracing(False, saved=session.orchestrator.config.debate.trace)):
        return start(session, tui=tui, theme=args.theme, plain=plain)

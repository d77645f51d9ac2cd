"""`moot fork`: a saved debate's history up to a point, then run on from there with changes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .flags import add_debate_id, add_provider_args, add_state_dir, bounded, completes, demo_delay, overrides

if TYPE_CHECKING:
    from moot.core.providers.base import Message

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
    register_call(sub)
    compare = sub.add_parser("compare", help="a debate and its fork side by side from the fork point")
    add_debate_id(compare)
    compare.add_argument("fork", help="the fork's id (either order works)")
    add_state_dir(compare)
    compare.set_defaults(handler=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    """Print, from the fork point on, each contribution in the parent and in the fork (the words only
    one side wrote marked `[-…-]` and `{+…+}`), the final answers, and each side's tokens and cost."""
    from moot.core.compare import Piece
    from moot.core.fork_compare import compare_fork, spend_line
    from moot.core.safety.sanitize import terminal_safe
    from moot.core.storage.state_dir import StateDir

    sd = StateDir(args.state_dir)
    parent, fork = sd.open(args.id).load(), sd.open(args.fork).load()
    if fork.forked_from is None or fork.forked_from.debate != parent.id:
        if parent.forked_from is not None and parent.forked_from.debate == fork.id:
            parent, fork = fork, parent
    cmp = compare_fork(parent, fork)

    def marked(pieces: list[Piece], left: bool) -> str:
        o, c = ("[-", "-]") if left else ("{+", "+}")
        return terminal_safe("".join(f"{o}{p.text}{c}" if p.only and p.text.strip() else p.text for p in pieces))

    # The fork point is read from the fork's log: untrusted text, like the contributions.
    out = [terminal_safe(f"{cmp.parent_id} ({cmp.parent_status})  vs  ⑂ {cmp.fork_id} ({cmp.fork_status}), "
                         f"forked at {cmp.at.replace(':', ' ')}; compared from {cmp.unit} {cmp.from_step}"),
           f"  parent: {spend_line(cmp.parent_spend)}", f"  fork:   {spend_line(cmp.fork_spend)}"]
    for pair in [*cmp.pairs, *([cmp.answer] if cmp.answer is not None else [])]:
        title = "final answer" if pair is cmp.answer else f"{cmp.unit} {pair.title}"
        same = f" · {pair.shared:.0%} of words shared" if pair.parent is not None and pair.fork is not None else ""
        out += ["", f"== {terminal_safe(title)}{same}",
                "-- parent: " + (marked(pair.parent_pieces, True) if pair.parent is not None else "(none)"),
                "-- fork:   " + (marked(pair.fork_pieces, False) if pair.fork is not None else "(none)")]
    print("\n".join(out))
    return 0


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
    from moot.core.ask import ask_on_stdin
    from moot.core.observe.headless import wants_tui
    from moot.core.observe.otel import traced, wants_tracing
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


def register_call(sub: Subcommands) -> None:
    from .flags import PHASES, finite_seconds, positive_int

    call = sub.add_parser("call", help="send one recorded call again (as it was or edited) and save the reply "
                                       "as an experiment")
    add_debate_id(call)
    which = call.add_mutually_exclusive_group(required=True)
    which.add_argument("--round", type=positive_int, help="the call's round (with --agent)")
    which.add_argument("--turn", type=positive_int, help="the call's turn (conversation)")
    call.add_argument("--agent", help="agent id, name or role (or the judge)")
    call.add_argument("--phase", choices=PHASES)
    call.add_argument("--target", help="the agent a critique was aimed at")
    completes(call.add_argument("--messages", metavar="FILE",
                                help="send these messages instead (JSON: a list of {role, content}, the shape "
                                     "`moot context --json` prints)"), "file")
    call.add_argument("--edit", action="store_true",
                      help="open the messages in $VISUAL or $EDITOR first (JSON); what is saved is sent")
    call.add_argument("--summary", choices=["rule-based", "llm", "hybrid", "none"],
                      help="replace the view's summary: one written now another way from the same items, or none "
                           "(the full history, when it fits the window)")
    call.add_argument("--temperature", type=finite_seconds, help="default: the agent's")
    call.add_argument("--max-tokens", type=positive_int, help="default: the recorded call's")
    call.add_argument("-n", type=positive_int, default=1, metavar="K", help="ask K times (seeds 1..K) to see the spread")
    add_provider_args(call)
    add_state_dir(call)
    call.set_defaults(handler=cmd_call)


def cmd_call(args: argparse.Namespace) -> int:
    import asyncio

    from moot.core.experiments import (
        CallSpec,
        Reply,
        find_call,
        new_experiment,
        read_messages,
        recorded_reply,
        save,
        send,
        the_agent,
    )
    from moot.core.providers.base import Message
    from moot.core.providers.pool import ProviderPool
    from moot.core.safety.sanitize import terminal_safe

    from .flags import open_debate

    folder = open_debate(args)
    state, call = find_call(folder, CallSpec(args.agent, args.round, args.turn, args.phase, args.target))
    agent, prices = the_agent(state, call["agent_id"], overrides(args, with_rounds=False))
    if args.messages and args.summary:
        from moot.core.errors import InputError

        raise InputError("--messages and --summary: choose one (an edited file already holds its summary)")
    if args.edit and (args.messages or args.summary):
        from moot.core.errors import InputError

        raise InputError("--edit opens the recorded messages: not with --messages or --summary")
    if args.edit:
        messages = edited_messages(call["messages"], agent.model, agent.context.input_budget)
    elif args.messages:
        messages = read_messages(Path(args.messages), agent.model, agent.context.input_budget)
    else:
        messages = [Message(role=m["role"], content=m["content"]) for m in call["messages"]]
        if any(m.get("tool_calls") or m.get("tool_call_id") for m in call["messages"]):
            from moot.core.errors import InputError

            raise InputError("that call went through a tool loop: re-run it with --messages holding the view "
                             "without the tool steps")
    max_tokens = args.max_tokens or call["max_tokens"] or 1024
    temperature = agent.config.temperature if args.temperature is None else args.temperature
    seeds: list[int | None] = [None] if args.n == 1 else list(range(1, args.n + 1))
    pool = ProviderPool(demo_delay=demo_delay(args, False), timeout_s=120.0)
    pool.get(agent)  # a missing key: one line before anything is sent
    from moot.core.models.provider_kinds import kind_of

    if kind_of(agent.provider).scripted:
        print("moot: the offline DEMO provider answers (not a real model)", file=sys.stderr)
    recorded = recorded_reply(folder, state, call["call_id"])
    shown = [-1]

    def on_text(i: int, delta: str) -> None:
        if shown[0] != i:
            if args.n > 1:
                sys.stdout.write(f"{'' if i == 0 else chr(10)}─── reply {i + 1} of {args.n} (seed {seeds[i]})\n")
            shown[0] = i
        sys.stdout.write(terminal_safe(delta))
        sys.stdout.flush()

    async def run() -> list[Reply]:
        sent = messages
        if args.summary is not None:
            from moot.core.counterfactual import swapped_view

            full = folder.load(bounded=False) if state.archived_rounds else state  # the summary's items, all of them
            sent[:] = await swapped_view(full, call, args.summary, agent, pool)
        return await send(agent, sent, call, temperature=temperature, max_tokens=max_tokens, seeds=seeds, pool=pool,
                          prices=prices, on_text=on_text, recorded=recorded)

    replies = asyncio.run(run())
    sys.stdout.write("\n")
    exp = new_experiment(state, call, agent, edited=bool(args.messages or args.edit), summary=args.summary,
                         temperature=temperature, max_tokens=max_tokens, messages=[dict(m) for m in messages],
                         recorded_reply=recorded, replies=replies)
    path = save(folder, exp)
    used = sum(r.prompt_tokens + r.completion_tokens for r in replies)
    cost = sum(r.cost_usd for r in replies)
    print(f"moot: experiment {exp.id} saved in {path} ({used:,} tokens, ${cost:.4f})", file=sys.stderr)
    return 0



def edited_messages(recorded: list[dict[str, object]], model: str, budget: int) -> list[Message]:
    """`--edit`: the recorded messages in the user's editor as JSON; what they save is read back
    and checked as `--messages` is. An editor that fails sends nothing."""
    import json
    import os
    import shlex
    import subprocess
    import tempfile

    from moot.core.errors import InputError
    from moot.core.experiments import read_messages

    editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
    shown = [{"role": m["role"], "content": m["content"]} for m in recorded]
    with tempfile.TemporaryDirectory(prefix="moot-call-") as tmp:
        path = Path(tmp) / "messages.json"
        path.write_text(json.dumps(shown, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        try:
            code = subprocess.run([*editor, str(path)], check=False).returncode
        except OSError as exc:
            raise InputError(f"--edit: cannot start the editor {editor[0]!r} ({exc.strerror}); set $EDITOR") from None
        if code != 0:
            raise InputError(f"--edit: the editor exited with {code}; nothing was sent")
        return read_messages(path, model, budget)

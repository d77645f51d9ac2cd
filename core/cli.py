"""The `moot` command line.

Exit codes: 0 ok, 2 bad arguments or input, 3 provider failure, 4 config error,
130 interrupted. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn

from core.config import ConfigError, Overrides, load_config
from core.models import ROLES

EXIT_OK, EXIT_INPUT, EXIT_PROVIDER, EXIT_CONFIG, EXIT_INTERRUPTED = 0, 2, 3, 4, 130


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_INPUT) -> None:
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not the usage block
        print(f"moot: {message} (see `moot {self.prog.split()[-1]} --help`)" if " " in self.prog
              else f"moot: {message} (see `moot --help`)", file=sys.stderr)
        raise SystemExit(EXIT_INPUT)


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be ≥ 0: {text!r}")
    return v


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1: {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="moot", description="Multi-agent LLM debates, watched live in the terminal.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def state_dir(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--state-dir", help="folder of saved debates (env MOOT_STATE_DIR, default ./debates)")

    def provider_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--provider", choices=["demo", "openai"], help="default: openai when a key is set, else demo")
        sp.add_argument("--model", help="model for every agent and the judge")
        sp.add_argument("--base-url", help="OpenAI-compatible endpoint (OpenRouter, Ollama, vLLM, LM Studio…)")
        sp.add_argument("--demo-delay", type=_positive_float, help="seconds between demo chunks (env MOOT_DEMO_DELAY)")

    run = sub.add_parser("run", help="run a debate (TUI in a terminal, else headless)")
    run.add_argument("problem", nargs="?", help="the problem statement (or use -p FILE)")
    run.add_argument("-p", "--problem-file", help="read the problem from a file")
    run.add_argument("-c", "--config", help="JSON or TOML config (default ./moot.toml when present)")
    run.add_argument("-a", "--agents", help=f"comma-separated roles: {', '.join(ROLES)}")
    run.add_argument("-r", "--rounds", type=_positive_int, help="number of rounds (default 3)")
    run.add_argument("--headless", action="store_true", help="no TUI: progress on stderr, solution on stdout")
    run.add_argument("-o", "--output", help="also write the final solution (JSON or markdown by extension)")
    run.add_argument("--theme", help="TUI theme (dark, light, high-contrast)")
    run.add_argument("--allow-truncate", action="store_true", help="cut a problem that is larger than the budget")
    run.add_argument("--clarify", action="store_true", help="agents ask clarifying questions first; you answer")
    run.add_argument("--termination", choices=["fixed", "convergence"],
                     help="convergence: stop early when the judge's confidence reaches debate.convergence_threshold")
    run.add_argument("--max-cost", type=_positive_float, metavar="USD", help="stop starting calls past this cost")
    run.add_argument("--max-tokens", type=_positive_int, metavar="N", help="stop starting calls past N tokens")
    run.add_argument("--report", metavar="FILE", help="write the markdown report at the end")
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
    ctx.add_argument("--round", type=_positive_int, required=True)
    ctx.add_argument("--agent", required=True, help="agent id, name or role (or judge)")
    ctx.add_argument("--phase", choices=["clarify", "summarize", "proposal", "critique", "refinement", "score",
                                         "synthesis"])
    ctx.add_argument("--json", action="store_true")
    state_dir(ctx)

    rep = sub.add_parser("report", help="write a markdown report of a debate")
    rep.add_argument("id")
    rep.add_argument("-o", "--output", help="write to FILE instead of stdout")
    rep.add_argument("--verbose", action="store_true", help="add latency and tokens to each contribution")
    state_dir(rep)

    ev = sub.add_parser("eval", help="score a debate's final solution with evaluator agents")
    ev.add_argument("id")
    ev.add_argument("-c", "--config", required=True, help="evaluator config (JSON or TOML)")
    ev.add_argument("-o", "--output", help="write results: .md table, .json or .csv by extension")
    provider_args(ev)
    state_dir(ev)

    for name, helptext in (("watch", "watch a running or finished debate (tails its event log)"),
                           ("replay", "play a recorded debate back with its original timing")):
        w = sub.add_parser(name, help=helptext)
        w.add_argument("id", nargs="?", help="debate id (default: pick from a list)")
        w.add_argument("--theme", help="TUI theme")
        if name == "replay":
            w.add_argument("--speed", type=_positive_float, default=1.0, help="playback speed (default 1)")
        else:
            w.add_argument("--headless", action="store_true", help="print event lines instead of the TUI")
        state_dir(w)

    res = sub.add_parser("resume", help="continue an unfinished debate")
    res.add_argument("id")
    res.add_argument("--headless", action="store_true")
    res.add_argument("--theme", help="TUI theme (dark, light, high-contrast)")
    provider_args(res)
    state_dir(res)
    return p


# ---------------------------------------------------------------- problem input


def read_problem(args: argparse.Namespace) -> str:
    if args.problem and args.problem_file:
        raise CliError("give the problem as text or with -p FILE, not both")
    if args.problem_file:
        path = Path(args.problem_file)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise CliError(f"problem file not found: {path}") from None
        except IsADirectoryError:
            raise CliError(f"problem file is a directory: {path}") from None
        except OSError as exc:
            raise CliError(f"cannot read problem file {path}: {exc.strerror}") from None
        if b"\x00" in raw:
            raise CliError(f"problem file {path} looks binary; give a text file")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise CliError(f"problem file {path} is not UTF-8 text") from None
        if not text.strip():
            raise CliError(f"problem file {path} is empty")
        return text.strip()
    if args.problem is None:
        raise CliError("no problem given: `moot run \"Design a URL shortener\"` or `moot run -p problem.md`")
    if not args.problem.strip():
        raise CliError("the problem is empty")
    try:  # bytes that are not UTF-8 arrive as lone surrogates, which no log line can hold
        args.problem.encode("utf-8")
    except UnicodeEncodeError:
        raise CliError("the problem is not valid UTF-8 text") from None
    return args.problem.strip()


def check_problem_size(problem: str, budget: int, model: str | None, allow_truncate: bool) -> str:
    """A problem that eats most of the smallest budget leaves no room for the debate."""
    from core import tokens

    limit = budget // 2
    n = tokens.count_text(problem, model)
    if n <= limit:
        return problem
    if not allow_truncate:
        raise CliError(
            f"the problem is {n} tokens; the limit is {limit} (half the smallest agent budget of {budget}); "
            "shorten it, raise context.max_context_tokens, or pass --allow-truncate"
        )
    return tokens.truncate_to_tokens(problem, limit, model) + "\n[problem truncated to fit the context budget]"


# ---------------------------------------------------------------- commands


def _demo_delay(args: argparse.Namespace, tui: bool) -> float | None:
    """The demo provider's pacing exists for watching: headless runs default to none."""
    if args.demo_delay is not None:
        return args.demo_delay
    if not tui and os.environ.get("MOOT_DEMO_DELAY") is None:
        return 0.0
    return None  # the provider reads MOOT_DEMO_DELAY or its lively default


def _wants_tui(args: argparse.Namespace) -> bool:
    return not args.headless and sys.stdout.isatty() and sys.stdin.isatty() and os.environ.get("CI") is None


def _tui_available() -> bool:
    try:
        _load_tui()
    except ImportError:
        return False
    return True


async def _run_headless(session: Any, output: str | None) -> int:
    from core.printer import print_events, solution_text

    printer_sub = session.bus.subscribe("printer")
    printer = asyncio.create_task(print_events(printer_sub))
    session.start_writer()
    loop = asyncio.get_running_loop()
    engine = asyncio.ensure_future(session.run())
    interrupted = False

    def on_signal() -> None:
        # Ctrl-C / SIGTERM: cancel the debate at once (it records `interrupted` and
        # flushes the log). Signals that come while it flushes are ignored, so a
        # second Ctrl-C cannot tear the log.
        nonlocal interrupted
        if not interrupted and not engine.done():
            interrupted = True
            engine.cancel()

    stop_signals = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal)
            stop_signals.append(sig)
        except (NotImplementedError, RuntimeError):  # pragma: no cover
            pass
    try:
        try:
            state = await engine
        except asyncio.CancelledError:
            if not interrupted:
                raise
            state = session.state
            await session.close()
            interrupted = state.status != "completed"  # the signal came during the final flush
    finally:
        for sig in stop_signals:
            loop.remove_signal_handler(sig)
        session.bus.unsubscribe(printer_sub)
        await printer
    folder = session.folder.path
    if interrupted or state.status in ("interrupted", "stopped"):
        status = "interrupted" if interrupted else state.status
        print(f"moot: debate {status}; saved in {folder}; continue with `moot resume {state.id}"
              f"{_sd_flag(folder)}`", file=sys.stderr)
        return EXIT_INTERRUPTED if interrupted else EXIT_OK
    if state.status == "failed":
        print(f"moot: {state.error}; saved in {folder}; continue with `moot resume {state.id}{_sd_flag(folder)}`",
              file=sys.stderr)
        return EXIT_CONFIG if "budget" in (state.error or "") and "token" in (state.error or "") else EXIT_PROVIDER
    sys.stdout.write(solution_text(state))
    sys.stdout.flush()
    if output:
        _write_output(Path(output), state)
    print(f"saved in {folder}", file=sys.stderr)
    return EXIT_OK


def _sd_flag(folder: Path) -> str:
    root = folder.parent
    return "" if root.resolve() == Path(os.environ.get("MOOT_STATE_DIR") or "debates").resolve() else f" --state-dir {root}"


def _write_output(path: Path, state: Any) -> None:
    from core.printer import solution_text
    from core.store import write_atomic

    if path.suffix.lower() == ".json":
        data = state.final_solution.model_dump_json(indent=2) if state.final_solution else "null"
    else:
        data = f"# {state.problem.splitlines()[0]}\n\n" + solution_text(state)
    try:
        write_atomic(path, data.encode("utf-8"))
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from None


def _overrides(args: argparse.Namespace, *, with_rounds: bool = True) -> Overrides:
    roles = None
    if getattr(args, "agents", None):
        roles = [r.strip() for r in args.agents.split(",") if r.strip()]
    debate: dict[str, Any] = {}
    if getattr(args, "clarify", False):
        debate["clarify"] = True
    if getattr(args, "termination", None):
        debate["termination"] = args.termination
    if getattr(args, "max_cost", None) is not None:
        debate["max_cost_usd"] = args.max_cost
    if getattr(args, "max_tokens", None) is not None:
        debate["max_total_tokens"] = args.max_tokens
    return Overrides(rounds=getattr(args, "rounds", None) if with_rounds else None, roles=roles,
                     provider=args.provider, model=args.model, base_url=args.base_url, debate=debate)


def cmd_run(args: argparse.Namespace) -> int:
    from core.runner import SessionOptions, new_session

    from core.secrets import known_secrets, redact

    problem = redact(read_problem(args), known_secrets())  # a key pasted into a problem is never saved
    config = load_config(args.config, _overrides(args))
    smallest = min(
        (a.context or {}).get("max_context_tokens", config.debate.context.max_context_tokens)
        - (a.context or {}).get("reserve_output_tokens", config.debate.context.reserve_output_tokens)
        for a in [*config.active_agents, config.judge]
    )
    problem = check_problem_size(problem, smallest, args.model, args.allow_truncate)
    from core.ask import ask_on_stdin

    tui = _wants_tui(args) and _tui_available()
    session = new_session(problem, config, SessionOptions(state_dir=args.state_dir, demo_delay=_demo_delay(args, tui),
                                                          clarifier=None if tui else ask_on_stdin))
    if any(a.provider == "demo" for a in session.orchestrator.agents) and not args.provider:
        print("moot: no API key found (OPENAI_API_KEY / OPENROUTER_API_KEY); using the offline DEMO provider",
              file=sys.stderr)
    if tui:
        code = _load_tui().run_app(session, theme=args.theme)
    else:
        code = asyncio.run(_run_headless(session, args.output))
    if args.report and session.state.final_solution is not None:
        from core.report import render_report
        from core.store import write_atomic

        try:
            write_atomic(Path(args.report), render_report(session.state).encode("utf-8"))
        except OSError as exc:
            raise CliError(f"cannot write report {args.report}: {exc.strerror}") from None
        print(f"report written to {args.report}", file=sys.stderr)
    return code


def cmd_resume(args: argparse.Namespace) -> int:
    from core.ask import ask_on_stdin
    from core.runner import SessionOptions, resume_session

    tui = _wants_tui(args) and _tui_available()
    session = resume_session(args.id, SessionOptions(state_dir=args.state_dir, demo_delay=_demo_delay(args, tui),
                                                     clarifier=None if tui else ask_on_stdin),
                             _overrides(args, with_rounds=False))
    if tui:
        return _load_tui().run_app(session, theme=args.theme)
    return asyncio.run(_run_headless(session, None))


def cmd_list(args: argparse.Namespace) -> int:
    from core.store import StateDir, summarize_folder

    sd = StateDir(args.state_dir)
    rows = [summarize_folder(f) for f in sd.debates()]
    if not rows:
        print(f"no debates in {sd.root}", file=sys.stderr)
        return EXIT_OK
    for r in rows:
        demo = " [DEMO]" if r.get("demo") else ""
        print(f"{r['id']}  {r['status']:<14} {str(r['rounds']):>7}  {r.get('created', ''):16}  {r['problem']}{demo}")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from core.printer import solution_text
    from core.store import StateDir

    state = StateDir(args.state_dir).open(args.id).load()
    if args.json:
        print(state.model_dump_json(indent=2))
        return EXIT_OK
    print(f"debate {state.id} · {state.status} · {len(state.rounds)}/{state.total_rounds} rounds")
    print(f"problem: {state.problem.splitlines()[0] if state.problem else ''}")
    print("agents: " + ", ".join(f"{a.id} ({a.role}, {a.provider}:{a.model})" for a in state.agents))
    if any(a.provider == "demo" for a in [*state.agents, *([state.judge] if state.judge else [])]):
        print("provider: DEMO (offline, scripted answers, not a real model)")
    for rnd in state.rounds:
        kinds: dict[str, int] = {}
        for c in rnd.contributions:
            kinds[c.type] = kinds.get(c.type, 0) + 1
        summ = ", ".join(f"{k} {s.metadata.before_tokens}→{s.metadata.after_tokens} tok" for k, s in rnd.summaries.items())
        print(f"round {rnd.number}: " + ", ".join(f"{v} {k}s" for k, v in kinds.items()) + (f"; summaries: {summ}" if summ else ""))
    print(f"tokens: {state.totals.prompt_tokens} prompt, {state.totals.completion_tokens} completion")
    if state.error:
        print(f"error: {state.error}")
    if state.final_solution:
        print("\n" + solution_text(state))
    return EXIT_OK


def cmd_context(args: argparse.Namespace) -> int:
    from core.context.inspect import calls_for, format_calls
    from core.store import StateDir

    state = StateDir(args.state_dir).open(args.id).load()
    calls = calls_for(state, args.round, args.agent, args.phase)
    if args.json:
        print(json.dumps(calls, indent=2, ensure_ascii=False))
    else:
        print(format_calls(calls))
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from core.report import cmd_report as run_report

    return run_report(args)


def cmd_eval(args: argparse.Namespace) -> int:
    from core.evaluate import cmd_eval as run_eval

    return run_eval(args)


def _load_tui() -> Any:
    """The Textual front end, loaded only when a terminal view is wanted.

    This entry point is the one place in `core` that reaches `tui`; the engine,
    the store and the context code never do."""
    import importlib

    return importlib.import_module("tui.app")


def cmd_watch(args: argparse.Namespace) -> int:
    from core.store import StateDir

    sd = StateDir(args.state_dir)
    if not _wants_tui(args):
        if args.id is None:
            raise CliError("give a debate id to watch without a terminal (see `moot list`)")
        return asyncio.run(_tail_headless(sd.open(args.id)))
    app = _load_tui()
    if args.id is None:
        return app.run_picker(sd.root, args.theme)
    return app.run_watch(sd.open(args.id), args.theme)


def cmd_replay(args: argparse.Namespace) -> int:
    from core.store import StateDir

    sd = StateDir(args.state_dir)
    if not (sys.stdout.isatty() and sys.stdin.isatty()):
        raise CliError("replay needs a terminal; use `moot show` or `moot report` to read a debate")
    app = _load_tui()
    if args.id is None:
        return app.run_picker(sd.root, args.theme)
    return app.run_replay(sd.open(args.id), args.speed, args.theme)


async def _tail_headless(folder: Any) -> int:
    """Print a debate's events as they are appended, until it ends."""
    from core.events import TERMINAL_TYPES, parse_event
    from core.printer import describe

    offset = 0
    pending = b""
    while True:
        try:
            with open(folder.events_path, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read()
        except FileNotFoundError:
            raise CliError(f"no event log in {folder.path}") from None
        offset += len(chunk)
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            try:
                event = parse_event(line)
            except ValueError:
                raise CliError(f"{folder.events_path} is corrupt") from None
            text = describe(event)
            if text:
                print(text, flush=True)
            if event.type in TERMINAL_TYPES:
                return EXIT_OK
        await asyncio.sleep(0.2)


COMMANDS = {"run": cmd_run, "resume": cmd_resume, "list": cmd_list, "show": cmd_show, "context": cmd_context,
            "report": cmd_report, "eval": cmd_eval, "watch": cmd_watch, "replay": cmd_replay}


def main(argv: list[str] | None = None) -> int:
    import threading

    from core.context.inspect import InspectError
    from core.context.view import ContextOverflow
    from core.prompts import PromptError
    from core.providers.base import ProviderError
    from core.secrets import known_secrets, redact
    from core.store import StoreError

    def fail(message: object, code: int) -> int:
        """The one error line on stderr, any API key masked (servers echo keys in errors)."""
        print(f"moot: {redact(' '.join(str(message).split()), known_secrets())}", file=sys.stderr)
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
        return COMMANDS[args.command](args)
    except CliError as exc:
        return fail(exc, exc.code)
    except (ConfigError, PromptError, ContextOverflow) as exc:
        return fail(exc, EXIT_CONFIG)
    except (StoreError, InspectError) as exc:
        return fail(exc, EXIT_INPUT)
    except ProviderError as exc:
        return fail(exc, EXIT_PROVIDER)
    except KeyboardInterrupt:
        print("moot: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # the promise: one line, never a traceback (MOOT_DEBUG=1 shows it)
        if os.environ.get("MOOT_DEBUG"):
            raise
        return fail(f"unexpected error: {type(exc).__name__}: {exc}", 1)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

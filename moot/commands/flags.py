"""What several subcommands share: argument types, common flag groups, and turning flags into settings.

Nothing here imports more than argparse and `moot.core.errors` at module level: every
subcommand's module imports this one at start-up (start-up time is measured by
`bench/startup.py`); the engine is imported inside the functions that need it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NoReturn, cast

from moot.core.errors import ExitCode, InputError
from moot.core.models.provider_kinds import ModelProviders

if TYPE_CHECKING:
    from moot.core.config import Overrides
    from moot.core.models.terms import ProviderName
    from moot.core.storage.folder import DebateFolder

    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]
    """What a subcommand module's `register` adds its parsers to."""

Handler = Callable[[argparse.Namespace], int]
"""A subcommand: its parsed arguments in, the exit code out."""

PHASES = ["clarify", "summarize", "proposal", "critique", "refinement", "answer", "rank", "turn", "score",
          "synthesis"]

Completion = Literal["file", "directory", "debate"]
COMPLETE_ATTR = "moot_complete"
"""The attribute `completes` sets on an argument; `moot completion` turns it into the shell's completer."""


class Parser(argparse.ArgumentParser):
    """argparse with one error line (exit 2) instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        where = f"moot {self.prog.split()[-1]}" if " " in self.prog else "moot"
        print(f"moot: {message} (see `{where} --help`)", file=sys.stderr)
        raise SystemExit(ExitCode.INPUT)


def completes(action: argparse.Action, kind: Completion) -> argparse.Action:
    """Mark what the shell should offer for `action`: files, folders or saved debates' ids."""
    setattr(action, COMPLETE_ATTR, kind)
    return action


# ---------------------------------------------------------------- argument types


def finite_seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (0 <= v < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number ≥ 0: {text!r}")
    return v


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1: {text!r}")
    return v


def bounded(field: str) -> Callable[[str], int]:
    """An integer flag checked against the bounds of `debate.<field>` (exit 2, not a config error)."""

    def parse(text: str) -> int:
        from moot.core.models.config import DebateSettings

        v = positive_int(text)
        limit = next(m.le for m in DebateSettings.model_fields[field].metadata if hasattr(m, "le"))
        if v > limit:
            raise argparse.ArgumentTypeError(f"must be at most {limit}: {text!r}")
        return v

    return parse


def known_roles(text: str) -> list[str]:
    """`-a generalist,kiss`: comma-separated known roles, in order, repeats kept. A typo is a bad
    argument (exit 2), with a guess; the same mistake inside a config file is a configuration
    error (exit 4)."""
    from moot.core.agents import did_you_mean
    from moot.core.models.terms import ROLES

    roles = [r.strip() for r in text.split(",") if r.strip()]
    if not roles:
        raise argparse.ArgumentTypeError("name at least one role")
    for role in roles:
        if role not in ROLES:
            raise argparse.ArgumentTypeError(f"unknown role {role!r}{did_you_mean(role, ROLES)}; "
                                             f"expected one of {', '.join(ROLES)}")
    return roles


def role_list(text: str) -> list[str]:
    """`-a architect,security`: known roles (`known_roles`), each once."""
    roles = known_roles(text)
    twice = next((r for i, r in enumerate(roles) if r in roles[:i]), None)
    if twice is not None:
        raise argparse.ArgumentTypeError(f"role {twice!r} is named twice (each role is one agent; for two "
                                         "agents of one role, list them under [[agents]] in a config file)")
    return roles


# ---------------------------------------------------------------- flag groups


def add_state_dir(sp: argparse.ArgumentParser) -> None:
    completes(sp.add_argument("--state-dir", help="folder of saved debates (env MOOT_STATE_DIR, default ./debates)"),
              "directory")


def add_debate_id(sp: argparse.ArgumentParser, *, optional: bool = False) -> None:
    """The debate a command acts on: the positional `id` (its folder's name in the state dir)."""
    if optional:
        action = sp.add_argument("id", nargs="?", help="debate id (default: pick from a list)")
    else:
        action = sp.add_argument("id", help="debate id (see `moot list`)")
    completes(action, "debate")


def debate_name(text: str) -> str:
    """A debate id the caller chooses (`moot run --id NAME`): a plain name, never a path, so the
    folder it names is always directly inside the state dir."""
    import re

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", text) or ".." in text:
        raise argparse.ArgumentTypeError(
            f"{text[:80]!r} is not a debate name: 1–64 letters, digits, _ . - (starting with a letter or digit)")
    return text


def add_provider_args(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--provider", choices=ModelProviders(), help="default: openai when a key is set, else demo")
    sp.add_argument("--model", help="model for every agent and the judge")
    sp.add_argument("--base-url", help="OpenAI-compatible endpoint (OpenRouter, Ollama, vLLM, LM Studio…)")
    sp.add_argument("--demo-delay", type=finite_seconds, help="seconds between demo chunks (env MOOT_DEMO_DELAY)")


# ---------------------------------------------------------------- flags → settings


def demo_delay(args: argparse.Namespace, tui: bool) -> float | None:
    """The demo provider's pacing exists for watching: headless runs default to none."""
    if args.demo_delay is not None:
        return float(args.demo_delay)
    if not tui and os.environ.get("MOOT_DEMO_DELAY") is None:
        return 0.0
    return None  # the provider reads MOOT_DEMO_DELAY or its lively default


def overrides(args: argparse.Namespace, *, with_rounds: bool = True) -> Overrides:
    """The flags that override the config file, for every agent and the debate."""
    from moot.core.config import Overrides

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
    if getattr(args, "samples", None) is not None:
        debate["samples"] = args.samples
    if getattr(args, "topology", None):
        debate["topology"] = args.topology
    if getattr(args, "weight", None):
        debate["weight"] = args.weight
    if getattr(args, "trace", False):  # saved with a new debate, so that its resume traces too
        debate["trace"] = True
    if getattr(args, "ref", None):  # saved (absolute) with the debate: a resume keeps them
        debate["references"] = list(args.ref)
    return Overrides(rounds=getattr(args, "rounds", None) if with_rounds else None,
                     roles=getattr(args, "agents", None) or None,
                     provider=cast("ProviderName | None", args.provider), model=args.model, base_url=args.base_url,
                     debate=debate, humans=getattr(args, "human", None))


# ---------------------------------------------------------------- debates and files


def open_debate(args: argparse.Namespace) -> DebateFolder:
    """The saved debate `args.id` in `--state-dir` (StoreError, one line, when there is none)."""
    from moot.core.storage.state_dir import StateDir

    return StateDir(args.state_dir).open(args.id)


def write_file(path: Path, text: str | Iterable[str]) -> None:
    """Write a file atomically (`text` whole or in pieces); an unwritable path is a one-line error (exit 2)."""
    from moot.core.storage.files import write_atomic

    try:
        write_atomic(path, text.encode("utf-8") if isinstance(text, str) else (t.encode("utf-8") for t in text))
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def deliver(text: str | Iterable[str], output: str | None, what: str) -> None:
    """Write `text` (whole or in pieces) to the -o file (atomically, naming it on stderr) or to stdout."""
    if output:
        write_file(Path(output), text)
        print(f"{what} written to {output}", file=sys.stderr)
    else:
        for piece in [text] if isinstance(text, str) else text:
            sys.stdout.write(piece)
        sys.stdout.flush()

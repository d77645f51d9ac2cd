"""`moot init` (a commented starter `moot.toml` for an endpoint) and `moot config` (the effective
configuration, each value with its source, or the JSON Schema of the file)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from moot.core.errors import ExitCode, InputError

from .flags import add_state_dir, completes, role_list, write_file

if TYPE_CHECKING:
    from moot.core.config_template import Starter

    from .flags import Subcommands


def register(sub: Subcommands) -> None:
    from moot.core.models.terms import PROTOCOL_NAMES, ROLES

    init = sub.add_parser("init", help="write a commented moot.toml for an endpoint (asks in a terminal)")
    init.add_argument("--provider", choices=["openai", "demo"], help="openai (any OpenAI-compatible endpoint, the "
                                                                     "default) or demo (offline)")
    init.add_argument("--model", help="model for every agent and the judge")
    init.add_argument("--base-url", help="OpenAI-compatible endpoint (default: OpenAI's API)")
    init.add_argument("-a", "--agents", type=role_list, help=f"comma-separated roles: {', '.join(ROLES)}")
    init.add_argument("--protocol", choices=list(PROTOCOL_NAMES), help="debate shape (default rounds)")
    completes(init.add_argument("-o", "--output", default="moot.toml", help="where to write (default ./moot.toml)"),
              "file")
    init.add_argument("--force", action="store_true", help="replace an existing file")
    init.set_defaults(handler=cmd_init)

    cfg = sub.add_parser("config", help="show the effective configuration and where each value came from")
    completes(cfg.add_argument("-c", "--config", help="JSON or TOML config (default ./moot.toml when present)"),
              "file")
    cfg.add_argument("key", nargs="?", help="show only this key or section (debate.context, agents[0], judge.model…)")
    cfg.add_argument("--provider", choices=["demo", "openai"], help="as `moot run --provider`")
    cfg.add_argument("--model", help="as `moot run --model`")
    cfg.add_argument("--base-url", help="as `moot run --base-url`")
    cfg.add_argument("-a", "--agents", type=role_list, help="as `moot run --agents`")
    cfg.add_argument("--protocol", choices=list(PROTOCOL_NAMES), help="as `moot run --protocol`")
    cfg.add_argument("-r", "--rounds", type=int, help="as `moot run --rounds`")
    cfg.add_argument("--turns", type=int, help="as `moot run --turns`")
    add_state_dir(cfg)
    cfg.add_argument("--json", action="store_true", help="one JSON object: key → {value, source}")
    cfg.add_argument("--schema", action="store_true", help="print the JSON Schema of moot.toml instead")
    cfg.set_defaults(handler=cmd_config)


def _ask(prompt: str, default: str) -> str:
    try:
        answer = input(f"{prompt} [{default}]: ").strip()
    except EOFError:
        raise InputError("moot init: no answer (end of input)") from None
    return answer or default


def _interactive(choice: Starter) -> Starter:
    """Ask for what flags did not say, each with its default in brackets (Enter keeps it)."""
    from moot.core.models.provider_kinds import kind_of
    from moot.core.models.terms import PROTOCOL_NAMES, ROLES

    offered = ("openai", "demo")  # what the starter file knows how to write
    while (provider := _ask("Provider (openai: any OpenAI-compatible endpoint; demo: offline)",
                            choice.provider)) not in offered:
        print("  openai or demo", file=sys.stderr)
    choice.provider = provider
    if not kind_of(choice.provider).scripted:
        url = _ask("Base URL (Enter: OpenAI's API)", choice.base_url or "")
        choice.base_url = url or None
        choice.model = _ask("Model", choice.model or "gpt-4o-mini")
    while True:
        try:
            choice.roles = role_list(_ask(f"Agents ({', '.join(ROLES)})", ",".join(choice.roles)))
            break
        except argparse.ArgumentTypeError as exc:
            print(f"  {exc}", file=sys.stderr)
    while (protocol := _ask(f"Protocol ({', '.join(PROTOCOL_NAMES)})", choice.protocol)) not in PROTOCOL_NAMES:
        print(f"  one of {', '.join(PROTOCOL_NAMES)}", file=sys.stderr)
    choice.protocol = next(p for p in PROTOCOL_NAMES if p == protocol)
    return choice


def cmd_init(args: argparse.Namespace) -> int:
    from moot.core.config_template import SCHEMA_NAME, Starter, starter_config
    from moot.core.config_view import config_schema
    from moot.core.safety.secrets import strip_userinfo

    choice = Starter(provider=args.provider or "openai", model=args.model, base_url=args.base_url,
                     protocol=args.protocol or "rounds")
    if args.agents:
        choice.roles = list(args.agents)
    said = any(v is not None for v in (args.provider, args.model, args.base_url, args.agents, args.protocol))
    if not said and sys.stdin.isatty() and sys.stdout.isatty():
        choice = _interactive(choice)
    from moot.core.safety.sanitize import UNSAFE

    for flag, value in (("--model", choice.model), ("--base-url", choice.base_url)):
        if value is not None and (UNSAFE.search(value) or not value.strip()):
            raise InputError(f"{flag} cannot be empty or hold control or invisible characters")
    from moot.core.models.provider_kinds import kind_of

    if kind_of(choice.provider).scripted and (choice.base_url or choice.model):
        raise InputError("--provider demo runs offline: it takes no --base-url or --model")
    path = Path(args.output)
    if path.exists() and not args.force:
        raise InputError(f"{path} already exists; use --force to replace it, or -o to write elsewhere")
    text = starter_config(choice)
    write_file(path, text)
    write_file(path.parent / SCHEMA_NAME, json.dumps(config_schema(), indent=2) + "\n")
    if choice.base_url and strip_userinfo(choice.base_url) != choice.base_url:
        print("moot: the password in --base-url was left out of the file (set OPENAI_API_KEY instead)",
              file=sys.stderr)
    print(f"wrote {path} (and {path.parent / SCHEMA_NAME} for editors); check the endpoint with `moot doctor`")
    return ExitCode.OK


def _shown(key: str, value: object) -> str:
    """A value as TOML-like text; an unset one as `(unset)`, the key's presence as words."""
    if value is None:
        return "(unset)"
    if key == "api_key":
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def cmd_config(args: argparse.Namespace) -> int:
    from moot.core.config_view import config_schema, effective_settings
    from moot.core.safety.secrets import known_secrets, one_line, redact

    from .flags import overrides

    if args.schema:
        print(json.dumps(config_schema(), indent=2))
        return ExitCode.OK
    _, settings = effective_settings(args.config, overrides(args), state_dir=args.state_dir)
    secrets = known_secrets()
    if args.json:
        out = {s.key: {"value": s.value, "source": s.source} for s in settings}
        print(redact(json.dumps(out, indent=2), secrets))  # ASCII JSON: every control character escaped
        return ExitCode.OK
    if args.key:
        settings = [s for s in settings if s.key == args.key or s.key.startswith((f"{args.key}.", f"{args.key}["))]
        if not settings:
            raise InputError(f"no configuration key {args.key!r} (see `moot config`)")
    rows = [(one_line(f"{s.key} = {_shown(s.key, s.value)}", 300, secrets), one_line(s.source, 200, secrets))
            for s in settings]
    width = min(60, max(len(r[0]) for r in rows))
    for shown, source in rows:
        print(f"{shown:<{width}}  # {source}")
    return ExitCode.OK

"""`moot doctor`: can a debate run here? One line per check (key, endpoint, model, window, token
counts, tools, JSON answers, prompt cache, streaming usage, state dir, extras), each with what to
do; exit 0 when a debate can run, 1 when not. Every network probe is bounded by `--timeout`."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from moot.core.errors import ExitCode, InputError, MootError

from .flags import add_state_dir, completes, finite_seconds

if TYPE_CHECKING:
    from moot.core.providers.checkup import Finding

    from .flags import Subcommands

EXTRAS = (("mcp", "mcp", "MCP servers' tools, [[tools.mcp]]"),
          ("otel", "opentelemetry.sdk", "--trace to an OpenTelemetry collector"),
          ("serve", "textual_serve", "moot serve: the TUI in a browser"),
          ("ray", "ray", "moot bench --executor ray"))
"""Optional extras: (name, the module it installs, what it is for)."""

MARKS = {"ok": "✔", "fail": "✘", "warn": "!", "skip": "–"}
ASCII_MARKS = {"ok": "ok", "fail": "FAIL", "warn": "warn", "skip": "-"}


def register(sub: Subcommands) -> None:
    doc = sub.add_parser("doctor", help="check the key, the endpoint and the model before a debate (exit 1: "
                                        "a debate cannot run)")
    completes(doc.add_argument("-c", "--config", help="JSON or TOML config (default ./moot.toml when present)"),
              "file")
    doc.add_argument("--provider", choices=["demo", "openai"], help="as `moot run --provider`")
    doc.add_argument("--model", help="the model to check (default: the first agent's)")
    doc.add_argument("--base-url", help="the endpoint to check (default: the first agent's)")
    doc.add_argument("--timeout", type=finite_seconds, default=10.0, metavar="SECONDS",
                     help="deadline of each probe of the endpoint (default 10; they run at once)")
    add_state_dir(doc)
    doc.set_defaults(handler=cmd_doctor)


def _state_dir(path: Path) -> Finding:
    """Whether debates can be saved under `path` (made when the first debate starts; only probed here)."""
    import tempfile

    from moot.core.providers.checkup import Finding
    from moot.core.safety.secrets import one_line

    shown = one_line(str(path), 200)
    target = path
    while not target.exists() and target.parent != target:
        target = target.parent
    if not target.is_dir():
        return Finding("fail", f"state dir {shown}: {one_line(str(target), 200)} is not a folder "
                               "(use --state-dir or MOOT_STATE_DIR)")
    try:
        with tempfile.NamedTemporaryFile(dir=target, prefix=".moot-doctor-"):
            pass
    except OSError as exc:
        return Finding("fail", f"state dir {shown} is not writable ({exc.strerror or exc}); use --state-dir or "
                               "MOOT_STATE_DIR")
    return Finding("ok", f"state dir {shown} is writable" + ("" if path.exists() else " (made by the first debate)"))


def _extras() -> list[Finding]:
    from moot.core.providers.checkup import Finding

    out = []
    for name, module, what in EXTRAS:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        out.append(Finding("ok", f"extra {name} installed: {what}") if found else
                   Finding("skip", f"extra {name} not installed: pip install 'moot[{name}]' for {what}"))
    return out


def _checks(args: argparse.Namespace) -> list[Finding]:
    import asyncio  # here, not at `import moot.cli`

    from moot.core.config import load_config, resolve_agent
    from moot.core.config_view import find_config, key_origin
    from moot.core.models.provider_kinds import kind_of
    from moot.core.providers.checkup import Finding
    from moot.core.providers.keys import LOCAL_PLACEHOLDER_KEY, is_local_url, resolve_api_key
    from moot.core.providers.pool import default_provider_name
    from moot.core.safety.secrets import known_secrets, one_line
    from moot.core.storage.state_dir import default_state_dir

    from .flags import overrides

    found: list[Finding] = []
    try:
        config = load_config(args.config, overrides(args))
    except MootError as exc:
        return [Finding("fail", f"config: {one_line(str(exc), 300, known_secrets())}")]
    where = find_config(args.config).label
    found.append(Finding("ok", f"configuration loads ({'defaults: no ./moot.toml' if where == 'default' else where};"
                               " see it with `moot config`)"))
    default = default_provider_name(next((a.base_url for a in config.agents if a.base_url), None))
    models = [resolve_agent(a, config, default) for a in [*config.active_agents, config.judge]]
    first = next((a for a in models if not a.is_person), models[-1])
    base_url = args.base_url or first.config.base_url
    provider = args.provider or ("openai" if args.base_url else first.provider)
    if kind_of(provider).scripted:
        found.append(Finding("ok", "provider demo: offline, nothing to check (set OPENAI_API_KEY or --base-url to "
                                   "check a real endpoint)"))
    else:
        model = args.model or first.model
        origin = key_origin(base_url)
        if origin:
            found.append(Finding("ok", f"API key set ({origin})"))
        elif is_local_url(base_url):
            found.append(Finding("ok", "no API key needed (a server on this machine or a private network)"))
        else:
            found.append(Finding("fail", "no API key: set OPENAI_API_KEY (or OPENROUTER_API_KEY) in the environment "
                                         "or .env, or use --provider demo"))
            found.append(Finding("skip", "endpoint and model not checked (no key to send)"))
        if origin or is_local_url(base_url):
            key = resolve_api_key(base_url) or LOCAL_PLACEHOLDER_KEY
            window = first.context.max_context_tokens
            found += asyncio.run(_endpoint(base_url, model, key, float(args.timeout), window))
    found.append(_state_dir(Path(args.state_dir) if args.state_dir else default_state_dir()))
    return found + _extras()


async def _endpoint(base_url: str | None, model: str, key: str, deadline_s: float, window: int) -> list[Finding]:
    from moot.core.providers.checkup import Checkup
    from moot.core.providers.pool import url_secrets
    from moot.core.safety.secrets import known_secrets

    checkup = Checkup(base_url, model, key, deadline_s, [*known_secrets(), *url_secrets(base_url)])
    try:
        return await checkup.run(window)
    finally:
        await checkup.close()


def cmd_doctor(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise InputError("--timeout must be above 0 seconds")
    found = _checks(args)
    try:  # words instead of marks where the terminal's encoding has no ✔ (a Latin-1 console)
        "".join(MARKS.values()).encode(getattr(sys.stdout, "encoding", None) or "utf-8")
        marks = MARKS
    except (UnicodeEncodeError, LookupError):
        marks = ASCII_MARKS
    for finding in found:
        print(f"{marks[finding.mark]} {finding.text}")
    ok = not any(f.mark == "fail" for f in found)
    print(f"{marks['ok']} a debate can run here" if ok else
          f"{marks['fail']} a debate cannot run here: fix the lines marked {marks['fail']} above")
    return ExitCode.OK if ok else 1

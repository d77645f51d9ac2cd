"""The commented starter `moot.toml` that `moot init` writes for an endpoint.

It sets what the person named (provider, model, base URL, agents, protocol) and shows the
settings a first run with a real model most often needs, commented out at their defaults. It
never holds a key: a password in the base URL is dropped, and the file says where keys go.
The text is parsed and validated before it is returned, so what is written always loads.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field

from .config import DEFAULT_ROLES, Overrides, build_config
from .models.config import ContextConfig, DebateSettings
from .models.provider_kinds import kind_of
from .models.terms import ProtocolName, ProviderName
from .safety.secrets import strip_userinfo
from .version import VERSION

SCHEMA_NAME = "moot.schema.json"
"""Written beside the config: the file's `#:schema` comment points editors at it."""


@dataclass
class Starter:
    """What the person chose; None for the model means the provider's default."""

    provider: ProviderName = "openai"
    model: str | None = None
    base_url: str | None = None
    roles: list[str] = field(default_factory=lambda: list(DEFAULT_ROLES))
    protocol: ProtocolName = "rounds"


def _toml(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's, and non-ASCII is escaped so the file is plain)."""
    return json.dumps(value)


def starter_config(choice: Starter) -> str:
    """The text of `moot.toml` for `choice`, checked to load (ConfigError when it would not)."""
    base_url = strip_userinfo(choice.base_url) if choice.base_url else None
    where = base_url or ("the offline demo provider" if kind_of(choice.provider).scripted else "OpenAI's API")
    debate, context = DebateSettings(), ContextConfig()
    lines = [
        f"#:schema ./{SCHEMA_NAME}",
        f"# moot.toml: written by `moot init` (moot {VERSION}) for {where}.",
        "# See the effective configuration and where each value comes from: `moot config`.",
        "# Every key, its type and default: `moot config --schema` (also in the file named above).",
        "# Check the endpoint before a long debate: `moot doctor`.",
        "#",
        "# No key belongs in this file. Set OPENAI_API_KEY (or OPENROUTER_API_KEY) in the environment",
        "# or in a .env file beside it; a server on this machine or a private network needs none.",
        "",
        "[debate]",
        "# rounds, conversation, simultaneous, single, vote or council",
        f"protocol = {_toml(choice.protocol)}",
        "# Rounds of the rounds and simultaneous protocols; turns of a conversation.",
        f"# rounds = {debate.rounds}",
        f"# turns = {debate.turns}",
        "# Deadline of each attempt of a call, in seconds (a slow local model may need more).",
        f"# timeout_s = {debate.timeout_s:g}",
        "# Calls in flight at once; a local server with few slots wants fewer.",
        f"# max_concurrency = {debate.max_concurrency}",
        "# Stop starting calls once the debate has cost this much (USD).",
        "# max_cost_usd = 1.0",
        "# Constraints of the problem every debater keeps verbatim, never summarized away (`/pin` adds more).",
        '# pinned = ["p99 latency under 200 ms", "no new runtime dependencies"]',
        "",
        "[debate.context]",
        "# Each agent's whole request plus its answer fits here. moot asks llama.cpp, vLLM, Ollama and",
        "# OpenRouter for the model's window; `moot doctor` shows what the server states.",
        f"# max_context_tokens = {context.max_context_tokens}",
        f"# reserve_output_tokens = {context.reserve_output_tokens}",
    ]
    seat = [f"provider = {_toml(choice.provider)}"]
    if choice.model:
        seat.append(f"model = {_toml(choice.model)}")
    if base_url:
        seat.append(f"base_url = {_toml(base_url)}")
    for role in choice.roles:
        lines += ["", "[[agents]]", f"id = {_toml(role)}", f"role = {_toml(role)}", *seat]
    lines += ["", "# The judge synthesizes the final answer.", "[judge]", *seat, ""]
    text = "\n".join(lines)
    build_config(tomllib.loads(text), Overrides(), source="the starter moot.toml")
    return text

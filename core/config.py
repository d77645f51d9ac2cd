"""Loading the configuration: file (JSON or TOML) → defaults → CLI overrides → validation.

Two levels: `debate.summarization` / `debate.context` hold the debate-wide values and
each agent's `summarization` / `context` override them field by field.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .agents import did_you_mean
from .errors import ConfigError, InputError
from .inputs import MAX_CONFIG_BYTES, read_text_file
from .models.config import AgentConfig, ContextConfig, MootConfig, SummarizationConfig, merge
from .models.provider_kinds import PERSON, is_person, kind_of
from .models.terms import JUDGE_ID, ROLES, ProviderName
from .safety.sanitize import UNSAFE
from .safety.secrets import strip_userinfo

DEFAULT_ROLES = ("architect", "performance", "kiss")
DEFAULT_CONFIG_NAME = "moot.toml"


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def describe_validation_error(exc: ValidationError, source: str = "config") -> str:
    """The first error of a pydantic ValidationError as one readable line."""
    err = exc.errors()[0]
    where = _loc(tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))))
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        return f"{source}: unknown field {where!r}"
    if err["type"] == "literal_error" and where.endswith("role"):
        typo = err.get("input")
        hint = did_you_mean(typo, ROLES) if isinstance(typo, str) else ""
        msg = f"unknown role{hint}; expected one of {', '.join(ROLES)}"
    value = err.get("input")
    shown = "" if isinstance(value, (dict, list)) or value is None else f" (got {value!r})"
    where = f"{where}: " if where else ""
    more = f" (+{len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"{source}: {where}{msg}{shown}{more}"


def read_config_file(path: Path) -> dict[str, Any]:
    """Parse a JSON or TOML file into a dict; any problem becomes a ConfigError line."""
    text = read_text_file(path, "config file", max_bytes=MAX_CONFIG_BYTES, error=ConfigError)
    try:
        if path.suffix.lower() == ".toml":
            data: Any = tomllib.loads(text)
        else:
            data = json.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
        raise ConfigError(f"config file {path} is not valid {kind}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"config file {path} is nested too deeply") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold an object with debate/agents/judge")
    return data


@dataclass
class Overrides:
    """CLI flags that apply to every agent (and the judge)."""

    rounds: int | None = None
    roles: list[str] | None = None
    provider: ProviderName | None = None
    model: str | None = None
    base_url: str | None = None
    debate: dict[str, Any] | None = None
    """Debate-wide settings from flags (--clarify, --max-cost, …), merged over the file's."""
    humans: list[str] | None = None
    """`--human NAME`: people who take a seat, after the other agents (see `human_seat`)."""


def human_seat(name: str) -> dict[str, Any]:
    """The agent entry of a person named `name` (`--human Ada`): a generalist whose provider is
    `human`, its id the name in lower case with anything but letters, digits, `.`, `_` and `-`
    made a dash. InputError (a bad flag) for a name with control or invisible characters, or
    with nothing to make an id of."""
    if UNSAFE.search(name):
        raise InputError(f"--human {name!r}: a name cannot hold control or invisible characters")
    shown = " ".join(name.split())
    slug = re.sub(r"[^a-z0-9_.-]+", "-", shown.lower()).strip("-.")[:64]
    if not slug:
        raise InputError(f"--human {name!r}: a name needs a letter or a digit")
    return {"id": slug, "name": shown[:80], "role": "generalist", "provider": PERSON.name}


def _human_seats(names: list[str], data: dict[str, Any]) -> list[dict[str, Any]]:
    """The seats of `--human` NAMEs, refused as bad input when a seat's id would be another
    seat's, an agent's, the judge's or a role's name (each would be confused with the other in
    every transcript, and `moot ctl ID --as` could not tell them apart)."""
    protocol = data.get("debate", {}).get("protocol") if isinstance(data.get("debate"), dict) else None
    if protocol == "single":
        raise InputError("--protocol single runs one agent alone, so --human has no seat in it; "
                         "use rounds, conversation, simultaneous, vote or council")
    agents = {a.get("id") or a.get("role") for a in data["agents"] if isinstance(a, dict)}
    judge = data.get("judge")
    judge_id = judge.get("id", JUDGE_ID) if isinstance(judge, dict) else JUDGE_ID
    seats: list[dict[str, Any]] = []
    for name in names:
        seat = human_seat(name)
        sid = seat["id"]
        if any(s["id"] == sid for s in seats):
            raise InputError(f"--human {name!r}: the seat {sid!r} is asked for twice")
        if sid in agents:
            raise InputError(f"--human {name!r}: {sid!r} is already an agent of this debate; pick another name")
        if sid == judge_id:
            raise InputError(f"--human {name!r}: {sid!r} is the judge's id; pick another name")
        if sid in ROLES:
            raise InputError(f"--human {name!r}: {sid!r} is a role's name; pick another name")
        seats.append(seat)
    return seats


def load_config(path: str | Path | None, overrides: Overrides | None = None, *, cwd: Path | None = None) -> MootConfig:
    """The effective configuration: `path`, else ./moot.toml when present, else defaults."""
    data: dict[str, Any] = {}
    source = "config"
    if path is not None:
        data = read_config_file(Path(path))
        source = str(path)
    else:
        default = (cwd or Path.cwd()) / DEFAULT_CONFIG_NAME
        if default.is_file():
            data = read_config_file(default)
            source = str(default)
    return build_config(data, overrides or Overrides(), source=source)


def build_config(data: dict[str, Any], ov: Overrides, *, source: str = "config") -> MootConfig:
    try:  # deep copy, plain types (TOML dates and times become strings, which validation then judges)
        data = json.loads(json.dumps(data, default=str))
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{source}: holds text that is not valid Unicode (a lone surrogate escape such as "
                          "\\ud800)") from None
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"{source}: cannot read the configuration ({type(exc).__name__})") from None
    if ov.roles is not None:
        bad = [r for r in ov.roles if r not in ROLES]
        if bad:
            raise ConfigError(f"unknown role {bad[0]!r}{did_you_mean(bad[0], ROLES)}; "
                              f"expected one of {', '.join(ROLES)}")
        seen: dict[str, int] = {}
        data["agents"] = []
        for r in ov.roles:  # `-a generalist,generalist` → generalist, generalist-2
            seen[r] = seen.get(r, 0) + 1
            data["agents"].append({"id": r if seen[r] == 1 else f"{r}-{seen[r]}", "role": r})
    elif not data.get("agents"):
        data["agents"] = [{"id": r, "role": r} for r in DEFAULT_ROLES]
    if ov.humans and not isinstance(data["agents"], list):
        raise ConfigError(f"{source}: agents: must be a list")
    flags = dict(ov.debate or {})
    if ov.rounds is not None:
        flags["rounds"] = ov.rounds
    if flags:
        data.setdefault("debate", {})
        if not isinstance(data["debate"], dict):
            raise ConfigError(f"{source}: debate: must be an object")
        data["debate"].update(flags)
    if ov.humans:  # after the flags: `--protocol single` decides whether a person has a seat
        data["agents"] = [*data["agents"], *_human_seats(ov.humans, data)]
    try:
        cfg = MootConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, source)) from None
    if not cfg.active_agents:
        raise ConfigError(f"{source}: agents: at least one enabled agent is needed")
    for agent in [*cfg.agents, cfg.judge]:
        if is_person(agent.provider):
            continue  # a person's seat stays theirs whatever model the others run on
        if ov.provider:
            agent.provider = ov.provider
        if ov.model:
            agent.model = ov.model
        if ov.base_url:
            agent.base_url = ov.base_url
    return cfg


@dataclass(frozen=True)
class ResolvedAgent:
    """An agent with its two-level settings merged and its provider and model chosen."""

    config: AgentConfig
    summarization: SummarizationConfig
    context: ContextConfig
    provider: str
    model: str

    @property
    def id(self) -> str:
        return self.config.id

    @property
    def role(self) -> str:
        return self.config.role

    @property
    def name(self) -> str:
        return self.config.display_name

    @property
    def is_person(self) -> bool:
        """A seat a person takes (`provider = "human"`): their turns are typed, never a model call."""
        return kind_of(self.provider).person


def resolve_agent(agent: AgentConfig, cfg: MootConfig, default_provider: str) -> ResolvedAgent:
    provider = agent.provider or default_provider
    kind = kind_of(provider)
    model = kind.default_model if kind.person else agent.model or kind.default_model
    try:
        return ResolvedAgent(
            config=agent,
            summarization=merge(cfg.debate.summarization, agent.summarization),
            context=merge(cfg.debate.context, agent.context),
            provider=provider,
            model=model,
        )
    except ValidationError as exc:
        where = "judge" if agent.id == cfg.judge.id else f"agent {agent.id}"
        raise ConfigError(describe_validation_error(exc, where)) from None


def public_config(cfg: MootConfig) -> dict[str, Any]:
    """The configuration as saved with a debate. It holds no secrets: keys never enter it,
    and a password written into a base URL (`http://user:KEY@host`) is removed."""
    data = cfg.model_dump(mode="json", exclude_none=True)
    for agent in [*data.get("agents", []), data.get("judge", {})]:
        if agent.get("base_url"):
            agent["base_url"] = strip_userinfo(agent["base_url"])
    return data

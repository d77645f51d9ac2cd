"""The effective configuration, each value with where it came from, and the JSON Schema of `moot.toml`.

A value comes from the first of: a flag, the config file (`-c FILE` or `./moot.toml`), the
environment (a key that makes `openai` the default provider, `MOOT_STATE_DIR`), the default.
Keys themselves are never shown: only whether one is set, and where.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from .config import (
    DEFAULT_CONFIG_NAME,
    Overrides,
    build_config,
    read_config_file,
    resolve_agent,
)
from .models.config import MootConfig
from .models.docstrings import attribute_docs
from .models.terms import HUMAN
from .safety.secrets import KEY_NAMES, strip_userinfo

DEFAULT = "default"

OVERRIDE_FLAGS = {"rounds": "--rounds", "roles": "--agents", "provider": "--provider", "model": "--model",
                  "base_url": "--base-url"}
"""The flag that sets each field of `Overrides` (what `moot config` names as a value's source)."""
DEBATE_FLAGS = {"clarify": "--clarify", "termination": "--termination", "max_cost_usd": "--max-cost",
                "max_total_tokens": "--max-tokens", "protocol": "--protocol", "turns": "--turns",
                "samples": "--samples", "trace": "--trace", "references": "--ref"}
"""The flag that sets each `debate.*` key that has one."""

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class Setting:
    """One leaf of the configuration: its dotted key, its value (JSON types) and its source."""

    key: str
    value: Any
    source: str


def _key(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = part if _BARE_KEY.match(part) else json.dumps(part, ensure_ascii=False)
            out += f".{name}" if out else name
    return out


def _present(data: Any, path: tuple[str | int, ...]) -> bool:
    for part in path:
        if isinstance(part, int):
            if not isinstance(data, list) or part >= len(data):
                return False
        elif not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def _leaves(value: Any, path: tuple[str | int, ...]) -> list[tuple[tuple[str | int, ...], Any]]:
    """Every leaf under `value`: objects open up, and so do lists of objects (agents, MCP servers);
    a list of plain values, an empty object and an empty list are one leaf each."""
    if isinstance(value, dict) and value:
        return [leaf for k, v in value.items() for leaf in _leaves(v, (*path, k))]
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, (*path, i))]
    return [(path, value)]


def key_origin(base_url: str | None = None, dotenv_path: Path = Path(".env")) -> str | None:
    """Where the API key for `base_url` is found (`OPENAI_API_KEY in the environment`, `… in
    .env`), in the order `providers/keys.py` looks; None when there is none. Never the key."""
    names = list(KEY_NAMES)
    if base_url and "openrouter" in base_url.lower():
        names.reverse()
    file_values: dict[str, str | None] = {}
    if dotenv_path.is_file():
        from dotenv import dotenv_values

        file_values = dict(dotenv_values(dotenv_path))
    for name in names:
        if (os.environ.get(name) or "").strip():
            return f"{name} in the environment"
        if (file_values.get(name) or "").strip():
            return f"{name} in {dotenv_path}"
    return None


@dataclass(frozen=True)
class ConfigSource:
    """The file a configuration was read from (None: defaults only) and how it was chosen."""

    path: Path | None
    label: str


def find_config(path: str | Path | None, cwd: Path | None = None) -> ConfigSource:
    if path is not None:
        return ConfigSource(Path(path), f"-c {path}")
    default = (cwd or Path.cwd()) / DEFAULT_CONFIG_NAME
    return ConfigSource(default, f"./{DEFAULT_CONFIG_NAME}") if default.is_file() else ConfigSource(None, DEFAULT)


def effective_settings(path: str | Path | None, ov: Overrides, *, state_dir: str | None = None,
                       cwd: Path | None = None) -> tuple[MootConfig, list[Setting]]:
    """The configuration a run with these flags would use, leaf by leaf, with each leaf's source.
    Raises ConfigError (one line) for a file or flag that does not validate."""
    found = find_config(path, cwd)
    data = read_config_file(found.path) if found.path is not None else {}
    cfg = build_config(data, ov, source=str(found.path) if found.path is not None else "config")
    dump = cfg.model_dump(mode="json")
    origin = key_origin(next((a.base_url for a in cfg.agents if a.base_url), None))
    from .providers.pool import default_provider_name

    default_provider = default_provider_name(next((a.base_url for a in cfg.agents if a.base_url), None))
    resolved: dict[tuple[str | int, ...], str] = {}
    for i, agent in enumerate([*cfg.agents, cfg.judge]):
        at: tuple[str | int, ...] = ("judge",) if i == len(cfg.agents) else ("agents", i)
        entry = dump["judge"] if i == len(cfg.agents) else dump["agents"][i]
        person = resolve_agent(agent, cfg, default_provider)
        if entry.get("provider") is None:
            entry["provider"] = person.provider
            resolved[(*at, "provider")] = (f"environment ({origin})" if origin and not agent.base_url
                                           else DEFAULT)
        if entry.get("model") is None:
            entry["model"] = person.model
        if entry.get("base_url"):
            entry["base_url"] = strip_userinfo(entry["base_url"])
    debate_flags = set((ov.debate or {}).keys()) | ({"rounds"} if ov.rounds is not None else set())
    settings: list[Setting] = []
    for leaf, value in _leaves(dump, ()):
        settings.append(Setting(_key(leaf), value, _source(leaf, ov, debate_flags, data, found.label, resolved)))
    env_dir = os.environ.get("MOOT_STATE_DIR")
    settings.append(Setting("state_dir", state_dir or env_dir or "debates",
                            "--state-dir" if state_dir else "environment (MOOT_STATE_DIR)" if env_dir else DEFAULT))
    settings.append(Setting("api_key", "(set, never shown)" if origin else None, origin or DEFAULT))
    return cfg, settings


def _source(leaf: tuple[str | int, ...], ov: Overrides, debate_flags: set[str], data: dict[str, Any], label: str,
            resolved: dict[tuple[str | int, ...], str]) -> str:
    if leaf[:1] == ("debate",) and len(leaf) == 2 and leaf[1] in debate_flags:
        return "--rounds" if leaf[1] == "rounds" else DEBATE_FLAGS.get(str(leaf[1]), "a flag")
    if leaf[:1] == ("agents",) and ov.roles is not None:
        return OVERRIDE_FLAGS["roles"] if len(leaf) == 3 and leaf[2] in ("id", "role") else DEFAULT
    if leaf[:1] in (("agents",), ("judge",)) and leaf[-1] in ("provider", "model", "base_url"):
        if getattr(ov, str(leaf[-1])) and not _is_person(data, leaf):
            return OVERRIDE_FLAGS[str(leaf[-1])]
    if _present(data, leaf):
        return label
    if leaf[:1] == ("agents",) and not data.get("agents"):
        return DEFAULT
    return resolved.get(leaf, DEFAULT)


def _is_person(data: dict[str, Any], leaf: tuple[str | int, ...]) -> bool:
    at = leaf[:-1]
    return _present(data, (*at, "provider")) and _get(data, (*at, "provider")) == HUMAN


def _get(data: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


class _DescribedFields(GenerateJsonSchema):
    """A model's fields described by the docstrings written under them, read only when a
    schema is asked for (`models.docstrings`)."""

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        docs = attribute_docs(schema["cls"])
        for name, field in json_schema.get("properties", {}).items():
            if name in docs:
                field.setdefault("description", docs[name])
        return json_schema


def config_schema() -> dict[str, Any]:
    """The JSON Schema of a config file (`moot.toml` or JSON): every key, its type, default and
    description (the models' field docstrings), for editors (taplo's `#:schema`) and the docs."""
    schema = MootConfig.model_json_schema(schema_generator=_DescribedFields)
    # The judge is an agent whose id may be left out (it is `judge`).
    judge = json.loads(json.dumps(schema["$defs"]["AgentConfig"]))
    judge["required"] = [r for r in judge.get("required", []) if r != "id"]
    judge["title"] = "JudgeConfig"
    schema["$defs"]["JudgeConfig"] = judge
    schema["properties"]["judge"] = {**schema["properties"]["judge"], "$ref": "#/$defs/JudgeConfig"}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "title": "moot.toml"}

"""Who evaluates: the evaluators of a config file (`moot eval -c FILE`), or one per model the
debate ran on, with the flags over each one's own settings."""

from __future__ import annotations

from pathlib import Path

from pydantic import ConfigDict, Field, ValidationError, model_validator

from ..config import describe_validation_error, read_config_file
from ..errors import ConfigError
from ..models.base import Model
from ..models.config import KnownProvider
from ..models.provider_kinds import kind_of
from ..models.state import DebateState
from ..providers.pool import default_provider_name


class EvaluatorConfig(Model):
    """One evaluator. Unset provider/model fall back as for debaters (demo without a key)."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    name: str | None = None
    model: str | None = None
    provider: KnownProvider | None = None
    """Any provider that runs a model (a person's seat evaluates nothing: its debates are
    evaluated on `openai`, or the demo without a key)."""
    base_url: str | None = None
    temperature: float = Field(0.1, ge=0, le=2)
    system_prompt_path: str | None = None
    user_prompt_path: str | None = None
    timeout_s: float = Field(60.0, gt=0, le=86400, allow_inf_nan=False)


class EvalConfig(Model):
    model_config = ConfigDict(extra="forbid")
    agents: list[EvaluatorConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> EvalConfig:
        ids = [a.id for a in self.agents]
        dup = next((i for i in ids if ids.count(i) > 1), None)
        if dup:
            raise ValueError(f"duplicate evaluator id {dup!r}")
        return self


def load_eval_config(path: Path, *, provider: str | None = None, model: str | None = None,
                     base_url: str | None = None) -> list[EvaluatorConfig]:
    """Evaluators with CLI overrides applied and provider/model resolved; ConfigError (exit 4) if invalid."""
    try:
        cfg = EvalConfig.model_validate(read_config_file(path))
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, str(path))) from None
    return _resolved(cfg.agents, provider, model, base_url)


def default_evaluators(state: DebateState, *, provider: str | None = None, model: str | None = None,
                       base_url: str | None = None) -> list[EvaluatorConfig]:
    """`moot eval ID` without `-c`: one evaluator per model the debate ran on (the judge's first),
    on the provider and endpoint recorded for it, so a demo debate is evaluated offline and a
    debate on a local server by that server. The flags override as they do a file's; a
    `--provider` or `--base-url` that leaves the recorded provider drops its model and endpoint."""
    urls: dict[str, str | None] = {}
    for entry in [*state.config.get("agents", []), state.config.get("judge", {})]:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            urls[entry["id"]] = entry.get("base_url") if isinstance(entry.get("base_url"), str) else None
    recorded: list[EvaluatorConfig] = []
    for person in [state.judge, *state.agents]:
        if person is None:
            continue
        prov = provider or ("openai" if base_url else person.provider)
        kept = prov == person.provider
        recorded.append(EvaluatorConfig(id="eval", provider="openai" if kind_of(prov).person else prov,
                                        model=person.model if kept else None,
                                        base_url=urls.get(person.id) if kept else None))
    if not recorded:
        raise ConfigError(f"debate {state.id} records no agents to take a provider from; give -c FILE")
    unique: list[EvaluatorConfig] = []
    for ev in _resolved(recorded, None, model, base_url):
        if all((e.provider, e.model, e.base_url) != (ev.provider, ev.model, ev.base_url) for e in unique):
            unique.append(ev.model_copy(update={"id": f"eval-{len(unique) + 1}"}))
    return unique


def _resolved(evaluators: list[EvaluatorConfig], provider: str | None, model: str | None,
              base_url: str | None) -> list[EvaluatorConfig]:
    """Flags over each evaluator's own settings; an unset provider and model as for debaters."""
    out = []
    for ev in evaluators:
        url = base_url or ev.base_url
        prov = provider or ev.provider or default_provider_name(url)
        mod = model or ev.model or kind_of(prov).default_model
        out.append(ev.model_copy(update={"provider": prov, "model": mod, "base_url": url}))
    return out

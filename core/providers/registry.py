"""Providers by name: a `ProviderSpec` (its kind and a factory) for each name a configuration may use.

The built-in ones are registered here; a third-party package adds one with an entry point in
the `moot.providers` group that loads a `ProviderSpec`, e.g. in its pyproject.toml:

    [project.entry-points."moot.providers"]
    anthropic = "moot_anthropic:SPEC"

The factory gets a `ProviderContext` (the pool's settings, the secrets to redact) and the
agent's base URL (None unless its kind is `per_base_url`), and returns an object that meets
`providers.base.Provider`. Its client library is imported inside the factory, so a debate
that does not use it never pays for the import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..models.provider_kinds import DEMO, OPENAI, PERSON, RESPONSES, ProviderKind, load_plugin, provider_names, register_kind
from .base import Provider
from .keys import require_api_key, url_secrets


@dataclass
class ProviderContext:
    """What a factory may use: the pool's settings, and where to add the secrets it will send."""

    demo_delay: float | None = None
    timeout_s: float = 120.0
    max_retries: int = 3
    backoff_base_s: float = 0.5
    secrets: list[str] = field(default_factory=list)
    """API keys in use, for redaction of anything written: a factory adds the ones it sends."""
    people: Callable[[], Provider] | None = None
    """Makes the provider of a person's seat: set by the debate that owns the desk where their
    turns wait (`Orchestrator`), so providers know nothing of seats."""

    def add_secret(self, secret: str) -> None:
        if secret not in self.secrets:
            self.secrets.append(secret)


@dataclass(frozen=True)
class ProviderSpec:
    kind: ProviderKind
    make: Callable[[ProviderContext, str | None], Provider]


_SPECS: dict[str, ProviderSpec] = {}


def register(spec: ProviderSpec) -> ProviderSpec:
    """Add a provider (or replace one of the same name)."""
    _SPECS[spec.kind.name] = spec
    register_kind(spec.kind)
    return spec


def spec_of(name: str) -> ProviderSpec:
    spec = _SPECS.get(name)
    if spec is None:
        loaded = load_plugin(name)
        if isinstance(loaded, ProviderSpec):
            spec = register(loaded)
    if spec is None:
        names = provider_names()
        raise ConfigError(f"unknown provider {name!r}; expected {', '.join(names[:-1])} or {names[-1]}")
    return spec


def _person(ctx: ProviderContext, base_url: str | None) -> Provider:
    if ctx.people is None:
        raise ConfigError("a person's seat (provider = \"human\") is only taken in a debate")
    return ctx.people()


def _demo(ctx: ProviderContext, base_url: str | None) -> Provider:
    from .demo import DemoProvider

    return DemoProvider(delay_s=ctx.demo_delay)


def _openai(ctx: ProviderContext, base_url: str | None) -> Provider:
    # The SDK is imported only when an openai agent exists (start-up time).
    from .openai import OpenAIProvider

    api_key, extra = _keys(ctx, base_url)
    return OpenAIProvider(api_key, base_url, timeout_s=ctx.timeout_s, max_retries=ctx.max_retries,
                          backoff_base_s=ctx.backoff_base_s, secrets=extra)


def _responses(ctx: ProviderContext, base_url: str | None) -> Provider:
    from .responses import ResponsesProvider

    api_key, extra = _keys(ctx, base_url)
    return ResponsesProvider(api_key, base_url, timeout_s=ctx.timeout_s, max_retries=ctx.max_retries,
                             backoff_base_s=ctx.backoff_base_s, secrets=extra)


def _keys(ctx: ProviderContext, base_url: str | None) -> tuple[str, list[str]]:
    """The key an OpenAI-style endpoint is sent and the secrets in its URL, all added to `ctx`."""
    api_key, secret = require_api_key(base_url)
    extra = url_secrets(base_url)
    for s in ([api_key] if secret else []) + extra:
        ctx.add_secret(s)
    return api_key, extra


register(ProviderSpec(PERSON, _person))
register(ProviderSpec(DEMO, _demo))
register(ProviderSpec(OPENAI, _openai))
register(ProviderSpec(RESPONSES, _responses))

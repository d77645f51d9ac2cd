"""Choosing and sharing provider clients: one per (provider, base URL)."""

from __future__ import annotations

from collections.abc import Callable

from ..config import ResolvedAgent
from .base import Provider
from .keys import has_api_key, url_secrets
from .registry import ProviderContext, spec_of

__all__ = ["ProviderPool", "default_provider_name", "url_secrets"]


def default_provider_name(base_url: str | None = None) -> str:
    """`openai` when a key is configured (env or .env) or a base URL is given, else `demo`."""
    return "openai" if (base_url or has_api_key(None)) else "demo"


class ProviderPool:
    def __init__(self, *, demo_delay: float | None = None, timeout_s: float = 120.0, max_retries: int = 3,
                 backoff_base_s: float = 0.5) -> None:
        self.demo_delay = demo_delay
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self._providers: dict[tuple[str, str | None], Provider] = {}
        self.secrets: list[str] = []
        """API keys in use, for redaction of anything written."""
        self.people: Callable[[], Provider] | None = None
        """Makes the provider of a person's seat (`provider = "human"`): set by the debate that
        owns the desk where their turns wait (`Orchestrator`), so providers know nothing of seats."""

    def get(self, agent: ResolvedAgent) -> Provider:
        spec = spec_of(agent.provider)
        key = (agent.provider, agent.config.base_url if spec.kind.per_base_url else None)
        provider = self._providers.get(key)
        if provider is None:
            context = ProviderContext(demo_delay=self.demo_delay, timeout_s=self.timeout_s,
                                      max_retries=self.max_retries, backoff_base_s=self.backoff_base_s,
                                      secrets=self.secrets, people=self.people)
            provider = self._providers[key] = spec.make(context, key[1])
        return provider

    async def aclose(self) -> None:
        for p in self._providers.values():
            await p.aclose()
        self._providers.clear()

"""Choosing and sharing provider clients: one per (provider, base URL)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from urllib.parse import unquote, urlsplit

from ..config import ResolvedAgent
from ..errors import ConfigError
from .base import Provider
from .keys import has_api_key, require_api_key

def default_provider_name(base_url: str | None = None) -> str:
    """`openai` when a key is configured (env or .env) or a base URL is given, else `demo`."""
    return "openai" if (base_url or has_api_key(None)) else "demo"


def url_secrets(base_url: str | None) -> list[str]:
    """A password (or token) written into a base URL's userinfo: a secret like any key, and so
    is its Basic credential (`user:password` in Base64), which the HTTP client sends instead of
    the key and a server may echo."""
    if not base_url:
        return []
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return []
    found = [unquote(s) for s in (parts.password, parts.username) if s and len(s) >= 8]
    if parts.password:
        basic = f"{unquote(parts.username or '')}:{unquote(parts.password)}".encode()
        found.append(base64.b64encode(basic).decode("ascii"))
    return found


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
        key = (agent.provider, agent.config.base_url if agent.provider == "openai" else None)
        provider = self._providers.get(key)
        if provider is None:
            provider = self._providers[key] = self._make(*key)
        return provider

    def _make(self, name: str, base_url: str | None) -> Provider:
        if name == "human":
            if self.people is None:
                raise ConfigError("a person's seat (provider = \"human\") is only taken in a debate")
            return self.people()
        if name == "demo":
            from .demo import DemoProvider

            return DemoProvider(delay_s=self.demo_delay)
        if name == "openai":
            # The SDK is imported only when an openai agent exists (start-up time).
            from .openai import OpenAIProvider

            api_key, secret = require_api_key(base_url)
            extra = url_secrets(base_url)
            for s in ([api_key] if secret else []) + extra:
                if s not in self.secrets:
                    self.secrets.append(s)
            return OpenAIProvider(
                api_key,
                base_url,
                timeout_s=self.timeout_s,
                max_retries=self.max_retries,
                backoff_base_s=self.backoff_base_s,
                secrets=extra,
            )
        raise ConfigError(f"unknown provider {name!r}; expected openai, demo or human")

    async def aclose(self) -> None:
        for p in self._providers.values():
            await p.aclose()
        self._providers.clear()

"""Choosing and sharing provider clients: one per (provider, base URL)."""

from __future__ import annotations

from core.config import ConfigError, ResolvedAgent
from core.providers.base import Provider


def default_provider_name(base_url: str | None = None) -> str:
    """`openai` when a key is configured (env or .env) or a base URL is given, else `demo`."""
    from core.providers.openai import resolve_api_key

    return "openai" if (base_url or resolve_api_key(None)) else "demo"


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

    def get(self, agent: ResolvedAgent) -> Provider:
        key = (agent.provider, agent.config.base_url if agent.provider == "openai" else None)
        if key not in self._providers:
            self._providers[key] = self._make(*key)
        return self._providers[key]

    def _make(self, name: str, base_url: str | None) -> Provider:
        if name == "demo":
            from core.providers.demo import DemoProvider

            return DemoProvider(delay_s=self.demo_delay)
        if name == "openai":
            from core.providers.openai import OpenAIProvider, is_local_url, resolve_api_key

            api_key = resolve_api_key(base_url)
            if not api_key:
                if base_url and is_local_url(base_url):
                    api_key = "not-needed"
                else:
                    raise ConfigError(
                        "no API key: set OPENAI_API_KEY (or OPENROUTER_API_KEY) in the environment or .env, "
                        "or use --provider demo"
                    )
            else:
                self.secrets.append(api_key)
            return OpenAIProvider(
                api_key,
                base_url,
                timeout_s=self.timeout_s,
                max_retries=self.max_retries,
                backoff_base_s=self.backoff_base_s,
            )
        raise ConfigError(f"unknown provider {name!r}; expected openai or demo")

    async def aclose(self) -> None:
        for p in self._providers.values():
            await p.aclose()
        self._providers.clear()

"""API keys: where they come from, and the one place that decides a key is missing.

Keys come from the environment or a `.env` file (read, never loaded into
`os.environ`) and are never written anywhere: the saved configuration has none, and
everything written is masked with `moot.core.safety.secrets.redact`.
"""

from __future__ import annotations

import base64
import ipaddress
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..errors import ConfigError
from ..safety.secrets import KEY_NAMES

LOCAL_PLACEHOLDER_KEY = "not-needed"
"""Sent to local servers (Ollama, vLLM, LM Studio, llama.cpp) that ignore the key but the SDK wants one."""


def is_local_url(base_url: str | None) -> bool:
    """True for loopback, localhost and private-network hosts, where no key is needed."""
    if not base_url:
        return False
    host = (urlsplit(base_url if "//" in base_url else f"//{base_url}").hostname or "").lower()
    if host in ("localhost", "host.docker.internal") or host.endswith((".localhost", ".local")):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified


def resolve_api_key(
    base_url: str | None,
    *,
    env: Mapping[str, str] | None = None,
    dotenv_path: str | Path | None = ".env",
) -> str | None:
    """The key for `base_url`: OPENROUTER_API_KEY for OpenRouter, else OPENAI_API_KEY.

    Each name is looked up in the process environment, then in `.env`; the other
    provider's name is the fallback."""
    env = os.environ if env is None else env
    names = list(KEY_NAMES)
    if base_url and "openrouter" in base_url.lower():
        names.reverse()
    file_values: Mapping[str, str | None] = {}
    if dotenv_path is not None and Path(dotenv_path).is_file():
        from dotenv import dotenv_values

        file_values = dotenv_values(dotenv_path)
    for name in names:
        for source in (env, file_values):
            value = (source.get(name) or "").strip()
            if value:
                return value
    return None


def require_api_key(base_url: str | None) -> tuple[str, bool]:
    """(key, is_secret) for an OpenAI-compatible endpoint: the configured key, or a placeholder
    for a local server. The one place that decides a key is missing (a ConfigError, exit 4)."""
    key = resolve_api_key(base_url)
    if key:
        return key, True
    if is_local_url(base_url):
        return LOCAL_PLACEHOLDER_KEY, False
    raise ConfigError(
        "no API key: set OPENAI_API_KEY (or OPENROUTER_API_KEY) in the environment or .env, "
        "or use --provider demo"
    )


def has_api_key(base_url: str | None = None) -> bool:
    return resolve_api_key(base_url) is not None


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

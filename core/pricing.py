"""Prices per model, in USD per million tokens (input, output), and the cost of a call.

Built in for common models (list prices as published by their vendors in 2025;
override them, or add your own, with `debate.prices` in the config). Unknown models
and the offline demo provider cost nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

BUILTIN_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-4": (30.00, 60.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o1": (15.00, 60.00),
    "o1-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
    "gemini-1.5-pro": (1.25, 5.00),
    "gemini-1.5-flash": (0.075, 0.30),
    "gemini-2.0-flash": (0.10, 0.40),
    "llama-3.1-70b-instruct": (0.40, 0.40),
    "llama-3.1-8b-instruct": (0.05, 0.08),
    "demo": (0.0, 0.0),
}


def price_for(model: str, overrides: Mapping[str, tuple[float, float]] | None = None) -> tuple[float, float] | None:
    """(input, output) USD per million tokens: an override, an exact built-in, or the
    longest built-in prefix ("gpt-4o-2024-08-06" → gpt-4o; "openai/gpt-4o" → gpt-4o)."""
    if overrides and model in overrides:
        given_in, given_out = overrides[model]
        return given_in, given_out
    name = model.lower().rsplit("/", 1)[-1]
    table: dict[str, tuple[float, float]] = dict(BUILTIN_PRICES)
    table.update({k.lower(): (v[0], v[1]) for k, v in (overrides or {}).items()})
    if name in table:
        return table[name]
    best = max((k for k in table if name.startswith(k)), key=len, default=None)
    return table[best] if best else None


def call_cost(model: str, prompt_tokens: int, completion_tokens: int,
              overrides: Mapping[str, tuple[float, float]] | None = None) -> float:
    price = price_for(model, overrides)
    if price is None:
        return 0.0
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000

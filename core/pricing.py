"""Prices per model, in USD per million tokens (input, output, cached input), and the cost of a call.

Built in for common models (list prices as published by their vendors in 2025;
override them, or add your own, with `debate.prices` in the config). Unknown models
and the offline demo provider cost nothing.

Cached input is the part of a prompt the provider served from its prompt cache (the
`cached_tokens` of its usage): OpenAI bills it at a quarter to a tenth of fresh input,
Anthropic's and Google's cache reads at a tenth to a quarter. Models without a discount
list it at their input price. What writing the cache costs (Anthropic bills cache writes
at 1.25× input) is not modelled: OpenAI-compatible usage does not report it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple


class Rates(NamedTuple):
    """USD per million tokens."""

    input: float
    output: float
    cached_input: float


BUILTIN_PRICES: dict[str, Rates] = {
    "gpt-4o": Rates(2.50, 10.00, 1.25),
    "gpt-4o-mini": Rates(0.15, 0.60, 0.075),
    "gpt-4.1": Rates(2.00, 8.00, 0.50),
    "gpt-4.1-mini": Rates(0.40, 1.60, 0.10),
    "gpt-4.1-nano": Rates(0.10, 0.40, 0.025),
    "gpt-4-turbo": Rates(10.00, 30.00, 10.00),
    "gpt-4": Rates(30.00, 60.00, 30.00),
    "gpt-3.5-turbo": Rates(0.50, 1.50, 0.50),
    "gpt-5": Rates(1.25, 10.00, 0.125),
    "gpt-5-mini": Rates(0.25, 2.00, 0.025),
    "gpt-5-nano": Rates(0.05, 0.40, 0.005),
    "o1": Rates(15.00, 60.00, 7.50),
    "o1-mini": Rates(1.10, 4.40, 0.55),
    "o3": Rates(2.00, 8.00, 0.50),
    "o3-mini": Rates(1.10, 4.40, 0.55),
    "o4-mini": Rates(1.10, 4.40, 0.275),
    "claude-3-5-sonnet": Rates(3.00, 15.00, 0.30),
    "claude-3-5-haiku": Rates(0.80, 4.00, 0.08),
    "claude-sonnet-4": Rates(3.00, 15.00, 0.30),
    "claude-opus-4": Rates(15.00, 75.00, 1.50),
    "gemini-1.5-pro": Rates(1.25, 5.00, 0.3125),
    "gemini-1.5-flash": Rates(0.075, 0.30, 0.01875),
    "gemini-2.0-flash": Rates(0.10, 0.40, 0.025),
    "llama-3.1-70b-instruct": Rates(0.40, 0.40, 0.40),
    "llama-3.1-8b-instruct": Rates(0.05, 0.08, 0.05),
    "demo": Rates(0.0, 0.0, 0.0),
}

PriceOverride = Sequence[float]
"""(input, output) or (input, output, cached input), USD per million tokens, as `debate.prices` gives it.
Without a cached rate, cached input costs what fresh input does."""


def _rates(given: PriceOverride) -> Rates:
    return Rates(given[0], given[1], given[2] if len(given) > 2 else given[0])


def rates_for(model: str, overrides: Mapping[str, PriceOverride] | None = None) -> Rates | None:
    """The model's rates: an override, an exact built-in, or the longest built-in prefix
    ("gpt-4o-2024-08-06" → gpt-4o; "openai/gpt-4o" → gpt-4o)."""
    if overrides and model in overrides:
        return _rates(overrides[model])
    name = model.lower().rsplit("/", 1)[-1]
    table: dict[str, Rates] = dict(BUILTIN_PRICES)
    table.update({k.lower(): _rates(v) for k, v in (overrides or {}).items()})
    if name in table:
        return table[name]
    best = max((k for k in table if name.startswith(k)), key=len, default=None)
    return table[best] if best else None


def price_for(model: str, overrides: Mapping[str, PriceOverride] | None = None) -> tuple[float, float] | None:
    """(input, output) USD per million tokens (see `rates_for`)."""
    rates = rates_for(model, overrides)
    return (rates.input, rates.output) if rates else None


def call_cost(model: str, prompt_tokens: int, completion_tokens: int,
              overrides: Mapping[str, PriceOverride] | None = None, cached_tokens: int = 0) -> float:
    """What a call costs: its fresh input, its cached input (`cached_tokens` of `prompt_tokens`)
    and its output, each at its own rate."""
    rates = rates_for(model, overrides)
    if rates is None:
        return 0.0
    cached = max(0, min(cached_tokens, prompt_tokens))
    return ((prompt_tokens - cached) * rates.input + cached * rates.cached_input
            + completion_tokens * rates.output) / 1_000_000

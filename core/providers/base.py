"""The provider contract: stream one chat completion, report usage."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, str]
"""An OpenAI chat message: {"role": "system" | "user" | "assistant", "content": str}."""

DeltaCallback = Callable[[str], Awaitable[None] | None]

RESTART = "\x00restart"
"""Passed to on_delta when a call starts over after a failed attempt had streamed text."""


@dataclass
class CallHint:
    """What a call is for. Real providers ignore it; the offline demo provider writes from it."""

    phase: str
    role: str
    agent_id: str
    round: int = 1
    problem: str = ""
    target_agent_id: str | None = None
    target_role: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Completion:
    content: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    latency_ms: int
    attempts: int = 1


class ProviderError(Exception):
    """A call failed for good (after retries and fallbacks). The message is safe to show."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class Provider(Protocol):
    name: str
    label: str
    """Shown in every view (the demo provider says DEMO)."""

    async def complete(
        self,
        messages: list[Message],
        *,
        model: str,
        temperature: float,
        max_tokens: int,
        hint: CallHint,
        on_delta: DeltaCallback | None = None,
        on_retry: Callable[[str], None] | None = None,
        fallback_models: Sequence[str] = (),
    ) -> Completion:
        """Stream one completion, calling `on_delta` per text chunk.

        Retries transient failures itself, calling `on_retry` with a one-line reason
        before each new attempt, then tries `fallback_models` in order. Raises
        ProviderError when every attempt failed. When a retry happens after some
        deltas were already delivered, `on_delta` is called with RESTART (the empty
        marker below) first, so listeners can clear what they showed.
        """
        ...

    async def aclose(self) -> None: ...

"""One place owns the path of a call; protocols only say who speaks, with which task and view.

`CallEngine.call(spec)`:
1. waits at the gate (pause, stop, budget caps) inside the concurrency limit, so a
   paused debate starts nothing even if calls were queued;
2. builds the view under the token budget (`ViewBuilder`), filling the record with its
   provenance (what was included, what was dropped, tokens per tier);
3. emits `call_started` with that record, streams the provider's typed items as
   `token` / `call_failed(will_retry)` events, and records the completion (an empty reply
   is asked for once more, then recorded with a warning);
4. masks keys in what comes back (text and the model name a server reports), measures
   latency with the clock (frozen in tests) and prices the call.
A failed call emits `call_failed` and raises `ProviderError`; the protocol decides what
a failure means for the debate.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import assert_never

from moot.core.clock import Clock
from moot.core.config import ResolvedAgent
from moot.core.context.view import ViewBuilder
from moot.core.engine.gate import Gate
from moot.core.errors import ProviderError
from moot.core.events import CallFailed, CallStarted, Event, Token, Warning_
from moot.core.models import CallMetadata, Contribution, ViewRecord
from moot.core.pricing import call_cost
from moot.core.providers.base import (
    CallHint,
    ChatRequest,
    Completion,
    Finished,
    JsonAnswer,
    Provider,
    Restart,
    RetryNotice,
    StreamItem,
    TextDelta,
)
from moot.core.providers.pool import ProviderPool
from moot.core.secrets import redact


@dataclass
class CallSpec:
    """What a protocol asks for: who calls, with which view record and history, for what."""

    agent: ResolvedAgent
    record: ViewRecord
    """Phase, step, keys and task parameters; the engine fills in the view's contents."""
    hint: CallHint
    history: Sequence[Contribution] = ()
    """Verbatim history items, oldest first (the builder drops the oldest when they do not fit)."""
    budget: int | None = None
    """Input-token budget of the view; default: the agent's `context.input_budget`."""
    max_tokens: int | None = None
    """The reply's limit; default: the agent's `context.reserve_output_tokens`."""
    model: str | None = None
    json_answer: JsonAnswer | None = None
    """Ask the endpoint for JSON (`response_format`) when it takes it."""


@dataclass(frozen=True)
class CallResult:
    completion: Completion
    meta: CallMetadata


@dataclass
class CallEngine:
    providers: ProviderPool
    builder: ViewBuilder
    gate: Gate
    emit: Callable[[Event], Event]
    clock: Clock
    max_concurrency: int
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._sem = asyncio.Semaphore(self.max_concurrency)

    @property
    def secrets(self) -> list[str]:
        return self.providers.secrets

    def cost(self, agent: ResolvedAgent, model: str, prompt: int, completion: int) -> float:
        if agent.provider == "demo":
            return 0.0
        return call_cost(model, prompt, completion, self.prices)

    async def call(self, spec: CallSpec) -> CallResult:
        """Run one call through the gate, the view builder and the provider (see the module doc)."""
        agent = spec.agent
        record = spec.record
        provider = self.providers.get(agent)
        record.max_tokens = spec.max_tokens or agent.context.reserve_output_tokens
        if spec.model:
            record.model = spec.model
        budget = spec.budget or agent.context.input_budget
        async with self._sem:
            await self.gate.wait()
            messages = self.builder.build(record, list(spec.history), budget)
            request = ChatRequest(messages=messages, model=record.model or agent.model,
                                  temperature=agent.config.temperature, max_tokens=record.max_tokens,
                                  hint=spec.hint, fallback_models=agent.config.fallback_models,
                                  json_answer=spec.json_answer)
            self.emit(CallStarted(view=record))
            started = self.clock.monotonic()
            completion = await self._stream(provider.name, provider.stream(request), agent.id, record.call_id)
            if not completion.content.strip():
                completion = await self._again_if_empty(provider, request, agent.id, record.call_id, completion)
            latency = self.clock.elapsed_ms(started)
        model = completion.model or record.model or agent.model
        meta = CallMetadata(
            prompt_tokens=completion.prompt_tokens, completion_tokens=completion.completion_tokens,
            latency_ms=latency, model=model, provider=agent.provider, call_id=record.call_id,
            attempts=completion.attempts, finish_reason=completion.finish_reason,
            usage_estimated=completion.usage_estimated,
            cost_usd=self.cost(agent, model, completion.prompt_tokens, completion.completion_tokens),
        )
        if completion.usage_estimated:
            self.emit(Warning_(message=f"{agent.id}: the server reported no usable token usage; "
                                       "counted with tiktoken instead", agent_id=agent.id))
        return CallResult(completion, meta)

    async def _again_if_empty(self, provider: Provider, request: ChatRequest, agent_id: str, call_id: str,
                              first: Completion) -> Completion:
        """An empty reply is asked for once more (a server hiccup, not an answer); a second
        empty one is recorded as it is, with a warning. Both attempts are paid for."""
        self.emit(CallFailed(call_id=call_id, agent_id=agent_id, error="the model returned an empty reply",
                             will_retry=True))
        again = await self._stream(provider.name, provider.stream(request), agent_id, call_id)
        again.prompt_tokens += first.prompt_tokens
        again.completion_tokens += first.completion_tokens
        again.attempts += first.attempts
        again.usage_estimated = again.usage_estimated or first.usage_estimated
        if not again.content.strip():
            self.emit(Warning_(message=f"{agent_id}: the model returned an empty reply twice; recorded as empty",
                               agent_id=agent_id))
        return again

    async def _stream(self, provider: str, items: AsyncIterator[StreamItem], agent_id: str,
                      call_id: str) -> Completion:
        """Turn the provider's typed items into events; the completion, masked."""
        secrets = self.secrets
        try:
            async for item in items:
                match item:
                    case TextDelta(text=text):
                        self.emit(Token(call_id=call_id, agent_id=agent_id, delta=text))
                    case Restart():
                        self.emit(Token(call_id=call_id, agent_id=agent_id, delta="", restart=True))
                    case RetryNotice(reason=reason):
                        self.emit(CallFailed(call_id=call_id, agent_id=agent_id, error=redact(reason, secrets),
                                             will_retry=True))
                    case Finished(completion=completion):
                        # What is kept (and later shown to other agents) never carries a key.
                        completion.content = redact(completion.content, secrets)
                        completion.model = redact(completion.model, secrets)[:200]
                        return completion
                    case _:
                        assert_never(item)
            raise ProviderError(f"{provider}: the stream ended without a completion")
        except ProviderError as exc:
            message = redact(str(exc), secrets)
            self.emit(CallFailed(call_id=call_id, agent_id=agent_id, error=message, will_retry=False))
            exc.args = (message,)
            raise

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

Over 400 lines: the steps above are one path on purpose (one place owns a call); the tool loop,
grounding, windows and summaries it hands work to are modules of their own.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field
from typing import assert_never

from ..clock import Clock
from ..config import ResolvedAgent
from ..context.index import DebateIndex
from ..context.recall_tier import QUERY_ITEMS, Recaller, RecallRequest, query_texts
from ..context.view import ViewBuilder, ViewTooLarge, history_ids, item_label, render_task
from ..errors import ContextOverflow, ContextTooLong, ProviderError, ToolsRefused
from ..events import CallFailed, CallStarted, ControlChanged, Event, Token, Warning_, WindowLearned
from ..models.provider_kinds import kind_of
from ..models.state import CallMetadata, Contribution, RecallRecord, ViewRecord
from ..pricing import PriceOverride, call_cost
from ..providers.base import (
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
from ..providers.pool import ProviderPool
from ..safety.secrets import StreamRedactor, redact, strip_userinfo
from .gate import Gate, StopRequested
from .grounding import Grounding
from .limits import EndpointLimits
from .recall_tool import RecallTool
from .tool_loop import ToolLoop
from .windows import Fit, Windows, reply_floor

STAND_IN = " ".join(["A quoted contribution of ordinary length, standing in for one not written yet."] * 12)


_NO_LIMIT: AbstractAsyncContextManager[None] = nullcontext()
"""What a call waits for where there is no limit (an endpoint without one of its own, a seat)."""


@dataclass
class CallSpec:
    """What a protocol asks for: who calls, with which view record and history, for what."""

    agent: ResolvedAgent
    record: ViewRecord
    """Phase, step, keys and task parameters; the engine fills in the view's contents."""
    hint: CallHint
    history: Sequence[Contribution] = ()
    """Verbatim history items, oldest first (the builder drops the oldest when they do not fit)."""
    context_tokens: int | None = None
    """The configured context window of this call; default: the agent's `context.max_context_tokens`.
    The engine fits it to the model's real window (see `moot.core.engine.windows`)."""
    max_tokens: int | None = None
    """The reply's limit; default: the agent's `context.reserve_output_tokens`."""
    budget: int | None = None
    """A view budget (moot's tokens) the caller already fitted; the engine never goes above the fit."""
    model: str | None = None
    json_answer: JsonAnswer | None = None
    """Ask the endpoint for JSON (`response_format`) when it takes it; a JSON answer cut at its
    limit is asked again once with more room."""
    context_setting: str = "context.max_context_tokens"
    """The setting `context_tokens` comes from, named when a view cannot fit it."""
    recall: RecallRequest | None = None
    """A recall tier for this view: which old items may come back, and its token cap."""


@dataclass(frozen=True)
class CallResult:
    completion: Completion
    meta: CallMetadata
    reads: tuple[str, ...] = ()
    """What the call read with tools: one extract per result (kept with the contribution)."""


REFUSAL_RETRIES = 3
"""Context-length refusals one call may absorb (each teaches the window) before it fails."""


def endpoint_of(agent: ResolvedAgent) -> str:
    """The endpoint a call goes to: the provider, and the base URL for an OpenAI-compatible one;
    a person's seat is an endpoint of its own (one call in flight: see `Orchestrator`)."""
    if agent.is_person:
        return f"{agent.provider}:{agent.id}"
    return f"{agent.provider}:{agent.config.base_url or ''}" if kind_of(agent.provider).per_base_url else agent.provider


_REPLY_NAMES = {"answer": "answer", "summarize": "summary", "turn": "turn", "score": "convergence score",
                "synthesis": "synthesis"}


def reply_name(phase: str) -> str:
    """What a call of this phase answers with, for a warning ("the proposal answer", "the summary")."""
    return _REPLY_NAMES.get(phase, f"{phase} answer")


@dataclass
class CallEngine:
    providers: ProviderPool
    builder: ViewBuilder
    gate: Gate
    emit: Callable[[Event], Event]
    clock: Clock
    max_concurrency: int
    prices: Mapping[str, PriceOverride] = field(default_factory=dict)
    endpoint_limits: dict[str, int] = field(default_factory=dict)
    """Endpoint (see `endpoint_of`) → its own limit of calls in flight."""
    limits: EndpointLimits = field(default_factory=EndpointLimits)
    """Where calls wait for their endpoint's limit and their llama.cpp slot: this debate's own,
    or one shared by the debates of a benchmark (one limit per endpoint across all of them)."""
    windows: Windows = field(default_factory=Windows)
    grounding: Grounding | None = None
    """The references and tools calls may read (None: a debate without them)."""
    recaller: Recaller | None = None
    """The debate's search index, once open: without it views recall nothing."""

    def __post_init__(self) -> None:
        self.slots: dict[str, int] = {}
        """Agent id → the llama.cpp slot it keeps (see `discover`)."""
        self._sem = asyncio.Semaphore(self.max_concurrency)
        self.in_flight = 0
        """Calls past the gate and not yet ended."""
        self.seats_open = 0
        """Of those, the turns waiting for a person: no model runs for them, so a pause is in
        effect without waiting for them (the person may still answer)."""
        self._pause_reported = False
        for e, n in self.endpoint_limits.items():
            self.limits.set(e, n)

    def share(self, limits: EndpointLimits) -> None:
        """Wait in `limits`, shared with other debates, rather than in this debate's own (before
        any call: this debate's configured limits are set there unless one is already)."""
        for e, n in self.endpoint_limits.items():
            limits.set(e, n)
        self.limits = limits

    @property
    def secrets(self) -> list[str]:
        return self.providers.secrets

    def cost(self, agent: ResolvedAgent, model: str, prompt: int, completion: int, cached: int = 0) -> float:
        if not kind_of(agent.provider).billable:
            return 0.0
        return call_cost(model, prompt, completion, self.prices, cached)

    # ------------------------------------------------------------------ windows

    def fit(self, agent: ResolvedAgent, context_tokens: int | None = None, max_tokens: int | None = None,
            model: str | None = None) -> Fit:
        """The view budget and reply limit of a call of `agent`, given what is known of its window."""
        return self.windows.fit(endpoint_of(agent), model or agent.model,
                                context_tokens or agent.context.max_context_tokens,
                                max_tokens or agent.context.reserve_output_tokens)

    async def discover(self, agents: Sequence[ResolvedAgent]) -> None:
        """Ask each endpoint once for its models' windows (at the start of a run), all at once:
        each provider bounds its own probes (a deadline and a byte cap), so this takes as long
        as the slowest endpoint's deadline at most."""
        firsts = {(endpoint_of(a), a.model): a for a in reversed(agents)}
        keys = list(dict.fromkeys((endpoint_of(a), a.model) for a in agents))
        if self.grounding is not None:  # whether each endpoint calls tools (llama.cpp `/props` says)
            await asyncio.gather(*(self.providers.get(firsts[k]).discover_tools() for k in keys))
        found = await asyncio.gather(*(self.providers.get(firsts[k]).discover_window(k[1]) for k in keys))
        for key, tokens in zip(keys, found):
            agent = firsts[key]
            if tokens is not None and self.windows.discovered(*key, tokens):
                self.emit(WindowLearned(endpoint=self._where(agent), model=agent.model, window=tokens,
                                        source="discovered", reason="stated by the server"))
            slots = self.providers.get(agent).slots
            if slots is not None and key[0] not in self.endpoint_limits:
                # The server runs this many requests at once: more would only queue there (and
                # a queued request's deadline runs while it waits).
                self.endpoint_limits[key[0]] = slots
                self.limits.set(key[0], slots)
        self._keep_slots(agents)

    def _keep_slots(self, agents: Sequence[ResolvedAgent]) -> None:
        """Each endpoint's provider says which slot each of its speakers keeps (`Provider.keep_slots`:
        llama.cpp's prompt cache); one speaker's calls then take turns on its slot, waiting here
        rather than at the server, where their deadlines would run."""
        speakers: dict[str, list[ResolvedAgent]] = {}
        for a in agents:
            group = speakers.setdefault(endpoint_of(a), [])
            if all(b.id != a.id for b in group):
                group.append(a)
        for group in speakers.values():
            self.slots.update(self.providers.get(group[0]).keep_slots([a.id for a in group]))

    def _where(self, agent: ResolvedAgent) -> str:
        return redact(strip_userinfo(agent.config.base_url) or agent.provider, self.secrets)

    # ------------------------------------------------------------------ one call

    async def call(self, spec: CallSpec) -> CallResult:
        """Run one call through the gate, the view builder and the provider (see the module doc)."""
        agent = spec.agent
        record = spec.record
        provider = self.providers.get(agent)
        if spec.model:
            record.model = spec.model
        model = record.model or agent.model
        endpoint = endpoint_of(agent)
        # The endpoint's own limit first: a call queued behind it holds none of the shared slots.
        # A person's turn takes no model slot at all (it may wait for minutes). A speaker that keeps
        # a llama.cpp slot waits for it here, before either.
        async with self.limits.slot(endpoint, self.slots.get(agent.id)), self.limits.of(endpoint), (
                _NO_LIMIT if agent.is_person else self._sem):
            await self.gate.wait()
            self.in_flight += 1
            self.seats_open += agent.is_person
            try:
                return await self._run(spec, agent, record, provider, model, endpoint)
            finally:
                self.in_flight -= 1
                self.seats_open -= agent.is_person
                # Said after the caller has recorded what the call wrote (it does so as soon as this
                # returns): "paused, no call in flight" never comes before the last call's contribution.
                asyncio.get_running_loop().call_soon(self.report_pause)

    def report_pause(self) -> None:
        """Once paused with no call in flight, say so (once): from then on nothing runs."""
        if not self.gate.paused:
            self._pause_reported = False
        elif self.in_flight == self.seats_open and not self._pause_reported:
            self._pause_reported = True
            self.emit(ControlChanged(action="pause", effective=True))

    async def _run(self, spec: CallSpec, agent: ResolvedAgent, record: ViewRecord, provider: Provider, model: str,
                   endpoint: str) -> CallResult:
        refusals = 0
        extra_room = 0
        spent: list[Completion] = []
        recalled = self.recall(spec)
        # Latency runs from the first attempt: refused, cut and empty attempts are part of the
        # call (their tokens and cost are counted in it), so is the time they took.
        started = self.clock.monotonic()
        while True:
            fit = self.fit(agent, spec.context_tokens, spec.max_tokens, model)
            budget = min(spec.budget, fit.input_budget) if spec.budget else fit.input_budget
            floor = reply_floor(record.phase, fit.max_tokens)
            record.window, record.window_source, record.count_ratio = fit.window, fit.source, fit.ratio
            record.recall = recalled  # the builder lets it give way by replacing it, never by changing it
            access = self.grounding.access(agent, provider, record.phase) if self.grounding else None
            record.inline.pop("references", None)
            box, recall_tool = None, None
            if self.grounding is not None and access == "tools":
                recall_tool = self.recall_tool(spec)
                box = self.grounding.toolbox(agent.id, recall_tool)
                record.inline["references"] = self.grounding.tools_note(agent.id, box)
            elif self.grounding is not None and access == "retrieve":
                passages = self.grounding.retrieve(record, spec.history, self.builder.index, budget,
                                                  self.secrets)
                if passages:
                    record.inline["references"] = passages
            try:
                messages = None
                if self.grounding is not None and access == "tools":
                    try:  # the view leaves the tools' room (it does not take the answer's reserve)
                        messages = self.builder.build(record, list(spec.history),
                                                      budget - self.grounding.tools_room(budget))
                    except ViewTooLarge:
                        access = None  # no room for tools beside this view: it is answered without them
                        record.inline.pop("references", None)
                if messages is None:
                    messages = self.builder.build(record, list(spec.history), budget, fit.stretch(floor))
            except ViewTooLarge as exc:
                raise ContextOverflow(self.overflow_message(agent, record, fit, floor, exc.need,
                                                            spec.context_setting)) from None
            if access == "tools":
                record.budget = budget  # the view leaves the rest of it to the tool loop
                if recall_tool is not None:  # what the fitted view holds verbatim is not recalled again
                    recall_tool.in_view = [*history_ids(record, self.builder.index), *record.task_contribution_ids,
                                           *(record.recall.ids if record.recall else [])]
            # The reply gets what the view leaves (the full reserve unless the view took some of it).
            record.max_tokens = max(1, min(fit.max_tokens + extra_room, fit.reply_room(record.tokens.total)))
            request = ChatRequest(messages=messages, model=model, temperature=agent.config.temperature,
                                  max_tokens=record.max_tokens, hint=spec.hint,
                                  fallback_models=agent.config.fallback_models,
                                  json_answer=spec.json_answer.within(record.max_tokens) if spec.json_answer else None,
                                  seed=agent.config.seed, slot=self.slots.get(agent.id))
            loop = None
            if self.grounding is not None and access == "tools" and box is not None:
                loop = ToolLoop(self, agent, record, provider, box,
                                self.grounding.max_calls.get(agent.id, 10), budget, self.grounding.config.result_tokens)
                loop.prepare()
            # A tool loop goes on changing its record: the event gets the record as it starts (its
            # steps follow in `call_continued`).
            self.emit(CallStarted(view=record.model_copy(deep=True) if loop is not None else record))
            try:
                if loop is not None:
                    completion = await loop.run(request, spent)
                else:
                    completion = await self._stream(provider.name, provider.stream(request), agent.id,
                                                    record.call_id)
            except ToolsRefused:
                # Remembered by the provider (supports_tools = False): the next view has the passages instead.
                record = self._again(record, agent.id, "the endpoint does not take tools; asking again with "
                                                       "reference passages in the view", "passages")
                continue
            except ContextTooLong as exc:
                refusals += 1
                window = self.windows.refused(endpoint, model, exc.window, fit.window, exc.prompt_tokens,
                                              record.tokens.total)
                self.emit(WindowLearned(endpoint=self._where(agent), model=model, window=window.tokens,
                                        source="learned", ratio=window.ratio,
                                        reason=f"the server refused a {record.tokens.total}-token request"))
                if refusals > REFUSAL_RETRIES:
                    self.emit(CallFailed(call_id=record.call_id, agent_id=agent.id, error=str(exc),
                                         will_retry=False))
                    raise
                record = self._again(record, agent.id, "refused as longer than the model's window; "
                                                       "asking again with a smaller view", str(refusals))
                continue
            if not completion.content.strip():
                spent.append(completion)  # paid for; summed below (after the window calibration)
                again = loop.last_request if loop is not None and loop.last_request is not None else request
                completion = await self._again_if_empty(provider, again, agent.id, record.call_id)
            latency = self.clock.elapsed_ms(started)
            if not completion.usage_estimated and self.windows.observe(endpoint, model, record.tokens.total,
                                                                       completion.prompt_tokens):
                ratio = self.windows.get(endpoint, model).ratio
                self.emit(WindowLearned(endpoint=self._where(agent), model=model, window=fit.window,
                                        source="calibrated", ratio=ratio,
                                        reason=f"moot counted {record.tokens.total}, the server "
                                               f"{completion.prompt_tokens}"))
            if (spec.json_answer is not None and completion.finish_reason == "length" and not extra_room
                    and fit.reply_room(record.tokens.total) - record.max_tokens > 64):
                # A JSON answer cut at its limit cannot be parsed: ask once more with more room.
                extra_room = fit.reply_room(record.tokens.total) - record.max_tokens - 64
                spent.append(completion)
                record = self._again(record, agent.id, f"the {reply_name(record.phase)} was cut at "
                                                       f"{record.max_tokens} tokens; asking again with room for "
                                                       f"{record.max_tokens + extra_room}", "more")
                continue
            break
        # A reply that stopped short of its limit with `length` was ended by the server: the request
        # filled its window (llama.cpp stops generating when its slot is full, and says `truncated`).
        truncated = completion.truncated or (
            loop is None and completion.finish_reason == "length" and not completion.usage_estimated
            and completion.clipped_at is None and completion.completion_tokens < record.max_tokens)
        reply_tokens, server_prompt = completion.completion_tokens, completion.prompt_tokens
        for earlier in spent:  # what the cut attempt cost is part of this call's cost
            completion.prompt_tokens += earlier.prompt_tokens
            completion.completion_tokens += earlier.completion_tokens
            completion.cached_tokens += earlier.cached_tokens
            completion.attempts += earlier.attempts
            completion.usage_estimated = completion.usage_estimated or earlier.usage_estimated
        model = completion.model or model
        meta = CallMetadata(
            prompt_tokens=completion.prompt_tokens, completion_tokens=completion.completion_tokens,
            latency_ms=latency, model=model, provider=agent.provider, call_id=record.call_id,
            attempts=completion.attempts, finish_reason=completion.finish_reason,
            usage_estimated=completion.usage_estimated, clipped_at=completion.clipped_at,
            cached_tokens=completion.cached_tokens, server_truncated=truncated,
            cost_usd=self.cost(agent, model, completion.prompt_tokens, completion.completion_tokens,
                               completion.cached_tokens),
        )
        if completion.usage_estimated:
            self.emit(Warning_(message=f"{agent.id}: the server reported no usable token usage; "
                                       "counted with tiktoken instead", agent_id=agent.id))
        if completion.clipped_at is not None:
            self.emit(Warning_(message=f"{agent.id}: the {reply_name(record.phase)} ran far past its limit of "
                                       f"{record.max_tokens} tokens; moot stopped reading it at "
                                       f"{completion.clipped_at:,} bytes and kept what came before",
                               agent_id=agent.id))
        elif truncated:
            self.emit(Warning_(message=self.truncation_message(agent, record, fit, server_prompt, reply_tokens),
                               agent_id=agent.id))
        elif completion.finish_reason == "length":
            self.emit(Warning_(message=f"{agent.id}: the {reply_name(record.phase)} was cut at its limit of "
                                       f"{record.max_tokens} tokens", agent_id=agent.id))
        reads = tuple(dict.fromkeys(r.extract for step in record.tool_steps for r in step.results if r.ok))
        return CallResult(completion, meta, reads)

    def recall(self, spec: CallSpec) -> RecallRecord | None:
        """The recall tier chosen for a call, before its view is fitted (None: none asked for, no
        index, or nothing found)."""
        if spec.recall is None:
            return None
        held = list(spec.recall.held)
        found = None
        if self.recaller is not None and spec.recall.tokens > 0:  # a cap of 0 keeps the held blocks only
            record = spec.record
            index = self.builder.index
            history = list(spec.history)
            texts = query_texts(history, record, render_task(record, index), index.prompts.get(record.task_key, ""))
            in_view = [c.id for c in history] + list(record.task_contribution_ids) + list(record.pinned)
            known = history[:-QUERY_ITEMS] if spec.recall.new_words else []
            found = self.recaller.choose(record, spec.recall, texts, lambda c: item_label(c, record.agent_id, index),
                                         exclude=in_view, known=known)
        if found is None:
            return RecallRecord(cap=spec.recall.tokens, held=held) if held else None
        return found

    def recall_tool(self, spec: CallSpec) -> RecallTool | None:
        """`recall(query)` for a call whose view a summary stands in for part of (None: nothing
        out of its view yet, or no index): the debate's earlier messages, by name, verbatim."""
        record = spec.record
        if self.recaller is None or record.summary_id is None:
            return None
        return RecallTool.for_view(self.recaller.search, self.builder.index, record, spec.history)

    def check_fits(self, agent: ResolvedAgent, record: ViewRecord, *, quotes: int = 0, context_tokens: int | None = None,
                   max_tokens: int | None = None, setting: str = "context.max_context_tokens") -> None:
        """Raise `ContextOverflow` (naming the limit that binds) when even the smallest form of
        `record`'s view, quoting `quotes` texts, and its answer's floor cannot fit the window as
        known now. For the start of a run: a debate that could not finish is refused before it
        spends its rounds."""
        fit = self.fit(agent, context_tokens, max_tokens, record.model or agent.model)
        floor = reply_floor(record.phase, fit.max_tokens)
        probe = record.model_copy(deep=True)
        builder = self.builder
        if quotes:  # stand-ins for what the task will quote, long enough to be cut to their minimum
            live = builder.index
            scratch = DebateIndex()
            scratch.prompts, scratch.problem, scratch.names = live.prompts, live.problem, live.names
            scratch.layout = live.layout
            probe.task_contribution_ids = []
            for i in range(quotes):
                c = Contribution(id=f"check-{i}", agent_id=agent.id, role=agent.role, type="critique", round=1,
                                 target_agent_id=agent.id, content=STAND_IN)
                scratch.add_contribution(c)
                probe.task_contribution_ids.append(c.id)
            builder = ViewBuilder(scratch)
        try:
            builder.build(probe, [], fit.input_budget, fit.stretch(floor))
        except ViewTooLarge as exc:
            raise ContextOverflow(self.overflow_message(agent, probe, fit, floor, exc.need, setting)) from None

    def overflow_message(self, agent: ResolvedAgent, record: ViewRecord, fit: Fit, floor: int, need: int,
                         setting: str) -> str:
        """Why a view cannot fit, naming the limit that binds (the server's window or moot's
        budget) and what moves it."""
        who = agent.id
        total = math.ceil(need * fit.ratio) + floor
        what = (f"the {record.phase} view of {who} needs {total:,} tokens even at its smallest (compact prompts, "
                f"no history, quotes cut short, a {floor}-token answer)")
        if fit.source == "configured":
            own = agent.config.context is not None and agent.config.context.max_context_tokens is not None
            where = f"{agent.id}'s own context.max_context_tokens" if own and setting.startswith("context.") else setting
            return f"{what}, more than its {fit.window:,}-token budget; raise {where}"
        how = "as the server states it" if fit.source == "discovered" else "as the server's refusals showed"
        ratio = f", counting ×{fit.ratio:g} moot's tokens" if fit.ratio > 1 else ""
        return (f"{what}, more than the {fit.window:,}-token window the server gives {record.model} ({how}{ratio}); "
                f"give the model a larger window per request on the server (llama.cpp: a larger --ctx-size, or "
                f"fewer --parallel slots); raising {setting} does not help")

    @staticmethod
    def truncation_message(agent: ResolvedAgent, record: ViewRecord, fit: Fit, prompt: int, reply: int) -> str:
        """What a reply the server ended short of its limit means, in its own counts."""
        what = (f"{agent.id}: the server ended the {reply_name(record.phase)} at {reply:,} tokens, "
                f"short of its limit of ")
        counts = f"{prompt:,} prompt + {reply:,} reply tokens by its count"
        if prompt + reply >= fit.window - 8:
            return (f"{what}{record.max_tokens:,}: the request filled its {fit.window:,}-token window ({counts}, "
                    f"where moot had budgeted ×{fit.ratio:g} its own count); later views allow more for its count")
        return f"{what}{record.max_tokens:,} ({counts}): a limit of the server's own"

    def _again(self, record: ViewRecord, agent_id: str, why: str, suffix: str) -> ViewRecord:
        """End an attempt whose answer is not kept (views show it failed) and start the next one's
        record: the same call, a new id (the state keeps both views: what each request held)."""
        self.emit(CallFailed(call_id=record.call_id, agent_id=agent_id, error=why, will_retry=False))
        return record.model_copy(deep=True, update={"call_id": f"{record.call_id.split('~')[0]}~{suffix}",
                                                    "tool_steps": []})

    async def _again_if_empty(self, provider: Provider, request: ChatRequest, agent_id: str,
                              call_id: str) -> Completion:
        """An empty reply is asked for once more (a server hiccup, not an answer); a second
        empty one is recorded as it is, with a warning. (The caller counts both attempts.)"""
        self.emit(CallFailed(call_id=call_id, agent_id=agent_id, error="the model returned an empty reply",
                             will_retry=True))
        again = await self._stream(provider.name, provider.stream(request), agent_id, call_id)
        if not again.content.strip():
            self.emit(Warning_(message=f"{agent_id}: the model returned an empty reply twice; recorded as empty",
                               agent_id=agent_id))
        return again

    async def _stream(self, provider: str, items: AsyncIterator[StreamItem], agent_id: str,
                      call_id: str) -> Completion:
        """Turn the provider's typed items into events; the completion, masked."""
        secrets = self.secrets
        shown = StreamRedactor(secrets)  # what streams to a view is masked too, a key split across deltas included
        try:
            async for item in items:
                match item:
                    case TextDelta(text=text):
                        delta = shown.feed(text)
                        if delta:
                            self.emit(Token(call_id=call_id, agent_id=agent_id, delta=delta))
                    case Restart():
                        shown.reset()
                        self.emit(Token(call_id=call_id, agent_id=agent_id, delta="", restart=True))
                    case RetryNotice(reason=reason):
                        self.emit(CallFailed(call_id=call_id, agent_id=agent_id, error=redact(reason, secrets),
                                             will_retry=True))
                    case Finished(completion=completion):
                        rest = shown.flush()
                        if rest:
                            self.emit(Token(call_id=call_id, agent_id=agent_id, delta=rest))
                        # What is kept (and later shown to other agents) never carries a key.
                        completion.content = redact(completion.content, secrets)
                        completion.model = redact(completion.model, secrets)[:200]
                        return completion
                    case _:
                        assert_never(item)
            raise ProviderError(f"{provider}: the stream ended without a completion")
        except StopRequested:  # a person's turn that a stop ended: asked again on resume
            self.emit(CallFailed(call_id=call_id, agent_id=agent_id, error="stopped before an answer came",
                                 will_retry=False))
            raise
        except ProviderError as exc:
            message = redact(str(exc), secrets)
            exc.args = (message,)
            if not isinstance(exc, (ContextTooLong, ToolsRefused)):  # the caller decides what a refusal means
                self.emit(CallFailed(call_id=call_id, agent_id=agent_id, error=message, will_retry=False))
            raise

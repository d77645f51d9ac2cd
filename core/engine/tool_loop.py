"""One call's tool loop: model → tools → model, until the model answers or its calls run out.

Each model turn is a request of the same call (same call id). A turn that calls tools adds a
step to the call's record: `tool_called` and `tool_returned` as each tool runs, then
`call_continued` with the step (the calls and their results as sent) and the next request's
tokens per tier. The loop is covered as a call is:

- **caps**: at most `max_calls` tool calls per call (a reply asking for more gets, for each
  extra one, a tool error saying so); then the model is asked to answer without tools, and
  no tools are offered. A cost or token cap reached between turns does the same.
- **context**: results are counted as the view's `tools` tier. When the next turn would not fit
  the call's budget, the oldest results are replaced by their one-line extracts (priority
  trimming: what ages goes first), then the oldest steps are left out with a marker: never an overflow.
- **errors**: arguments that are not JSON, an unknown tool, a path that leaves the references, a
  server that died: a tool error the model reads and can recover from.
- **pause/stop**: between turns the gate is passed again (a pause holds the call there, and is
  reported as effective; a stop ends the debate, resumable, and the call is redone). A tool
  running when a pause or stop is asked for is cut short at once: after a pause it runs again.
- **text-written calls**: a reply that is nothing but a JSON call of an offered tool is taken
  as the call, recorded `from_text`.
- **keys and control characters**: results are masked and cleaned before the model (and the
  log) sees them.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from .. import tokens
from ..config import ResolvedAgent
from ..context.tool_messages import tool_messages
from ..context.view import ViewBuilder, render_messages
from ..events import CallContinued, Event, Token, ToolCalled, ToolReturned
from ..models.state import ViewRecord
from ..models.tools import ToolCallRecord, ToolResultRecord, ToolStep
from ..providers.base import ChatRequest, Completion, Provider, StreamItem, ToolCall
from ..safety.sanitize import terminal_safe
from ..safety.secrets import redact
from ..tools.extracts import extract
from ..tools.registry import MAX_ARGUMENT_CHARS, Toolbox, ToolOutput
from ..tools.text_calls import parse_text_call
from .gate import BudgetExhausted, Gate


class LoopHost(Protocol):
    """What the loop needs of the call engine (`CallEngine` is one)."""

    in_flight: int

    @property
    def emit(self) -> Callable[[Event], Event]: ...

    @property
    def gate(self) -> Gate: ...

    @property
    def builder(self) -> ViewBuilder: ...

    @property
    def secrets(self) -> list[str]: ...

    def cost(self, agent: ResolvedAgent, model: str, prompt: int, completion: int) -> float: ...

    def report_pause(self) -> None: ...

    async def _stream(self, provider: str, items: AsyncIterator[StreamItem], agent_id: str,
                      call_id: str) -> Completion: ...

_ID = re.compile(r"[^A-Za-z0-9_.:-]")
CLOSING_NOTE = ("You have used all {n} tool calls this answer may make. Do not call tools any more: write your "
                "answer now from what you have read.")
BUDGET_NOTE = ("The debate's spending cap is reached. Do not call tools any more: write your answer now from what "
               "you have read.")


@dataclass
class ToolLoop:
    """Runs the tool loop of one call (see the module doc)."""

    engine: LoopHost
    agent: ResolvedAgent
    record: ViewRecord
    provider: Provider
    box: Toolbox
    max_calls: int
    budget: int
    """The call's whole input budget: the view plus everything the loop adds must fit it."""
    result_tokens: int = 2000
    """Cap of one tool result (`tools.result_tokens`)."""

    def __post_init__(self) -> None:
        self.emit = self.engine.emit
        self.used = 0
        self.schemas = self.box.schemas()
        self.schema_tokens = tokens.count_text(repr(self.schemas), self.record.model) if self.schemas else 0
        self.last_request: ChatRequest | None = None
        """The loop's latest request (an empty answer is asked for again with it, tool results and all)."""

    def prepare(self) -> None:
        """Before `call_started`: the record names the tools offered and counts their definitions."""
        record = self.record
        record.tool_steps = []
        record.tools = self.box.names
        self._count(offering=self.max_calls > 0)

    async def run(self, request: ChatRequest, spent: list[Completion]) -> Completion:
        """The call's final completion; the turns before it are appended to `spent` (paid for)."""
        record = self.record
        offer = self.max_calls > 0
        messages = request.messages
        while True:
            turn = self.last_request = replace(request, messages=messages, tools=self.schemas if offer else ())
            completion = await self.engine._stream(self.provider.name, self.provider.stream(turn), self.agent.id,
                                                   record.call_id)
            calls = list(completion.tool_calls)
            from_text = False
            if not calls and offer:
                parsed = parse_text_call(completion.content, self.box.names)
                if parsed is not None:
                    calls, from_text = [ToolCall(f"text-{len(record.tool_steps) + 1}", *parsed)], True
            if not calls or not offer:
                return completion
            spent.append(completion)
            step = await self._run_step(completion, calls, from_text)
            offer = self.used < self.max_calls
            if offer and self._over_cap(spent):
                offer, step.note = False, BUDGET_NOTE
            elif not offer:
                step.note = CLOSING_NOTE.format(n=self.max_calls)
            record.tool_steps.append(step)
            self._fit(step, offer)
            self.emit(CallContinued(call_id=record.call_id, agent_id=self.agent.id, round=record.round, step=step,
                                    tokens=record.tokens, tools=self.box.names if offer else []))
            self.emit(Token(call_id=record.call_id, agent_id=self.agent.id, delta="", restart=True))
            await self._boundary()
            messages = render_messages(record, self.engine.builder.index)

    # ------------------------------------------------------------------ one step

    async def _run_step(self, completion: Completion, calls: Sequence[ToolCall], from_text: bool) -> ToolStep:
        record = self.record
        secrets = self.engine.secrets
        seen = {c.id for s in record.tool_steps for c in s.calls}
        step = ToolStep(index=len(record.tool_steps), content="" if from_text else completion.content)
        for call in calls:
            ident = _ID.sub("_", call.id)[:64] or f"call_{len(seen)}"
            while ident in seen:
                ident = f"{ident[:56]}~{len(seen)}"
            seen.add(ident)
            name = terminal_safe(call.name)[:64] or "(no name)"
            rec = ToolCallRecord(id=ident, name=name, from_text=from_text,
                                 arguments=redact(call.arguments, secrets)[: MAX_ARGUMENT_CHARS + 100])
            step.calls.append(rec)
            self.emit(ToolCalled(call_id=record.call_id, agent_id=self.agent.id, tool=rec))
            if self.used >= self.max_calls:
                out = ToolOutput(f"error: this answer may make at most {self.max_calls} tool calls and they are used; "
                                 "answer with what you have", False, "over the tool-call limit")
            else:
                self.used += 1
                out = await self._call(call)
            text = self._clean(out.text)
            tool = self.box.get(call.name)
            result = ToolResultRecord(call_id=ident, name=name, ok=out.ok, content=text,
                                      extract=(tool.extract(rec.arguments, text, out.ok) if tool
                                               else extract(name, rec.arguments, text, out.ok)),
                                      summary=redact(terminal_safe(out.summary), secrets)[:200],
                                      tokens=tokens.count_text(text, record.model))
            step.results.append(result)
            self.emit(ToolReturned(call_id=record.call_id, agent_id=self.agent.id, tool_call_id=ident, name=name,
                                   ok=out.ok, summary=result.summary, tokens=result.tokens))
        return step

    async def _call(self, call: ToolCall) -> ToolOutput:
        """Run one tool call; a pause or a stop asked for while it runs cuts it short at once. After
        a pause the same call runs again once resumed (the model never knows); a stop ends the call
        here, as at a boundary (the debate is resumable and the call redone)."""
        gate = self.engine.gate
        while True:
            work = asyncio.ensure_future(self.box.call(call.name, call.arguments))
            halted = asyncio.ensure_future(gate.halted())
            try:
                await asyncio.wait({work, halted}, return_when=asyncio.FIRST_COMPLETED)
            finally:  # a signal cancels the debate here too: the tool is told to stop either way
                halted.cancel()
                if not work.done():
                    work.cancel()
                    await asyncio.wait({work})
            if not work.cancelled():
                return work.result()
            await self._boundary()

    def _clean(self, text: str) -> str:
        """Without control characters, then masked (a file may hold the configured key), capped."""
        text = redact(terminal_safe(text), self.engine.secrets)  # cleaned first: a control byte inside hid a key
        cut = tokens.truncate_to_tokens(text, self.result_tokens, self.record.model)
        return cut if cut == text else cut.rstrip() + "\n[… cut at the tool-result cap]"

    # ------------------------------------------------------------------ fitting

    def _count(self, offering: bool) -> int:
        """Count the call's next request into its record's tiers (tools: the loop's messages and the
        tool definitions); the whole request's tokens."""
        record = self.record
        base = record.tokens
        loop = tool_messages(record)
        tools_tier = sum(tokens.count_message(m, record.model) for m in loop) + (self.schema_tokens if offering else 0)
        fixed = (base.system + base.summary + base.pinned + base.recall + base.history + base.references + base.task
                 + tokens.REPLY_PRIMING)
        record.tokens = base.model_copy(update={"tools": tools_tier, "total": fixed + tools_tier})
        return record.tokens.total

    def _fit(self, step: ToolStep, offering: bool) -> None:
        """Priority trimming: the oldest full results give way to extracts, then the oldest steps
        give way altogether, until the next request fits the budget."""
        record = self.record
        prior = record.tool_steps[-2] if len(record.tool_steps) > 1 else None
        step.extracted = list(prior.extracted) if prior else []
        step.dropped = prior.dropped if prior else 0
        if self._count(offering) <= self.budget:
            return
        for s in record.tool_steps[step.dropped:]:
            for r in s.results:
                if r.call_id not in step.extracted:
                    step.extracted.append(r.call_id)
                    if self._count(offering) <= self.budget:
                        return
        while step.dropped < len(record.tool_steps) - 1:
            step.dropped += 1
            if self._count(offering) <= self.budget:
                return

    # ------------------------------------------------------------------ boundaries

    def _over_cap(self, spent: Sequence[Completion]) -> bool:
        """True when the debate's cost or token cap would be passed counting this loop's turns."""
        gate = self.engine.gate
        if gate.spending_allowed:
            return False
        totals = gate.totals()
        s = gate.settings
        used_tokens = sum(c.prompt_tokens + c.completion_tokens for c in spent)
        cost = sum(self.engine.cost(self.agent, c.model or self.record.model, c.prompt_tokens, c.completion_tokens)
                   for c in spent)
        return bool((s.max_cost_usd is not None and totals.cost_usd + cost >= s.max_cost_usd)
                    or (s.max_total_tokens is not None and totals.total_tokens + used_tokens >= s.max_total_tokens))

    async def _boundary(self) -> None:
        """Between turns: a pause holds the call here (and counts as no call in flight), a stop ends it."""
        engine = self.engine
        if engine.gate.paused:
            engine.in_flight -= 1
            engine.report_pause()
            try:
                await _wait(engine.gate)
            finally:
                engine.in_flight += 1
        elif engine.gate.stopping:
            await _wait(engine.gate)


async def _wait(gate: Gate) -> None:
    """Pass the gate; the budget caps are the loop's own business (it answers instead of failing)."""
    try:
        await gate.wait()
    except BudgetExhausted:
        pass

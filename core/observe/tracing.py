"""A debate as one OpenTelemetry trace: the span tree, folded from the event stream.

`TraceBuilder.on_event` folds events exactly as `moot.core.storage.state.apply` does, so the
live subscriber (`moot.core.observe.otel`) and the after-the-fact export (`moot trace`,
`moot.core.observe.otlp`) build the same spans from the same events: every time comes from an
event's `ts` (a call ends at its start plus its recorded latency), and every span id is
derived from the trace id and something the log records (an event's `seq`, a call id).
This module imports no OpenTelemetry package; spans are plain records (`spans`).

```
debate                       one root span per run (a resumed debate adds a second root
  round 1 | turn 1             to the same trace: the trace id is stored in `debate_started`)
    proposal                   a phase (clarify and synthesis hang from the root)
      chat gpt-4o-mini         an LLM call (span kind CLIENT, gen_ai.* attributes)
    summarize
      summary architect        a summarization; its LLM calls are its children
        chat gpt-4o-mini
```

Token usage is counted once: on each call span, except for a summary made of several LLM
calls (chunk and reduce), whose per-call split the log does not record: its usage is on the
summary span. So the `gen_ai.usage.*` of all spans add up to the debate's totals.

Over 400 lines on purpose: it is one fold, an exhaustive `match` over the event union and the
handlers that share its open spans (runs, rounds, phases, calls, summaries); the span records,
their attribute names and their masked way out are apart (`spans`, `span_attributes`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, assert_never
from urllib.parse import urlsplit

from .. import events as ev
from ..context.index import DebateIndex
from ..context.view import render_messages
from ..models.state import AgentInfo, CallMetadata, Summary, Usage, ViewRecord
from ..safety.secrets import strip_userinfo
from ..trace_ids import derived_trace_id
from .span_attributes import (
    AGENT_ID,
    AGENT_NAME,
    CONVERSATION_ID,
    COST,
    ERROR_TYPE,
    FINISH_REASONS,
    INPUT_MESSAGES,
    INPUT_TOKENS,
    OI_KIND,
    OPERATION,
    OUTPUT_MESSAGES,
    OUTPUT_TOKENS,
    PROVIDER,
    REQUEST_MAX_TOKENS,
    REQUEST_MODEL,
    REQUEST_TEMPERATURE,
    RESPONSE_MODEL,
    SYSTEM,
)
from .spans import AttrValue, SpanEvent, SpanOutlet, SpanRecord, ns

RESUME_GAP = "the run ended without recording its end (the process was killed)"


@dataclass
class _Summary:
    span: SpanRecord
    calls: list[SpanRecord] = field(default_factory=list)
    """Its LLM calls, held until the summary is recorded (only then is their usage known)."""
    failed: set[str] = field(default_factory=set)


class TraceBuilder(SpanOutlet):
    """Folds a debate's events into spans; hands each finished span to `emit`.

    `quiet` drops finished spans instead: a resumed run replays the log with it set, to
    rebuild what is still open without sending again what the earlier run sent."""

    def __init__(self, emit: Callable[[SpanRecord], None], *, content: bool = False,
                 secrets: Sequence[str] = ()) -> None:
        super().__init__(emit, secrets=secrets)
        self.content = content
        self.debate_id = ""
        self.runs = 0
        self._root: SpanRecord | None = None
        self._rounds: dict[int, SpanRecord] = {}
        """Open round spans: a round stays open while a phase of it does (phases overlap when calls
        are scheduled by their inputs: a round can owe critiques while the next one has begun)."""
        self._round_no = 0
        self._step: Literal["round", "turn"] = "round"
        self._phases: dict[tuple[int, str], SpanRecord] = {}
        """Open phase spans by (round, phase)."""
        self._calls: dict[str, SpanRecord] = {}
        self._tools: dict[str, SpanRecord] = {}
        """Tool calls running, by tool call id (`execute_tool` spans inside their LLM call's)."""
        self._summaries: dict[str, _Summary] = {}
        self._agents: dict[str, AgentInfo] = {}
        self._servers: dict[str, tuple[str, int | None]] = {}
        self._last_ns = 0
        self._index = DebateIndex() if content else None

    # ------------------------------------------------------------------ the fold

    def on_event(self, event: ev.Event) -> None:
        if isinstance(event, ev.Token):
            return  # not in the log: a trace built later could not have them
        t = ns(event.ts)
        if self._index is not None:
            self._index.on_event(event)
        match event:
            case ev.DebateStarted():
                self._started(event, t)
            case ev.DebateResumed(from_round=from_round):
                self._close_all(self._last_ns, RESUME_GAP, RESUME_GAP)
                self._open_root(event.seq, t, {"moot.resumed": True, "moot.resumed_from": from_round})
                if self._round_no:
                    self._open_round(self._round_no, self._step, f"{event.seq}/{self._round_no}", t,
                                     {"moot.continued": True})
            case ev.RoundStarted(round=number, step=step):
                self._close_rounds(self._last_ns, before=number)
                self._open_round(number, step, str(event.seq), t, {})
            case ev.PhaseStarted(round=number, phase=phase):
                self._close_phase((number, phase), self._last_ns, "no end recorded")
                if phase in ("clarify", "synthesis"):  # not part of a round: hang from the root
                    self._close_rounds(self._last_ns, force=True)
                parent = self._rounds.get(number) if phase not in ("clarify", "synthesis") else None
                self._phases[(number, phase)] = self._span(f"phase/{event.seq}", phase, parent or self._ensure_root(t),
                                                           t, {"moot.phase": phase, "moot.round": number,
                                                               OI_KIND: "CHAIN"})
            case ev.PhaseCompleted(round=number, phase=phase):
                self._close_phase((number, phase), t)
                self._close_rounds(t, before=self._round_no)
            case ev.CallStarted(view=view):
                self._call_started(view, t)
            case ev.CallFailed(call_id=call_id, error=error, will_retry=will_retry):
                self._call_failed(call_id, error, will_retry, t)
            case ev.ContributionAdded(contribution=c):
                if c.carried_from:
                    self._note("carried", t, {"moot.agent.id": c.agent_id, "moot.carried_from": c.carried_from},
                               where=(c.round, "proposal"))
                else:
                    self._finish_call(c.metadata, c.agent_id, t, output=c.content)
            case ev.SummaryAdded(summary=summary, judge=judge):
                self._summary_added(summary, judge, t)
            case ev.SynthesisCompleted(solution=solution):
                answer = json.dumps({"solution": solution.description, "confidence": solution.confidence,
                                     "tradeoffs": solution.tradeoffs, "recommendations": solution.recommendations,
                                     "unresolved": solution.unresolved}, ensure_ascii=False)
                span = self._finish_call(solution.metadata, solution.synthesized_by, t, output=answer)
                if solution.confidence is not None:
                    span.attributes["moot.confidence"] = solution.confidence
            case ev.ConvergenceScored(score=score, usage=usage):
                answer = score.raw if score.raw is not None else json.dumps(
                    {"confidence": score.confidence, "reason": score.reason}, ensure_ascii=False)
                span = self._finish_call(usage, None, t, output=answer)
                if score.confidence is not None:
                    span.attributes["moot.confidence"] = score.confidence
            case ev.ClarificationsAsked(questions=questions, per_agent=per_agent) | ev.ClarificationsAnswered(
                    answers=questions, per_agent=per_agent):
                for agent_id, meta in per_agent.items():
                    asked = [q.question for q in questions if q.agent_id == agent_id]
                    self._finish_call(meta, agent_id, t, output=json.dumps({"questions": asked}, ensure_ascii=False))
            case ev.ToolCalled(call_id=call_id, agent_id=agent_id, tool=tool):
                parent = self._calls.get(call_id) or self._container(t)
                self._tools[tool.id] = self._span(f"tool/{call_id}/{tool.id}", f"execute_tool {tool.name}", parent, t, {
                    OPERATION: "execute_tool", "gen_ai.tool.name": tool.name, "gen_ai.tool.call.id": tool.id,
                    "gen_ai.tool.type": "function", AGENT_ID: agent_id, OI_KIND: "TOOL",
                    **({"gen_ai.tool.call.arguments": self._mask(tool.arguments)} if self.content else {}),
                    **({"moot.tool.from_text": True} if tool.from_text else {})})
            case ev.ToolReturned(tool_call_id=tool_call_id, ok=ok, summary=summary):
                tool_span = self._tools.pop(tool_call_id, None)
                if tool_span is not None:
                    tool_span.attributes["moot.tool.summary"] = summary
                    self._close(tool_span, t, None if ok else summary or "tool error")
            case ev.CallContinued(call_id=call_id, step=step):
                call_span = self._calls.get(call_id)
                if call_span is not None:
                    call_span.attributes["moot.tool_steps"] = step.index + 1
            case ev.ToolsReady(setup=setup):
                self._note("tools ready", t, {"moot.references": len(setup.references),
                                              "moot.mcp_servers": [x.name for x in setup.servers]})
            case ev.IndexRebuilding(done=done, total=total, texts=texts):
                if done >= total:
                    self._note("search index rebuilt", t, {"moot.index.events": total, "moot.index.texts": texts})
            case ev.Warning_(message=message, agent_id=agent_id):
                self._note("warning", t, {"moot.message": message, **({"moot.agent.id": agent_id} if agent_id else {})})
            case ev.SummaryRequested(agent_id=agent_id, focus=focus):
                self._note("summary requested", t, {"moot.agent.id": agent_id,
                                                    **({"moot.focus": focus} if focus and self.content else {})})
            case ev.SeatAnswered(agent_id=agent_id, via=via):
                self._note("person answered", t, {"moot.agent.id": agent_id, "moot.via": via})
            case ev.ControlChanged(action=action, effective=effective, command_id=command_id):
                self._note(f"{action} effective" if effective else action, t,
                           {"moot.command_id": command_id} if command_id else {})
            case ev.WindowLearned(model=model, window=window, source=source, ratio=ratio):
                self._note("window learned", t, {"gen_ai.request.model": model, "moot.window.source": source,
                                                 "moot.count_ratio": ratio,
                                                 **({"moot.window": window} if window is not None else {})})
            case ev.PinChanged(pin=pin):
                self._note("pinned" if pin.active else "unpinned", t, {"moot.pin": pin.label})
            case ev.NoteInjected(note=note):
                self._note("note", t, {"moot.note": note.text} if self.content else {})
            case ev.Converged(confidence=confidence, threshold=threshold):
                self._note("converged", t, {"moot.confidence": confidence, "moot.threshold": threshold})
            case ev.AdaptiveDecided(decision=d):
                self._note("adaptive decided", t, {"moot.round": d.round, "moot.decision": d.decision,
                                                   "moot.reason": d.reason, "moot.posterior": d.posterior,
                                                   "moot.threshold": d.threshold, "moot.step.calls": d.calls,
                                                   "moot.step.tokens": d.tokens})
            case ev.BudgetReached(reason=reason):
                self._note("budget reached", t, {"moot.reason": reason})
            case ev.DebateCompleted(status=status, totals=totals):
                self._end_run(t, status, None, totals)
            case ev.DebateInterrupted(status=status, reason=reason):
                # A user's stop is not an error of the run; an interruption (a signal) is.
                self._end_run(t, status, (reason or status) if status == "interrupted" else None, None,
                              calls_error=reason or status)
            case ev.DebateFailed(error=error):
                self._end_run(t, "failed", error, None, calls_error=error)
            case _:
                assert_never(event)
        self._last_ns = max(self._last_ns, t)

    def finish(self) -> None:
        """The log ends here (a debate still running, or killed and not resumed): close what is
        open at its last event, marked unfinished."""
        for span in self._open_spans():
            span.attributes["moot.unfinished"] = True
        self._close_all(self._last_ns, None, None)

    # ------------------------------------------------------------------ runs, rounds, phases

    def _started(self, event: ev.DebateStarted, t: int) -> None:
        self.debate_id = event.debate_id
        self.trace_id = event.trace_id or derived_trace_id(event.debate_id, event.ts)
        for info in [*event.agents, event.judge]:
            self._agents[info.id] = info
        config = event.config
        for agent in [*config.get("agents", []), config.get("judge") or {}]:
            url = strip_userinfo(agent.get("base_url")) if isinstance(agent, dict) else None
            if url:
                try:
                    parts = urlsplit(url)
                    if parts.hostname:
                        self._servers[str(agent.get("id") or "judge")] = (parts.hostname, parts.port)
                except ValueError:
                    pass
        attrs: dict[str, AttrValue] = {
            "moot.protocol": event.protocol, "moot.total_rounds": event.total_rounds,
            "moot.agents": [a.id for a in event.agents], "moot.judge": event.judge.id,
        }
        if event.provider_label:
            attrs["moot.providers"] = event.provider_label
        if self.content:
            attrs["moot.problem"] = event.problem
        self._open_root(event.seq, t, attrs)

    def _open_root(self, seq: int, t: int, attrs: dict[str, AttrValue]) -> None:
        if not self.trace_id:
            self.trace_id = derived_trace_id(self.debate_id, t / 1e9)
        self.runs += 1
        self._root = self._span(f"run/{seq}", "debate", None, t, {
            "moot.debate.id": self.debate_id, CONVERSATION_ID: self.debate_id, "moot.run": self.runs,
            OI_KIND: "CHAIN", **attrs})

    def _ensure_root(self, t: int) -> SpanRecord:
        if self._root is None:  # work after a run's end, or a log without `debate_started` (not moot's)
            self._open_root(-t, t, {})
        assert self._root is not None
        return self._root

    def _open_round(self, number: int, step: Literal["round", "turn"], key: str, t: int,
                    attrs: dict[str, AttrValue]) -> None:
        self._round_no, self._step = number, step
        self._rounds[number] = self._span(f"round/{key}", f"{step} {number}", self._ensure_root(t), t, {
            f"moot.{step}": number, OI_KIND: "CHAIN", **attrs})

    def _close_rounds(self, t: int, *, before: int | None = None, force: bool = False) -> None:
        """Close the rounds before `before` none of whose phases is still open (all of them, and
        their open phases as never ended, with `force`)."""
        for number in sorted(self._rounds):
            if force:
                for key in [k for k in self._phases if k[0] == number]:
                    self._close_phase(key, t, "no end recorded")
            elif (before is not None and number >= before) or any(k[0] == number for k in self._phases):
                continue
            self._close(self._rounds.pop(number), t)

    def _close_phase(self, key: tuple[int, str], t: int, error: str | None = None) -> None:
        span = self._phases.pop(key, None)
        if span is not None:
            self._close(span, t, error)

    def _end_run(self, t: int, status: str, error: str | None, totals: Usage | None, *,
                 calls_error: str | None = None) -> None:
        root = self._ensure_root(t)
        root.attributes["moot.status"] = status
        if totals is not None:  # the debate's, all runs so far (not gen_ai.usage.*: that would count twice)
            root.attributes.update({"moot.total.calls": totals.calls, "moot.total.input_tokens": totals.prompt_tokens,
                                    "moot.total.output_tokens": totals.completion_tokens,
                                    "moot.total.cost_usd": totals.cost_usd})
        self._close_all(t, calls_error or "no result recorded", error)

    def _open_spans(self) -> list[SpanRecord]:
        spans = [*self._tools.values(), *self._calls.values()]
        for s in self._summaries.values():
            spans += [s.span, *s.calls]
        return spans + [*self._phases.values(), *self._rounds.values(), *([self._root] if self._root else [])]

    def _close_all(self, t: int, error: str | None, root_error: str | None) -> None:
        """Close every open span at `t`, innermost first: open calls and summaries (work cut short)
        with `error`, the phase and round without, the run's root with `root_error`."""
        for span in self._tools.values():
            self._close(span, t, error)
        self._tools.clear()
        for span in list(self._calls.values()):
            if not self._in_summary(span):
                self._close(span, t, error)
        self._calls.clear()
        for agent_id in list(self._summaries):
            s = self._summaries.pop(agent_id)
            for call in s.calls:
                if call.end_ns == 0:
                    call.end_ns = t
                    call.error = call.error or error
                self._out(call)
            self._close(s.span, t, error)
        for key in list(self._phases):
            self._close_phase(key, t)
        for number in list(self._rounds):
            self._close(self._rounds.pop(number), t)
        if self._root is not None:
            self._close(self._root, t, root_error)
            self._root = None

    # ------------------------------------------------------------------ calls and summaries

    def _container(self, t: int, view: ViewRecord | None = None) -> SpanRecord:
        """Where a call or a summary hangs: its own phase (or round) when open, else the newest
        open phase, round or the run's root."""
        if view is not None:
            own = self._phases.get((view.round, view.phase)) or self._rounds.get(view.round)
            if own is not None:
                return own
        return self._newest() or self._ensure_root(t)

    def _newest(self) -> SpanRecord | None:
        if self._phases:
            return self._phases[max(self._phases, key=lambda k: (self._phases[k].start_ns, k[0]))]
        if self._rounds:
            return self._rounds[max(self._rounds)]
        return self._root

    def _call_started(self, view: ViewRecord, t: int) -> None:
        info = self._agents.get(view.agent_id)
        model = view.model or (info.model if info else "")
        attrs: dict[str, AttrValue] = {
            OPERATION: "chat", REQUEST_MODEL: model, REQUEST_MAX_TOKENS: view.max_tokens, AGENT_ID: view.agent_id,
            CONVERSATION_ID: self.debate_id, "moot.call_id": view.call_id, "moot.phase": view.phase,
            "moot.round": view.round, "moot.view.tokens": view.tokens.total, "moot.view.budget": view.budget,
            "moot.view.dropped": len(view.dropped_ids), OI_KIND: "LLM", "llm.model_name": model,
        }
        if info is not None:
            attrs.update({PROVIDER: info.provider, SYSTEM: info.provider, AGENT_NAME: info.name,
                          REQUEST_TEMPERATURE: info.temperature, "moot.agent.role": info.role})
        if view.target_agent_id:
            attrs["moot.target_agent_id"] = view.target_agent_id
        server = self._servers.get(view.agent_id)
        if server is not None:
            attrs["server.address"] = server[0]
            if server[1] is not None:
                attrs["server.port"] = server[1]
        if self._index is not None:
            try:
                messages = render_messages(view, self._index)
            except (KeyError, IndexError, ValueError):
                messages = []
            if messages:
                attrs[INPUT_MESSAGES] = json.dumps(
                    [{"role": m["role"], "parts": [{"type": "text", "content": self._mask(m["content"])}]}
                     for m in messages], ensure_ascii=False)
        if view.phase == "summarize":
            # Whose summary: a debater asked for the shared one (view layout 6) writes the judge's.
            owner = str(view.task_params.get("summary_for", view.agent_id))
            summary = self._summaries.get(owner)
            if summary is None:
                parent = self._container(t, view)
                span = self._span(f"summary/{view.call_id}", f"summary {owner}", parent, t, {
                    "moot.agent.id": owner, "moot.round": view.round, OI_KIND: "CHAIN"})
                summary = self._summaries[owner] = _Summary(span)
            for earlier in summary.calls:  # one summary's calls run one after another
                if earlier.end_ns == 0:
                    earlier.end_ns = max(earlier.start_ns, t)
            call = self._span(f"call/{view.call_id}", f"chat {model}", summary.span, t, attrs, kind="client")
            summary.calls.append(call)
        else:
            call = self._span(f"call/{view.call_id}", f"chat {model}", self._container(t, view), t, attrs,
                              kind="client")
        self._calls[view.call_id] = call

    def _call_failed(self, call_id: str, error: str, will_retry: bool, t: int) -> None:
        span = self._calls.get(call_id)
        if span is None:
            return
        if will_retry:
            span.events.append(SpanEvent("retry", t, {"moot.error": error}))
            return
        span.attributes[ERROR_TYPE] = "provider_error"
        del self._calls[call_id]
        summary = self._summary_of(span)
        if summary is not None:
            summary.failed.add(span.span_id)
            span.end_ns, span.error = max(span.start_ns, t), error
        else:
            self._close(span, t, error)

    def _finish_call(self, meta: CallMetadata, agent_id: str | None, t: int, *, output: str) -> SpanRecord:
        """Close the call `meta` reports (its end is its start plus its latency), with its usage."""
        span = self._calls.pop(meta.call_id, None) if meta.call_id else None
        if span is None:  # no `call_started` for it in the log: rebuild the span from the result alone
            start = t - max(0, meta.latency_ms) * 1_000_000
            span = self._span(f"call/{meta.call_id or t}", f"chat {meta.model}", self._container(t), start, {
                OPERATION: "chat", REQUEST_MODEL: meta.model, PROVIDER: meta.provider, SYSTEM: meta.provider,
                CONVERSATION_ID: self.debate_id, OI_KIND: "LLM", "llm.model_name": meta.model,
                **({AGENT_ID: agent_id} if agent_id else {})}, kind="client")
        self._usage(span, meta.prompt_tokens, meta.completion_tokens, meta.cost_usd, meta.model)
        if meta.finish_reason:
            span.attributes[FINISH_REASONS] = [meta.finish_reason]
        span.attributes["moot.attempts"] = meta.attempts
        if meta.usage_estimated:
            span.attributes["moot.usage_estimated"] = True
        if self.content:
            span.attributes[OUTPUT_MESSAGES] = self._output(output, meta.finish_reason)
        end = span.start_ns + meta.latency_ms * 1_000_000 if meta.latency_ms > 0 else t
        self._close(span, min(max(end, span.start_ns), max(t, span.start_ns)))
        return span

    def _output(self, text: str, finish_reason: str | None) -> str:
        return json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": self._mask(text)}],
                            "finish_reason": finish_reason or "stop"}], ensure_ascii=False)

    def _usage(self, span: SpanRecord, prompt: int, completion: int, cost: float, model: str | None) -> None:
        span.attributes.update({INPUT_TOKENS: prompt, OUTPUT_TOKENS: completion, "moot.cost_usd": cost, COST: cost,
                                "llm.token_count.prompt": prompt, "llm.token_count.completion": completion,
                                "llm.token_count.total": prompt + completion})
        if model:
            span.attributes[RESPONSE_MODEL] = model

    def _summary_added(self, s: Summary, judge: bool, t: int) -> None:
        md = s.metadata
        summary = self._summaries.pop(s.agent_id, None)
        if summary is None:  # no LLM call (rule-based): the span covers the summarizer's own time
            start = t - max(0, md.latency_ms) * 1_000_000
            summary = _Summary(self._span(f"summary/{s.id}", f"summary {s.agent_id}", self._container(t), start, {
                "moot.agent.id": s.agent_id, "moot.round": s.round, OI_KIND: "CHAIN"}))
        span = summary.span
        span.attributes.update({
            "moot.summary.id": s.id, "moot.summary.method": s.method, "moot.summary.strategy": s.strategy,
            "moot.summary.trigger": s.trigger, "moot.summary.scope": s.scope, "moot.summary.judge": judge,
            "moot.summary.covered_count": s.covered_count, "moot.summary.before_tokens": md.before_tokens,
            "moot.summary.after_tokens": md.after_tokens, "moot.summary.chunks": md.chunks,
        })
        if md.facts is not None and md.facts_kept is not None:  # what it lost (a summary made before: not counted)
            span.attributes.update({"moot.summary.facts_found": md.facts, "moot.summary.facts_kept": md.facts_kept,
                                    "moot.summary.facts_dropped": md.facts - md.facts_kept})
        if md.fallback_reason:
            span.attributes["moot.summary.fallback"] = md.fallback_reason
        if md.requested_method:
            span.attributes["moot.summary.requested_method"] = md.requested_method
        if self.content:
            span.attributes["moot.summary.text"] = self._mask(s.summary)
        ok = [c for c in summary.calls if c.span_id not in summary.failed]
        # The summary records the model it asked for, not the one that answered: no response model.
        if len(ok) == 1:
            self._usage(ok[0], md.prompt_tokens, md.completion_tokens, md.cost_usd, None)
            if self.content and s.method == "llm" and not md.fallback_reason:  # the one reply, as kept (capped)
                ok[0].attributes[OUTPUT_MESSAGES] = self._output(s.summary, None)
        elif ok or md.prompt_tokens or md.completion_tokens:
            self._usage(span, md.prompt_tokens, md.completion_tokens, md.cost_usd, None)  # one recorded sum
            span.attributes["moot.summary.calls"] = len(ok)
        for call in summary.calls:
            self._calls.pop(str(call.attributes.get("moot.call_id")), None)
            self._close(call, call.end_ns or t, call.error)
        self._close(span, t)

    def _summary_of(self, span: SpanRecord) -> _Summary | None:
        """The open summary a call belongs to (its writer's own, or the one it writes for another)."""
        return next((s for s in self._summaries.values() if any(c is span for c in s.calls)), None)

    def _in_summary(self, span: SpanRecord) -> bool:
        return self._summary_of(span) is not None

    # ------------------------------------------------------------------ notes

    def _note(self, name: str, t: int, attrs: dict[str, AttrValue], where: tuple[int, str] | None = None) -> None:
        target = (self._phases.get(where) if where else None) or self._newest()
        if target is not None:  # nothing open (after a run's end): the event stays in the log alone
            target.events.append(SpanEvent(name, t, attrs))


def build_spans(events: Iterable[ev.Event], *, content: bool = False, secrets: Sequence[str] = ()) -> list[SpanRecord]:
    """Every span of a recorded debate, in the order they ended (what `moot trace` exports)."""
    spans: list[SpanRecord] = []
    builder = TraceBuilder(spans.append, content=content, secrets=secrets)
    for event in events:
        builder.on_event(event)
    builder.finish()
    return spans


__all__ = ["TraceBuilder", "build_spans"]

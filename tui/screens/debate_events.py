"""The debate screen's event routing: what each engine event changes on screen.

The screen folds the events it receives into its own `DebateState` with `core.state.apply`,
whatever the runtime (live, watch, replay), so the screen is the same in all three. Every
event goes through one exhaustive `match` (`_route`, ending in `assert_never`): a new event
that the screen forgets is a type error. Built on `DebateLayout`, which it fills.
"""

from __future__ import annotations

from typing import assert_never

from textual import on

from ...core import events as ev
from ...core.context.fold import Fold
from ...core.context.index import DebateIndex
from ...core.models.state import DebateState
from ...core.models.terms import JUDGE_ID
from ..activity import calls_in_flight
from ..bridge import Bridge, DebateLoaded, EngineBatch, RuntimeFailed, TokenChunk
from ..followups import Followups
from ..runtime.base import Runtime
from ..widgets.agent_pane import AgentPane
from ..widgets.agent_roster import AgentRoster, AgentRow
from ..widgets.conversation_view import ConversationView
from ..widgets.event_log import EventLog
from .debate_layout import DebateLayout


def agent_usage(state: DebateState) -> dict[str, tuple[int, float]]:
    """Agent id (the judge's too) → (tokens, cost in USD) so far, every kind of call counted."""
    return {agent_id: (u.total_tokens, u.cost_usd) for agent_id, u in state.agent_totals.items()}


class DebateEvents(DebateLayout):
    """Engine events in (through the `Bridge`), the layout's widgets updated."""

    def __init__(self, runtime: Runtime, *, speed: float | None = None) -> None:
        super().__init__(runtime, speed=speed)
        self.index = DebateIndex()
        self.fold = Fold(self.state, self.index)
        """The state and index, moved by each event exactly as the engine moves its own."""
        self.loaded = False
        self.bridge = Bridge(runtime, self)
        self.followups = Followups()
        """What the feedback line becomes when a command takes effect."""
        self._usage_shown: dict[str, tuple[int, float]] = {}

    @on(DebateLoaded)
    async def _debate_loaded(self, message: DebateLoaded) -> None:
        snap = message.snapshot
        self.state = snap.state
        self.fold = Fold(self.state)
        self.index = self.fold.index
        log = self.query_one(EventLog)
        if self.state.problem:
            log.start_ts = self.state.created_at
        for event in snap.backlog:
            log.add_event(event)
            if isinstance(event, ev.PhaseStarted):
                self.phase = event.phase
        await self._build_panes()
        await self._load_panes()
        if self.state.status == "running":
            for started in calls_in_flight(snap.backlog):  # opened mid-call: shown running, with its time
                await self._route(started)
        self._show_usage()
        self.loaded = True
        if self.state.status != "running":
            self._debate_ended()
        self._refresh_header()

    async def _load_panes(self) -> None:
        state = self.state
        latest = {v.agent_id: v for r in state.rounds for v in r.calls if v.phase != "summarize"}
        for agent_id, view in latest.items():
            if (loaded := self.query_one(AgentRoster).row(agent_id)) is not None:
                loaded.activity.finished_any = True
                loaded.show_view(view.tokens, view.budget)
                loaded.refresh_status()
        if self.conversation is not None:
            messages = [c for r in state.rounds[-ConversationView.MAX_MESSAGES:] for c in r.contributions]
            judge_id = state.judge.id if state.judge else JUDGE_ID
            summaries = [s for r in state.rounds for s in r.summaries.values() if s.agent_id == judge_id]
            view_ = self.conversation
            view_.call_later(view_.load, messages, summaries[-1] if summaries else None)
        for agent_id, pane in self.panes.items():
            contributions = [c for r in state.rounds for c in r.contributions if c.agent_id == agent_id]
            summaries = [r.summaries[agent_id] for r in state.rounds if agent_id in r.summaries]
            summary = summaries[-1] if summaries else (state.judge_summary if pane.judge else None)
            views = [v for r in state.rounds for v in r.calls if v.agent_id == agent_id and v.phase != "summarize"]
            pane.call_later(pane.load, contributions, summary, views[-1] if views else None,
                            state.final_solution if pane.judge else None)

    @on(EngineBatch)
    async def _engine_batch(self, message: EngineBatch) -> None:
        """Everything that arrived since the last frame, in order; the header and the usage
        once at the end. The bridge sends the next batch after the frame that draws this one."""
        log = self.query_one(EventLog)
        try:
            for item in message.items:
                if isinstance(item, TokenChunk):
                    self._stream(item)
                    continue
                self.fold.apply(item)
                log.add_event(item)
                if (line := self.followups.on_event(item)) is not None:
                    self.feedback(line)
                await self._route(item)
            self._show_usage()
            self._refresh_header()
        finally:
            self.call_after_refresh(self.bridge.drawn)

    async def _route(self, event: ev.Event) -> None:
        """What each event changes on screen (the header and the log are refreshed by the caller).

        Pane work is queued on the pane (`call_later`): the screen repaints only when its
        own queue is idle, so it hands the work over instead of doing it here. The roster
        rows and a conversation's transcript follow the same events."""
        judge = self.judge_pane
        judge_id = self.state.judge.id if self.state.judge else JUDGE_ID
        roster = self.query_one(AgentRoster)
        conv = self.conversation
        pane: AgentPane | None
        row: AgentRow | None
        match event:
            case ev.DebateStarted():
                await self._build_panes()
            case ev.PhaseStarted(phase=phase):
                self.phase = phase
                for pane in self.panes.values():
                    if pane.status == "done":
                        pane.status = "waiting"
                for row in roster.rows.values():
                    row.activity.phase_over()
                    row.refresh_status()
            case ev.CallStarted(view=view):
                if view.phase in ("clarify", "score"):
                    self.phase = view.phase  # no phase_started for these steps
                if view.phase == "turn":
                    self.phase = "turn"
                if (pane := self.pane(view.agent_id)) is not None:
                    pane.call_later(pane.call_started, view, event.ts, self.runtime.now())
                if (row := roster.row(view.agent_id)) is not None:
                    row.activity.started(view.call_id, view.phase, event.ts)
                    if view.phase != "summarize":
                        row.show_view(view.tokens, view.budget)
                    row.refresh_status()
                if conv is not None:
                    conv.call_later(conv.call_started, view)
            case ev.ContributionAdded(contribution=c):
                if (pane := self.pane(c.agent_id)) is not None:
                    pane.call_later(pane.contribution_added, c)
                self._row_ended(c.agent_id, c.metadata.call_id)
                if conv is not None:
                    conv.call_later(conv.contribution_added, c)
            case ev.CallFailed(agent_id=agent_id, call_id=call_id, error=error, will_retry=will_retry):
                if (pane := self.pane(agent_id)) is not None:
                    pane.call_later(pane.call_failed, call_id, error, will_retry)
                if not will_retry and (row := roster.row(agent_id)) is not None:
                    row.activity.failed(call_id, error)
                    row.refresh_status()
                if conv is not None:
                    conv.call_later(conv.call_failed, call_id, error, will_retry)
            case ev.SummaryAdded(summary=summary, judge=for_judge):
                pane = judge if for_judge else self.pane(summary.agent_id)
                if pane is not None:
                    pane.call_later(pane.summary_added, summary)
                self._row_ended(judge_id if for_judge else summary.agent_id, None)
                if conv is not None and summary.agent_id == judge_id and summary.scope == "conversation":
                    conv.call_later(conv.summary_added, summary)
            case ev.SummaryRequested(agent_id=agent_id, focus=focus):
                if (pane := self.pane(agent_id)) is not None:
                    pane.call_later(pane.summary_requested, focus)
            case ev.ClarificationsAsked(questions=items, round=r) | ev.ClarificationsAnswered(answers=items, round=r):
                answered = isinstance(event, ev.ClarificationsAnswered)
                for agent_id, pane in self.panes.items():
                    mine = [c for c in items if c.agent_id == agent_id]
                    pane.call_later(pane.clarifications, mine, answered, r)
                for row in roster.rows.values():
                    row.activity.ended_phase("clarify")
                    row.refresh_status()
            case ev.ConvergenceScored(score=score, usage=usage):
                if judge is not None:
                    judge.call_later(judge.convergence_scored, score, usage.call_id)
                self._row_ended(judge_id, usage.call_id)
            case ev.SynthesisCompleted(solution=solution):
                if judge is not None:
                    judge.call_later(judge.show_solution, solution)
                self._row_ended(judge_id, solution.metadata.call_id)
                if conv is not None:
                    conv.call_later(conv.show_solution, solution)
            case ev.DebateCompleted() | ev.DebateInterrupted() | ev.DebateFailed():
                self._debate_ended()
                for row in roster.rows.values():
                    row.activity.stopped()
                    row.refresh_status()
                self.refresh_bindings()
            case ev.ControlChanged():
                self.refresh_bindings()
            case ev.ToolCalled(call_id=call_id, agent_id=agent_id, tool=tool):
                if (pane := self.pane(agent_id)) is not None:
                    pane.call_later(pane.tool_called, call_id, tool)
            case ev.ToolReturned(call_id=call_id, agent_id=agent_id, tool_call_id=tool_call_id, ok=ok, summary=summary):
                if (pane := self.pane(agent_id)) is not None:
                    pane.call_later(pane.tool_returned, call_id, tool_call_id, ok, summary)
            case ev.CallContinued(agent_id=agent_id, tokens=tokens, call_id=call_id, round=number):
                if (pane := self.pane(agent_id)) is not None:  # the gauge counts the tool loop's tier
                    budget = next((v.budget for r in self.state.rounds[number - 1:number] for v in r.calls
                                   if v.call_id == call_id), 0)
                    pane.call_later(pane.gauge.update_view, tokens, budget)
            case (ev.DebateResumed() | ev.RoundStarted() | ev.PhaseCompleted() | ev.Token() | ev.Warning_()
                  | ev.NoteInjected() | ev.SeatAnswered()
                  | ev.Converged() | ev.AdaptiveDecided() | ev.BudgetReached() | ev.WindowLearned() | ev.ToolsReady()
                  | ev.IndexRebuilding()):
                pass  # the header and the event log show these
            case _:
                assert_never(event)

    def _row_ended(self, agent_id: str, call_id: str | None) -> None:
        row = self.query_one(AgentRoster).row(agent_id)
        if row is not None:
            row.activity.ended(call_id)
            row.refresh_status()

    def _show_usage(self) -> None:
        """Each pane's tokens and cost so far, sent to the panes whose numbers changed."""
        for agent_id, usage in agent_usage(self.state).items():
            pane = self.pane(agent_id)
            if pane is not None and self._usage_shown.get(agent_id) != usage:
                self._usage_shown[agent_id] = usage
                pane.call_later(pane.usage, *usage)

    def _stream(self, chunk: TokenChunk) -> None:
        """A call's streamed text: its pane, the conversation, the roster row's status."""
        if (pane := self.pane(chunk.agent_id)) is not None:
            pane.call_later(pane.stream, chunk)
        if (conv := self.conversation) is not None:
            conv.call_later(conv.stream, chunk)
        row = self.query_one(AgentRoster).row(chunk.agent_id)
        if row is not None and chunk.call_id not in row.activity.streaming:
            row.activity.token(chunk.call_id)
            row.refresh_status()

    @on(RuntimeFailed)
    def _runtime_failed(self, message: RuntimeFailed) -> None:
        self.query_one(EventLog).add_line(f"✗ {message.error}", "error")
        self.runtime.error = message.error
        self._refresh_header()

    def _debate_ended(self) -> None:
        failed = self.state.status == "failed"
        for pane in self.panes.values():
            pane.call_later(pane.debate_ended, failed)
        judge = self.judge_pane
        if self.state.final_solution is not None and self.zoomed is None and judge is not None:
            if self.compact:
                # The focus layout shows one pane already: the solution's, beside the roster
                # (zoomed, the roster went and the first escape only brought it back).
                self._show_current(judge.info.id)
            else:
                # Stay on the final solution until the user quits (escape shows every pane again).
                self.zoom(judge)

"""The debate screen's roster rows: each agent's line beside a conversation's transcript (or the
focus layout's one pane) — what it is doing now, for how long, and its last view's gauge.

A part of the screen (`debate_events.DebatePart`). Each row keeps its agent's calls in flight
(`tui/activity.py`); this part moves them with the events that start, stream and end calls.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...core import events as ev
from ...core.models.terms import JUDGE_ID
from ..bridge import TokenChunk
from ..runtime.base import Snapshot
from ..widgets.agent_roster import AgentRoster
from .debate_events import DebatePart, Subscription, handle, handle_end


class RosterRows(DebatePart):
    """The roster widget's rows, kept to what each agent's calls are doing."""

    def subscriptions(self) -> Iterable[Subscription]:
        return [handle(ev.DebateStarted, self._debate_started), handle(TokenChunk, self._stream),
                handle(ev.PhaseStarted, self._phase_started), handle(ev.CallStarted, self._call_started),
                handle(ev.ContributionAdded, self._contribution_added), handle(ev.CallFailed, self._call_failed),
                handle(ev.SummaryAdded, self._summary_added),
                handle(ev.ClarificationsAsked, self._clarifications),
                handle(ev.ClarificationsAnswered, self._clarifications),
                handle(ev.ConvergenceScored, self._convergence_scored),
                handle(ev.SynthesisCompleted, self._synthesis_completed),
                *handle_end(self._ended)]

    @property
    def roster(self) -> AgentRoster:
        return self.screen.query_one(AgentRoster)

    @property
    def _judge_id(self) -> str:
        judge = self.debate.state.judge
        return judge.id if judge else JUDGE_ID

    async def _build(self) -> None:
        """A row per agent and the judge (before the panes part lays out, which marks a row)."""
        state = self.debate.state
        if state.agents:
            await self.roster.set_agents(state.agents, state.judge)

    async def _debate_started(self, event: ev.DebateStarted) -> None:
        await self._build()

    async def loaded(self, snapshot: Snapshot) -> None:
        await self._build()
        latest = {v.agent_id: v for r in self.debate.state.rounds for v in r.calls if v.phase != "summarize"}
        for agent_id, view in latest.items():
            if (row := self.roster.row(agent_id)) is not None:
                row.activity.finished_any = True
                row.show_view(view.tokens, view.budget)
                row.refresh_status()

    def _ended_call(self, agent_id: str, call_id: str | None) -> None:
        row = self.roster.row(agent_id)
        if row is not None:
            row.activity.ended(call_id)
            row.refresh_status()

    def _stream(self, chunk: TokenChunk) -> None:
        row = self.roster.row(chunk.agent_id)
        if row is not None and chunk.call_id not in row.activity.streaming:
            row.activity.token(chunk.call_id)
            row.refresh_status()

    def _phase_started(self, event: ev.PhaseStarted) -> None:
        for row in self.roster.rows.values():
            row.activity.phase_over()
            row.refresh_status()

    def _call_started(self, event: ev.CallStarted) -> None:
        view = event.view
        if (row := self.roster.row(view.agent_id)) is not None:
            row.activity.started(view.call_id, view.phase, event.ts)
            if view.phase != "summarize":
                row.show_view(view.tokens, view.budget)
            row.refresh_status()

    def _contribution_added(self, event: ev.ContributionAdded) -> None:
        self._ended_call(event.contribution.agent_id, event.contribution.metadata.call_id)

    def _call_failed(self, event: ev.CallFailed) -> None:
        if not event.will_retry and (row := self.roster.row(event.agent_id)) is not None:
            row.activity.failed(event.call_id, event.error)
            row.refresh_status()

    def _summary_added(self, event: ev.SummaryAdded) -> None:
        self._ended_call(self._judge_id if event.judge else event.summary.agent_id, None)

    def _clarifications(self, event: ev.ClarificationsAsked | ev.ClarificationsAnswered) -> None:
        for row in self.roster.rows.values():
            row.activity.ended_phase("clarify")
            row.refresh_status()

    def _convergence_scored(self, event: ev.ConvergenceScored) -> None:
        self._ended_call(self._judge_id, event.usage.call_id)

    def _synthesis_completed(self, event: ev.SynthesisCompleted) -> None:
        self._ended_call(self._judge_id, event.solution.metadata.call_id)

    def _ended(self, event: ev.TerminalEvent) -> None:
        for row in self.roster.rows.values():
            row.activity.stopped()
            row.refresh_status()

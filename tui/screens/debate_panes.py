"""The debate screen's agent panes: a pane per agent (and the judge's), or a conversation's one
shared transcript, and how they are laid out (grid, focus layout, zoom).

A part of the screen (`debate_events.DebatePart`): it owns the panes, the transcript and which
pane is shown, and handles the events whose text, status or gauge a pane shows. Pane work is
queued on the pane (`call_later`): the screen repaints only when its own queue is idle, so the
part hands the work over instead of doing it in the screen's turn. Streamed text, which only
joins a transcript, goes in at once when nothing waits in the pane's queue before it.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.containers import Grid, Horizontal
from textual.screen import Screen
from textual.widgets import Footer

from ...core import events as ev
from ...core.models.state import AgentInfo, DebateState
from ...core.models.terms import JUDGE_ID
from ..bridge import TokenChunk
from ..runtime.base import Snapshot
from ..textual_compat import nothing_queued
from ..widgets.agent_pane import AgentPane
from ..widgets.agent_roster import AgentRoster
from ..widgets.command_input import CommandInput
from ..widgets.conversation_view import ConversationView
from .debate_events import Debate, DebatePart, Subscription, handle, handle_end
from .debate_layout import GRID_CHROME, NARROW_WIDTH, SHORT_HEIGHT, TINY_WIDTH, grid_shape, needs_focus_layout


def agent_usage(state: DebateState) -> dict[str, tuple[int, float]]:
    """Agent id (the judge's too) → (tokens, cost in USD) so far, every kind of call counted."""
    return {agent_id: (u.total_tokens, u.cost_usd) for agent_id, u in state.agent_totals.items()}


class AgentPanes(DebatePart):
    """The panes, the shared transcript of a conversation, and their layout."""

    def __init__(self, screen: Screen[None], debate: Debate) -> None:
        super().__init__(screen, debate)
        self.panes: dict[str, AgentPane] = {}
        self.conversation: ConversationView | None = None
        self.compact = False
        """The focus layout: one pane (`current`) beside the roster, for terminals too small for all."""
        self.current: str | None = None
        self._usage_shown: dict[str, tuple[int, float]] = {}

    def subscriptions(self) -> Iterable[Subscription]:
        return [handle(ev.DebateStarted, self._debate_started), handle(TokenChunk, self._stream),
                handle(ev.PhaseStarted, self._phase_started), handle(ev.CallStarted, self._call_started),
                handle(ev.ContributionAdded, self._contribution_added), handle(ev.CallFailed, self._call_failed),
                handle(ev.SummaryAdded, self._summary_added), handle(ev.SummaryRequested, self._summary_requested),
                handle(ev.ClarificationsAsked, self._clarifications),
                handle(ev.ClarificationsAnswered, self._clarifications),
                handle(ev.ConvergenceScored, self._convergence_scored),
                handle(ev.SynthesisCompleted, self._synthesis_completed),
                *handle_end(self._ended),
                handle(ev.ToolCalled, self._tool_called), handle(ev.ToolReturned, self._tool_returned),
                handle(ev.CallContinued, self._call_continued)]

    # ------------------------------------------------------------------ building and loading

    async def _build(self) -> None:
        """The layout for the debate's protocol: a pane per agent, or a conversation's shared
        transcript beside the roster of agents (the roster part fills the roster first)."""
        state = self.debate.state
        if self.panes or self.conversation is not None or not state.agents:
            return
        screen = self.screen
        if state.protocol == "conversation":
            names = {a.id: (a.name, a.role) for a in [*state.agents, *([state.judge] if state.judge else [])]}
            self.conversation = ConversationView(names, id="conversation")
            screen.set_class(True, "-conversation")
            await screen.query_one("#main", Horizontal).mount(self.conversation, before=screen.query_one(AgentRoster))
            screen.refresh_bindings()
            return
        infos: list[tuple[AgentInfo, bool]] = [(a, False) for a in state.agents]
        if state.judge is not None:
            # single, vote and adaptive make no judge call: that pane shows the final answer the vote reached
            no_judge = state.protocol in ("single", "vote", "adaptive")
            infos.append((state.judge.model_copy(update={"name": "Final answer", "role": "by vote"})
                          if no_judge else state.judge, True))
        panes = [AgentPane(info, judge=judge) for info, judge in infos]
        for pane in panes:
            pane.streams = self.debate.runtime.mode != "watch"
        self.panes = {p.info.id: p for p in panes}
        await screen.query_one("#panes", Grid).mount_all(panes)
        self.relayout()
        screen.refresh_bindings()

    async def _debate_started(self, event: ev.DebateStarted) -> None:
        await self._build()

    async def loaded(self, snapshot: Snapshot) -> None:
        await self._build()
        state = self.debate.state
        if self.conversation is not None:
            messages = [c for r in state.rounds[-ConversationView.MAX_MESSAGES:] for c in r.contributions]
            judge_id = state.judge.id if state.judge else JUDGE_ID
            summaries = [s for r in state.rounds for s in r.summaries.values() if s.agent_id == judge_id]
            view_ = self.conversation
            view_.call_later(view_.load, messages, summaries[-1] if summaries else None)
        for agent_id, pane in self.panes.items():
            contributions = [c for r in state.rounds for c in r.contributions if c.agent_id == agent_id]
            summaries_ = [r.summaries[agent_id] for r in state.rounds if agent_id in r.summaries]
            summary = summaries_[-1] if summaries_ else (state.judge_summary if pane.judge else None)
            views = [v for r in state.rounds for v in r.calls if v.agent_id == agent_id and v.phase != "summarize"]
            pane.call_later(pane.load, contributions, summary, views[-1] if views else None,
                            state.final_solution if pane.judge else None)

    # ------------------------------------------------------------------ which pane

    def pane(self, agent_id: str | None) -> AgentPane | None:
        return self.panes.get(agent_id or "")

    @property
    def judge_pane(self) -> AgentPane | None:
        judge = self.debate.state.judge
        return self.pane(judge.id if judge else JUDGE_ID)

    def focused_pane(self) -> AgentPane | None:
        focused = self.screen.focused
        return focused if isinstance(focused, AgentPane) else None

    def focused_agent_id(self) -> str | None:
        """The agent whose pane has focus, or the one shown in the focus layout."""
        pane = self.focused_pane()
        return pane.info.id if pane else (self.current if self.compact else None)

    @property
    def zoomed(self) -> AgentPane | None:
        return next((p for p in self.panes.values() if p.has_class("-zoomed")), None)

    # ------------------------------------------------------------------ layout

    def relayout(self) -> None:
        screen = self.screen
        grid = screen.query_one("#panes", Grid)
        width, height = screen.size
        screen.set_class(width < NARROW_WIDTH, "-narrow")
        screen.set_class(width < TINY_WIDTH, "-tiny")
        screen.set_class(height < SHORT_HEIGHT, "-short")
        footer = screen.query_one(Footer)
        footer.compact = width < TINY_WIDTH
        if footer.show_command_palette != (width >= TINY_WIDTH):
            # Below 100 columns the keys need the room: ctrl+p still opens the palette (/help says so).
            footer.show_command_palette = width >= TINY_WIDTH
            footer.refresh(recompose=True)
        compact = bool(self.panes) and needs_focus_layout(len(self.panes), width, max(1, height - GRID_CHROME))
        if compact != self.compact:
            self.compact = compact
            screen.set_class(compact, "-compact")
            screen.refresh_bindings()
        if compact:
            self.show_current(self.current or next(iter(self.panes)))
        n = 1 if self.zoomed is not None or compact else len(self.panes)
        cols, rows = grid_shape(n, width, max(1, height - GRID_CHROME))
        grid.styles.grid_size_columns = cols
        grid.styles.grid_size_rows = rows

    def show_current(self, agent_id: str) -> None:
        """The focus layout's pane: shown, focused unless the user is typing, marked in the roster."""
        self.current = agent_id
        for pid, p in self.panes.items():
            p.set_class(pid == agent_id, "-current")
        self.screen.query_one(AgentRoster).mark_focused(agent_id if self.compact else None)
        pane = self.panes.get(agent_id)
        if self.compact and pane is not None and not isinstance(self.screen.focused, CommandInput):
            self.screen.set_focus(pane)

    def zoom(self, pane: AgentPane | None) -> None:
        """Show one pane in place of the grid (None: every pane again)."""
        for p in self.panes.values():
            p.set_class(p is pane, "-zoomed")
        if pane is not None and self.compact:
            self.show_current(pane.info.id)
        self.screen.set_class(pane is not None, "-zoom")
        self.relayout()

    def pick(self, agent_id: str) -> None:
        """An agent chosen (its number, `]`, the roster): its pane focused, or shown in the focus layout."""
        if agent_id not in self.panes:
            return
        if self.compact:
            self.show_current(agent_id)
        else:
            self.screen.set_focus(self.panes[agent_id])

    def focus_moved(self) -> None:
        pane = self.focused_pane()
        if pane is not None and self.current != pane.info.id:
            self.current = pane.info.id
            if self.compact:
                self.show_current(pane.info.id)

    def toggle_zoom(self) -> None:
        self.zoom(None if self.zoomed is not None else (self.focused_pane() or self.judge_pane))

    def show_agent(self, number: int) -> None:
        """Key 1–9: that agent's pane (0: the judge's); in the focus layout it replaces the shown one."""
        state = self.debate.state
        ids = [a.id for a in state.agents]
        agent_id = (state.judge.id if state.judge else None) if number == 0 else (
            ids[number - 1] if number <= len(ids) else None)
        if agent_id is not None:
            self.pick(agent_id)

    def next_agent(self, step: int) -> None:
        ids = list(self.panes)
        if ids:
            at = ids.index(self.current) if self.current in ids else 0
            self.pick(ids[(at + step) % len(ids)])

    def follow(self) -> None:
        """`end`: the focused pane (or every pane) back to following the newest text."""
        focused = self.focused_pane()
        for pane in [focused] if focused else self.panes.values():
            pane.follow()

    # ------------------------------------------------------------------ the clock and the usage

    def tick(self, now: float) -> None:
        for pane in self.panes.values():
            pane.tick(now)

    def show_usage(self) -> None:
        """Each pane's tokens and cost so far, sent to the panes whose numbers changed."""
        for agent_id, usage in agent_usage(self.debate.state).items():
            pane = self.pane(agent_id)
            if pane is not None and self._usage_shown.get(agent_id) != usage:
                self._usage_shown[agent_id] = usage
                pane.call_later(pane.usage, *usage)

    def debate_ended(self) -> None:
        """Every pane's last status; the final solution shown alone, unless a pane is zoomed."""
        failed = self.debate.state.status == "failed"
        for pane in self.panes.values():
            pane.call_later(pane.debate_ended, failed)
        judge = self.judge_pane
        if self.debate.state.final_solution is not None and self.zoomed is None and judge is not None:
            if self.compact:
                # The focus layout shows one pane already: the solution's, beside the roster
                # (zoomed, the roster went and the first escape only brought it back).
                self.show_current(judge.info.id)
            else:
                # Stay on the final solution until the user quits (escape shows every pane again).
                self.zoom(judge)

    # ------------------------------------------------------------------ events

    def _stream(self, chunk: TokenChunk) -> None:
        # Streamed text only joins the transcript (it is drawn with the next frame): done at
        # once when nothing is queued on the pane before it, instead of a message to each pane
        # for every batch; queued behind the pane's earlier work otherwise, to keep its order.
        if (pane := self.pane(chunk.agent_id)) is not None:
            if nothing_queued(pane):
                pane.stream(chunk)
            else:
                pane.call_later(pane.stream, chunk)
        if (conv := self.conversation) is not None:
            if nothing_queued(conv):
                conv.stream(chunk)
            else:
                conv.call_later(conv.stream, chunk)

    def _phase_started(self, event: ev.PhaseStarted) -> None:
        for pane in self.panes.values():
            if pane.status == "done":
                pane.status = "waiting"

    def _call_started(self, event: ev.CallStarted) -> None:
        view = event.view
        if (pane := self.pane(view.agent_id)) is not None:
            pane.call_later(pane.call_started, view, event.ts, self.debate.runtime.now())
        if (conv := self.conversation) is not None:
            conv.call_later(conv.call_started, view)

    def _contribution_added(self, event: ev.ContributionAdded) -> None:
        c = event.contribution
        if (pane := self.pane(c.agent_id)) is not None:
            pane.call_later(pane.contribution_added, c)
        if (conv := self.conversation) is not None:
            conv.call_later(conv.contribution_added, c)

    def _call_failed(self, event: ev.CallFailed) -> None:
        if (pane := self.pane(event.agent_id)) is not None:
            pane.call_later(pane.call_failed, event.call_id, event.error, event.will_retry)
        if (conv := self.conversation) is not None:
            conv.call_later(conv.call_failed, event.call_id, event.error, event.will_retry)

    def _summary_added(self, event: ev.SummaryAdded) -> None:
        summary = event.summary
        pane = self.judge_pane if event.judge else self.pane(summary.agent_id)
        if pane is not None:
            pane.call_later(pane.summary_added, summary)
        judge = self.debate.state.judge
        conv = self.conversation
        if conv is not None and summary.agent_id == (judge.id if judge else JUDGE_ID) and summary.scope == "conversation":
            conv.call_later(conv.summary_added, summary)

    def _summary_requested(self, event: ev.SummaryRequested) -> None:
        if (pane := self.pane(event.agent_id)) is not None:
            pane.call_later(pane.summary_requested, event.focus)

    def _clarifications(self, event: ev.ClarificationsAsked | ev.ClarificationsAnswered) -> None:
        answered = isinstance(event, ev.ClarificationsAnswered)
        items = event.answers if isinstance(event, ev.ClarificationsAnswered) else event.questions
        for agent_id, pane in self.panes.items():
            mine = [c for c in items if c.agent_id == agent_id]
            pane.call_later(pane.clarifications, mine, answered, event.round)

    def _convergence_scored(self, event: ev.ConvergenceScored) -> None:
        if (judge := self.judge_pane) is not None:
            judge.call_later(judge.convergence_scored, event.score, event.usage.call_id)

    def _synthesis_completed(self, event: ev.SynthesisCompleted) -> None:
        if (judge := self.judge_pane) is not None:
            judge.call_later(judge.show_solution, event.solution)
        if (conv := self.conversation) is not None:
            conv.call_later(conv.show_solution, event.solution)

    def _ended(self, event: ev.TerminalEvent) -> None:
        self.debate_ended()

    def _tool_called(self, event: ev.ToolCalled) -> None:
        if (pane := self.pane(event.agent_id)) is not None:
            pane.call_later(pane.tool_called, event.call_id, event.tool)

    def _tool_returned(self, event: ev.ToolReturned) -> None:
        if (pane := self.pane(event.agent_id)) is not None:
            pane.call_later(pane.tool_returned, event.call_id, event.tool_call_id, event.ok, event.summary)

    def _call_continued(self, event: ev.CallContinued) -> None:
        if (pane := self.pane(event.agent_id)) is not None:  # the gauge counts the tool loop's tier
            number = event.round
            budget = next((v.budget for r in self.debate.state.rounds[number - 1:number] for v in r.calls
                           if v.call_id == event.call_id), 0)
            pane.call_later(pane.gauge.update_view, event.tokens, budget)

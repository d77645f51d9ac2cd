"""An incremental index over a debate's state: lookups by id and each agent's perspective.

Building a view must cost the same at round 200 as at round 10, so nothing here
scans the whole debate per call: the index is updated once per event.
"""

from __future__ import annotations

from typing import assert_never

from moot.core.events import (
    BudgetReached,
    CallFailed,
    CallStarted,
    ClarificationsAnswered,
    ClarificationsAsked,
    ContributionAdded,
    ControlChanged,
    Converged,
    ConvergenceScored,
    DebateCompleted,
    DebateFailed,
    DebateInterrupted,
    DebateResumed,
    DebateStarted,
    Event,
    NoteInjected,
    PhaseCompleted,
    PhaseStarted,
    RoundStarted,
    SummaryAdded,
    SummaryRequested,
    SynthesisCompleted,
    Token,
    Warning_,
)
from moot.core.models import Contribution, DebateState, Summary


class DebateIndex:
    def __init__(self, state: DebateState | None = None) -> None:
        self.contributions: dict[str, Contribution] = {}
        self.summaries: dict[str, Summary] = {}
        self.perspective: dict[str, list[str]] = {}
        """agent id → ids of its proposals, refinements and the critiques aimed at it, in order."""
        self.latest_summary: dict[str, Summary] = {}
        self.names: dict[str, tuple[str, str]] = {}
        """agent id → (display name, role)."""
        self.prompts: dict[str, str] = {}
        self.problem = ""
        if state is not None:
            self.load(state)

    def load(self, state: DebateState) -> None:
        self.prompts = state.prompts
        self.problem = state.problem
        for info in [*state.agents, *([state.judge] if state.judge else [])]:
            self.names[info.id] = (info.name, info.role)
        for rnd in state.rounds:
            for c in rnd.contributions:  # already in the order they were emitted
                self.add_contribution(c)
            for s in [*rnd.replaced_summaries, *rnd.summaries.values()]:
                self.add_summary(s)
        if state.judge_summary:
            self.summaries[state.judge_summary.id] = state.judge_summary

    def on_event(self, event: Event) -> None:
        match event:
            case ContributionAdded(contribution=c):
                self.add_contribution(c)
            case SummaryAdded(summary=s, judge=True):
                self.summaries[s.id] = s
            case SummaryAdded(summary=s):
                self.add_summary(s)
            case DebateStarted():
                self.prompts = dict(event.prompts)
                self.problem = event.problem
                for info in [*event.agents, event.judge]:
                    self.names[info.id] = (info.name, info.role)
            case (DebateResumed() | RoundStarted() | PhaseStarted() | PhaseCompleted() | CallStarted() | Token()
                  | CallFailed() | SummaryRequested() | SynthesisCompleted() | Warning_() | ControlChanged()
                  | ClarificationsAsked() | ClarificationsAnswered() | NoteInjected() | ConvergenceScored()
                  | Converged() | BudgetReached() | DebateCompleted() | DebateInterrupted() | DebateFailed()):
                pass  # nothing to index
            case _:
                assert_never(event)

    def add_contribution(self, c: Contribution) -> None:
        if c.id in self.contributions:
            return
        self.contributions[c.id] = c
        owner = c.target_agent_id if c.type == "critique" else c.agent_id
        if owner:
            self.perspective.setdefault(owner, []).append(c.id)

    def add_summary(self, s: Summary) -> None:
        self.summaries[s.id] = s
        prev = self.latest_summary.get(s.agent_id)
        if prev is None or (s.round, s.ts) >= (prev.round, prev.ts):
            self.latest_summary[s.agent_id] = s

    def perspective_items(self, agent_id: str) -> list[Contribution]:
        return [self.contributions[i] for i in self.perspective.get(agent_id, [])]

    def uncovered_items(self, agent_id: str, summary: Summary | None) -> list[Contribution]:
        """Perspective items newer than `summary` (all of them when there is none).

        Walks back from the newest item and stops at the first covered one, so the
        cost is the size of the recent window, not of the whole debate."""
        ids = self.perspective.get(agent_id, [])
        if summary is None:
            return [self.contributions[i] for i in ids]
        out: list[Contribution] = []
        for cid in reversed(ids):
            if cid == summary.covered_through:
                break
            out.append(self.contributions[cid])
        out.reverse()
        return out

    def name(self, agent_id: str) -> str:
        return self.names.get(agent_id, (agent_id, ""))[0]

    def role(self, agent_id: str) -> str:
        return self.names.get(agent_id, ("", "generalist"))[1]

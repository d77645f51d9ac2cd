"""An incremental index over a debate's state: lookups by id, each agent's perspective, the transcript.

Building a view must cost the same at round 200 (or turn 10,000) as at round 10, so
nothing here scans the whole debate per call: the index is updated once per event,
and a view's items are found by binary search.

Items are kept in a canonical order — step (round or turn), then phase, then agent
and target in config order — not in the order calls happened to finish. With the
visibility rule below, that makes every view independent of timing.

Visibility: a view built for step `r`, phase `p` sees only items of earlier steps and
of earlier phases of step `r` (`before=(r, rank(p))`), never work of its own phase,
so calls running side by side see the debate as it stood when their phase began.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from typing import assert_never

from .. import events as ev
from ..models.state import AgentInfo, Contribution, DebateState, Pin, Summary

PHASE_RANK: dict[str, int] = {
    "summarize": 0, "proposal": 1, "answer": 1, "message": 1, "turn": 1, "critique": 2, "rank": 2, "ranking": 2,
    "refinement": 3,
    "score": 4, "synthesis": 5,
}
"""Where each phase (and the contribution type it makes) sits inside a step."""

Key = tuple[int, int, int, int]
"""(step, phase rank, agent rank, target rank): the canonical order of items."""


def barrier(step: int, phase: str) -> tuple[int, int]:
    """What a view of `phase` in `step` may see: everything strictly before this."""
    return (step, PHASE_RANK[phase])


class _Ordered:
    """Contribution ids in canonical order, with their keys for binary search."""

    __slots__ = ("ids", "keys")

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.keys: list[Key] = []

    def add(self, key: Key, cid: str) -> None:
        if not self.keys or key >= self.keys[-1]:  # the usual case: the newest item
            self.keys.append(key)
            self.ids.append(cid)
            return
        i = bisect_right(self.keys, key)
        self.keys.insert(i, key)
        self.ids.insert(i, cid)

    def window(self, after: Key | None, before: tuple[int, int] | None) -> list[str]:
        """Ids strictly after the item keyed `after` and strictly before `before` (step, phase)."""
        lo = bisect_right(self.keys, after) if after is not None else 0
        hi = bisect_left(self.keys, (before[0], before[1], -1, -1)) if before is not None else len(self.keys)
        return self.ids[lo:hi] if lo < hi else []

    def drop_before(self, step: int) -> None:
        """Let go of the items of every step before `step`."""
        i = bisect_left(self.keys, (step, -2, -2, -2))
        del self.ids[:i], self.keys[:i]

    def __len__(self) -> int:
        return len(self.ids)


class Contributions(dict[str, Contribution]):
    """Contributions by id: those the index holds, and through `read_back` (when set) those a long
    debate let go of (`archive`), read from disk when asked for by id (`[id]`, `get`). Iterating,
    `in` and `len` see only those held."""

    read_back: Callable[[str], Contribution | None] | None = None

    def __missing__(self, key: str) -> Contribution:
        found = self.read_back(key) if self.read_back is not None else None
        if found is None:
            raise KeyError(key)
        return found

    def get(self, key: str, default: Contribution | None = None) -> Contribution | None:  # type: ignore[override]  # (the overloads of dict.get, narrowed to what the index asks)
        found = super().get(key)
        if found is not None:
            return found
        try:
            return self[key]
        except KeyError:
            return default


class DebateIndex:
    def __init__(self, state: DebateState | None = None) -> None:
        self.contributions = Contributions()
        self.summaries: dict[str, Summary] = {}
        self._perspective: dict[str, _Ordered] = {}
        """agent id → its proposals, refinements, answers and the critiques aimed at it."""
        self._transcript = _Ordered()
        """Every conversation message, in turn order (the shared transcript)."""
        self.latest_summary: dict[str, Summary] = {}
        self._summaries_of: dict[str, list[Summary]] = {}
        """agent id → its summaries by (round, time): what `summary_at` searches."""
        self.names: dict[str, tuple[str, str]] = {}
        """agent id → (display name, role)."""
        self._rank: dict[str, int] = {"": -1}
        self.prompts: dict[str, str] = {}
        self.pins: dict[str, Pin] = {}
        """The debate's pins (the state's own dict, which the events change in place)."""
        self.problem = ""
        self.layout = 1
        """The debate's view layout (`moot.core.context.view`)."""
        self._covered: dict[str, Key] = {}
        """summary id → the key of the newest item it covers (kept when that item is let go)."""
        self.archived_through = 0
        """Steps 1..this many were let go (`archive`): their items are in the event log only."""
        self.read_archived: Callable[[int], Iterable[Contribution]] | None = None
        """Reads the contributions of steps 1..n back from the log (set by whoever knows the folder)."""
        if state is not None:
            self.load(state)

    # ------------------------------------------------------------------ building

    def _people(self, agents: list[AgentInfo], judge: AgentInfo | None) -> None:
        for info in [*agents, *([judge] if judge else [])]:
            self.names[info.id] = (info.name, info.role)
            self._rank.setdefault(info.id, len(self._rank) - 1)

    def load(self, state: DebateState) -> None:
        self.archived_through = max(self.archived_through, state.archived_rounds)
        self.prompts = state.prompts
        self.pins = state.pins
        self.problem = state.problem
        self.layout = state.view_layout
        self._people(state.agents, state.judge)
        for rnd in state.rounds:
            for c in rnd.contributions:
                self.add_contribution(c)
            for s in [*rnd.replaced_summaries, *rnd.summaries.values()]:
                self.add_summary(s)
        if state.judge_summary:
            self.summaries[state.judge_summary.id] = state.judge_summary

    def on_event(self, event: ev.Event) -> None:
        match event:
            case ev.ContributionAdded(contribution=c):
                self.add_contribution(c)
            case ev.SummaryAdded(summary=s, judge=True):
                self.summaries[s.id] = s
            case ev.SummaryAdded(summary=s):
                self.add_summary(s)
            case ev.DebateStarted():
                self.prompts = dict(event.prompts)
                self.problem = event.problem
                self.layout = event.view_layout
                self._people(event.agents, event.judge)
            case (ev.DebateResumed() | ev.RoundStarted() | ev.PhaseStarted() | ev.PhaseCompleted() | ev.CallStarted()
                  | ev.Token() | ev.CallFailed() | ev.SummaryRequested() | ev.SeatAnswered() | ev.SynthesisCompleted()
                  | ev.Warning_() | ev.ControlChanged() | ev.ClarificationsAsked() | ev.ClarificationsAnswered()
                  | ev.NoteInjected() | ev.ConvergenceScored() | ev.Converged() | ev.AdaptiveDecided() | ev.BudgetReached()
                  | ev.DebateCompleted() | ev.DebateInterrupted() | ev.DebateFailed() | ev.WindowLearned()
                  | ev.ToolCalled() | ev.ToolReturned() | ev.CallContinued() | ev.ToolsReady() | ev.PinChanged()
                  | ev.IndexRebuilding()):
                pass  # nothing to index (pins live in the state, which the index shares)
            case _:
                assert_never(event)

    def key(self, c: Contribution) -> Key:
        return (c.round, PHASE_RANK[c.type], self._rank.get(c.agent_id, 1_000),
                self._rank.get(c.target_agent_id or "", 1_000))

    def add_contribution(self, c: Contribution) -> None:
        if c.id in self.contributions or c.round <= self.archived_through:
            return
        self.contributions[c.id] = c
        key = self.key(c)
        if c.type == "message":
            self._transcript.add(key, c.id)
        owner = c.target_agent_id if c.type == "critique" else c.agent_id
        if owner:
            self._perspective.setdefault(owner, _Ordered()).add(key, c.id)

    def add_summary(self, s: Summary) -> None:
        if s.id not in self.summaries:
            mine = self._summaries_of.setdefault(s.agent_id, [])
            mine.append(s)
            if len(mine) > 1 and (mine[-2].round, mine[-2].ts) > (s.round, s.ts):
                mine.sort(key=lambda x: (x.round, x.ts))
        self.summaries[s.id] = s
        covered = self.contributions.get(s.covered_through) if s.covered_through else None
        if covered is not None:
            self._covered[s.id] = self.key(covered)
        prev = self.latest_summary.get(s.agent_id)
        if prev is None or (s.round, s.ts) >= (prev.round, prev.ts):
            self.latest_summary[s.agent_id] = s

    def archive(self, through: int) -> None:
        """Let go of the items and summaries of steps 1..`through`, as the state did (they are in
        the log). Each agent's latest summary stays, and so does where every kept summary ends."""
        if through <= self.archived_through:
            return
        self.archived_through = through
        for ordered in [self._transcript, *self._perspective.values()]:
            ordered.drop_before(through + 1)
        for cid in [k for k, c in self.contributions.items() if c.round <= through]:
            del self.contributions[cid]
        # Of each agent's summaries made in those steps, only the newest can still be read: a view
        # is built at a later step, where it qualifies (`summary_at`: made no later, covering items
        # before it), so the scan never reaches one older than it.
        for mine in self._summaries_of.values():
            first_kept = max(0, bisect_right([s.round for s in mine], through) - 1)
            del mine[:first_kept]
        latest = {s.id for s in self.latest_summary.values()}
        latest.update(mine[0].id for mine in self._summaries_of.values() if mine)
        self.summaries = {k: s for k, s in self.summaries.items() if s.round > through or k in latest}
        self._covered = {k: v for k, v in self._covered.items() if k in self.summaries}

    # ------------------------------------------------------------------ queries

    def _after(self, summary: Summary | None) -> Key | None:
        if summary is None or summary.covered_through is None:
            return None
        known = self._covered.get(summary.id)
        if known is not None:
            return known
        covered = self.contributions.get(summary.covered_through)
        return self.key(covered) if covered is not None else None

    def summary_at(self, agent_id: str, before: tuple[int, int]) -> Summary | None:
        """The newest summary of `agent_id` a view at `before` (step, phase) reads: made at that
        step or earlier, and covering only items the view may see. With calls scheduled by their
        inputs, an agent's later summary can exist while one of its earlier calls still waits;
        that call's view must not depend on it."""
        for s in reversed(self._summaries_of.get(agent_id, [])):
            if s.round > before[0]:
                continue
            covered = self._after(s)
            if covered is None or covered[:2] < before:
                return s
        return None

    def perspective_items(self, agent_id: str, before: tuple[int, int] | None = None) -> list[Contribution]:
        """The agent's whole perspective (read back from the log for steps that were let go)."""
        items = self._perspective.get(agent_id)
        held = [self.contributions[i] for i in items.window(None, before)] if items else []
        if not self.archived_through or self.read_archived is None:
            return held
        old = [c for c in self.read_archived(self.archived_through)
               if (c.target_agent_id if c.type == "critique" else c.agent_id) == agent_id]
        return sorted(old, key=self.key) + held

    def uncovered_items(self, agent_id: str, summary: Summary | None,
                        before: tuple[int, int] | None = None) -> list[Contribution]:
        """The agent's perspective items newer than `summary` (all when there is none) and
        visible before `before`; found by binary search, so the cost is the window's size."""
        items = self._perspective.get(agent_id)
        if items is None:
            return []
        return [self.contributions[i] for i in items.window(self._after(summary), before)]

    def covered_items(self, agent_id: str, summary: Summary | None) -> list[Contribution]:
        """The agent's perspective items that `summary` stands in for (none without one)."""
        items = self._perspective.get(agent_id)
        after = self._after(summary)
        if items is None or after is None:
            return []
        return [self.contributions[i] for i in items.ids[: bisect_right(items.keys, after)]]

    def perspective_size(self, agent_id: str) -> int:
        items = self._perspective.get(agent_id)
        return len(items) if items else 0

    def messages_after(self, summary: Summary | None, before_turn: int | None = None) -> list[Contribution]:
        """Conversation messages newer than `summary` and older than turn `before_turn`."""
        before = (before_turn, 0) if before_turn is not None else None
        return [self.contributions[i] for i in self._transcript.window(self._after(summary), before)]

    def turn_ids(self, first: int, last: int) -> list[str]:
        """The ids of the conversation's messages of turns `first..last`, in order."""
        return self._transcript.window((first - 1, 99, 1 << 30, 1 << 30), (last + 1, 0))

    @property
    def message_count(self) -> int:
        return len(self._transcript)

    def name(self, agent_id: str) -> str:
        return self.names.get(agent_id, (agent_id, ""))[0]

    def role(self, agent_id: str) -> str:
        return self.names.get(agent_id, ("", "generalist"))[1]

    def rank(self, agent_id: str) -> int:
        """The agent's position in the config (the judge after the agents)."""
        return self._rank.get(agent_id, 1_000)

"""DebateState as a fold of the event stream.

Every change to a debate's state goes through `apply`. The orchestrator folds the
events it emits, the store folds what it writes, and resume folds the event log on
top of the last snapshot, so all three agree by construction.
"""

from __future__ import annotations

from core.events import Event
from core.models import CallMetadata, DebateState, Round

MAX_ROUND = 1000
"""No debate has more rounds (`debate.rounds` ≤ 1000); a larger number in an event is corruption."""


class StateError(ValueError):
    """An event that cannot belong to this debate (a corrupt or foreign log)."""


def _round(state: DebateState, number: int) -> Round:
    """`state.round(number)`, refusing numbers no real event carries: round 0 would
    silently pick the last round and a huge one would allocate rounds without end."""
    if not 1 <= number <= MAX_ROUND:
        raise StateError(f"round {number} is out of range (1..{MAX_ROUND})")
    return state.round(number)


def new_state(debate_id: str) -> DebateState:
    return DebateState(id=debate_id, problem="")


def apply(state: DebateState, event: Event) -> DebateState:
    """Fold one event into `state` (in place) and return it. Token events change nothing.

    Raises StateError for an event no debate could hold (the store turns it into a
    one-line StoreError naming the log line)."""
    t = event.type
    if t == "token":
        return state
    if event.seq and event.seq <= state.last_seq:
        return state  # already folded (a snapshot taken after this event)
    if t == "debate_started":
        state.problem = event.problem
        state.total_rounds = event.total_rounds
        state.agents = list(event.agents)
        state.judge = event.judge
        state.prompts = dict(event.prompts)
        state.config = dict(event.config)
        state.created_at = event.ts
        state.status = "running"
    elif t == "debate_resumed":
        state.status = "running"
        state.error = None
    elif t == "round_started":
        _round(state, event.round).started_at = event.ts
        state.current_round = event.round
    elif t == "call_started":
        view = event.view
        if view.phase != "synthesis" or view.round:
            rnd = _round(state, max(1, view.round))
            rnd.calls = [c for c in rnd.calls if c.call_id != view.call_id]
            rnd.calls.append(view)
    elif t == "contribution_added":
        c = event.contribution
        rnd = _round(state, c.round)
        if not any(x.id == c.id for x in rnd.contributions):
            rnd.contributions.append(c)
            _add_usage(state, c.metadata, c.agent_id)
    elif t == "summary_added":
        s = event.summary
        if event.judge:
            state.judge_summary = s
        else:
            rnd = _round(state, s.round)
            old = rnd.summaries.get(s.agent_id)
            if old is not None and old.id != s.id:
                rnd.replaced_summaries.append(old)
            rnd.summaries[s.agent_id] = s
        _add_usage(state, s.metadata, s.agent_id)
    elif t == "synthesis_completed":
        state.final_solution = event.solution
        _add_usage(state, event.solution.metadata, event.solution.synthesized_by)
    elif t == "clarifications_answered":
        state.clarifications = [c for c in state.clarifications if c.round != event.round] + list(event.answers)
        state.clarified = state.clarified or event.done
        _add_usage(state, event.usage)
        for agent_id, meta in event.per_agent.items():
            _add_usage(state, meta, agent_id, totals=False)
    elif t == "note_injected":
        state.notes.append(event.note)
    elif t == "convergence_scored":
        state.convergence = [c for c in state.convergence if c.round != event.score.round] + [event.score]
        _add_usage(state, event.usage, state.judge.id if state.judge else None)
    elif t == "debate_completed":
        state.status = event.status  # type: ignore[assignment]
    elif t == "debate_interrupted":
        state.status = event.status  # type: ignore[assignment]
        state.error = event.reason or None
    elif t == "debate_failed":
        state.status = "failed"
        state.error = event.error
    if event.seq:
        state.last_seq = event.seq
    state.updated_at = event.ts
    return state


def _add_usage(state: DebateState, meta, agent_id: str | None = None, *, totals: bool = True) -> None:  # type: ignore[no-untyped-def]
    targets = [state.totals] if totals else []
    if agent_id:
        targets.append(state.agent_totals.setdefault(agent_id, CallMetadata()))
    for t in targets:
        t.prompt_tokens += meta.prompt_tokens
        t.completion_tokens += meta.completion_tokens
        t.cost_usd += meta.cost_usd


def find_contribution(state: DebateState, round_no: int, agent_id: str, kind: str, target: str | None = None):  # type: ignore[no-untyped-def]
    """The recorded contribution for one call slot, if any (what resume skips)."""
    if round_no > len(state.rounds):
        return None
    for c in state.rounds[round_no - 1].contributions:
        if c.agent_id == agent_id and c.type == kind and c.target_agent_id == target:
            return c
    return None

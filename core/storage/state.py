"""DebateState as a fold of the event stream.

Every change to a debate's state goes through `apply`. The orchestrator folds the
events it emits, the store folds what it writes, and resume folds the event log on
top of the last snapshot, so all three agree by construction.
"""

from __future__ import annotations

from typing import assert_never

from .. import events as ev
from ..errors import ExitCode
from ..models.state import CallMetadata, Contribution, DebateState, Round, SummaryMetadata, Usage
from .archive import archive_due, archive_steps

MAX_ROUND = 100_000
"""No debate has more steps (rounds ≤ 1000, turns ≤ 100,000); a larger number in an event is corruption."""


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


def apply(state: DebateState, event: ev.Event, *, bounded: bool = True) -> DebateState:
    """Fold one event into `state` (in place) and return it. Token events change nothing.

    `bounded`: when a step begins, let go of the older steps no later call reads (they stay in
    the log; see `archive`), so a state's memory does not grow with the debate.

    Raises StateError for an event no debate could hold (the store turns it into a
    one-line StoreError naming the log line)."""
    if isinstance(event, ev.Token):
        return state
    if event.seq and event.seq <= state.last_seq:
        return state  # already folded (a snapshot taken after this event)
    match event:
        case ev.DebateStarted():
            state.problem = event.problem
            state.protocol = event.protocol
            state.total_rounds = event.total_rounds
            state.agents = list(event.agents)
            state.judge = event.judge
            state.prompts = dict(event.prompts)
            state.view_layout = event.view_layout
            state.forked_from = event.forked_from
            state.config = dict(event.config)
            state.created_at = event.ts
            state.status = "running"
            state.exit_code = ExitCode.OK
        case ev.DebateResumed():
            state.status = "running"
            state.error = None
            state.exit_code = ExitCode.OK
        case ev.RoundStarted(round=number):
            _round(state, number).started_at = event.ts
            state.current_round = number
            if bounded:
                archive_steps(state, archive_due(state))
        case ev.CallStarted(view=view):
            if view.phase != "synthesis" or view.round:
                rnd = _round(state, max(1, view.round))
                rnd.calls = [c for c in rnd.calls if c.call_id != view.call_id]
                rnd.calls.append(view)
        case ev.CallContinued(call_id=call_id, round=number, step=step, tokens=tokens, tools=tools):
            rnd = _round(state, max(1, number))
            record = next((v for v in reversed(rnd.calls) if v.call_id == call_id), None)
            if record is not None:
                if len(record.tool_steps) <= step.index:  # in-process the engine's record already holds it
                    record.tool_steps.append(step)
                record.tokens, record.tools = tokens, list(tools)
        case ev.ToolsReady(setup=setup):
            state.tools = setup
        case ev.ContributionAdded(contribution=c):
            rnd = _round(state, c.round)
            if not any(x.id == c.id for x in rnd.contributions):
                rnd.contributions.append(c)
                if c.round > state.archived_rounds:
                    state.count_held(1)
                _add_usage(state, c.metadata, c.agent_id, calls=0 if c.carried_from else 1)
        case ev.SummaryAdded(summary=s, judge=judge):
            if judge:
                state.judge_summary = s
            else:
                rnd = _round(state, s.round)
                old = rnd.summaries.get(s.agent_id)
                if old is not None and old.id != s.id:
                    rnd.replaced_summaries.append(old)
                rnd.summaries[s.agent_id] = s
            llm_calls = s.metadata.chunks if (s.metadata.prompt_tokens or s.metadata.completion_tokens) else 0
            _add_usage(state, s.metadata, s.agent_id, calls=llm_calls, summary=True)
        case ev.SynthesisCompleted(solution=solution):
            state.final_solution = solution
            if solution.metadata.call_id is not None or solution.metadata.prompt_tokens:
                _add_usage(state, solution.metadata, solution.synthesized_by)  # not a vote's (no call)
        case ev.ClarificationsAsked():
            state.pending_questions = list(event.questions)
            state.pending_round = event.round
            _add_usage(state, event.usage, calls=len(event.per_agent))
            for agent_id, meta in event.per_agent.items():
                _add_usage(state, meta, agent_id, totals=False)
        case ev.ClarificationsAnswered():
            state.clarifications = [c for c in state.clarifications if c.round != event.round] + list(event.answers)
            state.clarified = state.clarified or event.done
            state.pending_questions, state.pending_round = [], 0
            _add_usage(state, event.usage, calls=len(event.per_agent))
            for agent_id, meta in event.per_agent.items():
                _add_usage(state, meta, agent_id, totals=False)
        case ev.NoteInjected(note=note):
            state.notes.append(note)
        case ev.PinChanged(pin=pin):
            state.pins[pin.key] = pin  # an unpinned pin stays, inactive: the views that carried it rebuild
        case ev.ConvergenceScored(score=score, usage=usage):
            state.convergence = [c for c in state.convergence if c.round != score.round] + [score]
            _add_usage(state, usage, state.judge.id if state.judge else None)
        case ev.AdaptiveDecided(decision=d):
            state.adaptive = [x for x in state.adaptive if x.round != d.round] + [d]
        case ev.DebateCompleted(status=status):
            state.status = status
            state.exit_code = ExitCode.OK
        case ev.DebateInterrupted(status=status):
            state.status = status
            state.error = event.cause  # not the status again ("interrupted: interrupted")
            state.exit_code = ExitCode.INTERRUPTED if status == "interrupted" else ExitCode.OK
        case ev.DebateFailed(error=error, exit_code=code):
            state.status = "failed"
            state.error = error
            state.exit_code = code
        case (ev.PhaseStarted() | ev.PhaseCompleted() | ev.CallFailed() | ev.SummaryRequested() | ev.SeatAnswered()
              | ev.Warning_() | ev.ControlChanged() | ev.IndexRebuilding()
              | ev.Converged() | ev.BudgetReached() | ev.WindowLearned() | ev.ToolCalled() | ev.ToolReturned()):
            pass  # shown as they happen; nothing in the state changes
        case _:
            assert_never(event)
    if event.seq:
        state.last_seq = event.seq
    state.updated_at = event.ts
    return state


def _add_usage(state: DebateState, meta: CallMetadata | SummaryMetadata, agent_id: str | None = None, *,
               calls: int = 1, summary: bool = False, totals: bool = True) -> None:
    """Add one call's (or one step's) usage to the debate's totals and to its agent's."""
    targets = [state.totals] if totals else []
    if agent_id:
        targets.append(state.agent_totals.setdefault(agent_id, Usage()))
    for t in targets:
        t.calls += calls
        t.prompt_tokens += meta.prompt_tokens
        t.completion_tokens += meta.completion_tokens
        t.cached_tokens += meta.cached_tokens
        t.cost_usd += meta.cost_usd
        if summary:
            t.summary_tokens += meta.prompt_tokens + meta.completion_tokens


def find_contribution(state: DebateState, round_no: int, agent_id: str, kind: str,
                      target: str | None = None) -> Contribution | None:
    """The recorded contribution for one call slot, if any (what resume skips)."""
    if round_no > state.round_count or round_no <= state.archived_rounds:
        return None
    for c in state.round(round_no).contributions:
        if c.agent_id == agent_id and c.type == kind and c.target_agent_id == target:
            return c
    return None

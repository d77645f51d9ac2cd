"""The typed events: the one contract between the engine, the disk and every view.

The orchestrator emits events; the event log, the headless printer and the TUI
subscribe. `DebateState` is a pure fold of the event stream (see `core.state`),
which is what makes resume and replay exact.
"""

from __future__ import annotations

import logging
import time
from typing import Annotated, Any, Literal, Union

from pydantic import Field, TypeAdapter

from .models.base import Model
from .models.state import (
    AdaptiveDecision,
    AgentInfo,
    CallMetadata,
    Clarification,
    Contribution,
    ConvergenceScore,
    ForkOrigin,
    ModeratorNote,
    Pin,
    Solution,
    Summary,
    TierTokens,
    Usage,
    ViewRecord,
)
from .models.terms import Phase, ProtocolName
from .models.tools import ToolCallRecord, ToolsSetup, ToolStep

log = logging.getLogger(__name__)


class _Event(Model):
    debate_id: str = ""
    ts: float = Field(default_factory=time.time)
    seq: int = 0


class DebateStarted(_Event):
    type: Literal["debate_started"] = "debate_started"
    problem: str
    protocol: ProtocolName = "rounds"
    total_rounds: int
    """Rounds, or turns for a conversation."""
    agents: list[AgentInfo]
    judge: AgentInfo
    prompts: dict[str, str]
    config: dict[str, Any]
    provider_label: str = ""
    trace_id: str = ""
    """The debate's OpenTelemetry trace id (32 hex digits), kept so a resumed run and `moot trace`
    continue the same trace; empty in logs written before it existed (see `moot.core.observe.tracing`)."""
    forked_from: ForkOrigin | None = None
    """Set in a fork's log (`moot fork`): the parent and the point its history was copied up to."""
    view_layout: int = 1
    """How the debate's views lay out their messages (`moot.core.context.view.LAYOUT`); 1 in logs
    written before layouts were numbered, so their views rebuild as they were sent."""


class DebateResumed(_Event):
    type: Literal["debate_resumed"] = "debate_resumed"
    from_round: int


class RoundStarted(_Event):
    """A new step: a round, or a conversation's turn."""

    type: Literal["round_started"] = "round_started"
    round: int
    step: Literal["round", "turn"] = "round"


class PhaseStarted(_Event):
    type: Literal["phase_started"] = "phase_started"
    round: int
    phase: Phase


class PhaseCompleted(_Event):
    type: Literal["phase_completed"] = "phase_completed"
    round: int
    phase: Phase


class CallStarted(_Event):
    type: Literal["call_started"] = "call_started"
    view: ViewRecord


class Token(_Event):
    """A streamed delta. Never written to disk; may be dropped for slow subscribers."""

    type: Literal["token"] = "token"
    call_id: str
    agent_id: str
    delta: str
    restart: bool = False
    """The call started over after a failed attempt: drop what was streamed so far."""


class ToolCalled(_Event):
    """A model asked for a tool, which runs now (shown live; the step event records it)."""

    type: Literal["tool_called"] = "tool_called"
    call_id: str
    agent_id: str
    tool: ToolCallRecord


class ToolReturned(_Event):
    """A tool answered (its text is recorded once, in the `call_continued` that follows)."""

    type: Literal["tool_returned"] = "tool_returned"
    call_id: str
    agent_id: str
    tool_call_id: str
    name: str
    ok: bool = True
    summary: str = ""
    tokens: int = 0


class CallContinued(_Event):
    """A call's model turn called tools: this step (calls and results) joins its view, and the
    next request of the same call starts (`tokens`: that request's tiers)."""

    type: Literal["call_continued"] = "call_continued"
    call_id: str
    agent_id: str
    round: int
    step: ToolStep
    tokens: TierTokens
    tools: list[str] = Field(default_factory=list)
    """The tools offered to that request (empty: it must answer without them)."""


class ToolsReady(_Event):
    """The references and tools the debate's agents have, as set up at its start or resume."""

    type: Literal["tools_ready"] = "tools_ready"
    setup: ToolsSetup


class CallFailed(_Event):
    type: Literal["call_failed"] = "call_failed"
    call_id: str
    agent_id: str
    error: str
    will_retry: bool = False


class ContributionAdded(_Event):
    type: Literal["contribution_added"] = "contribution_added"
    contribution: Contribution


class SummaryAdded(_Event):
    type: Literal["summary_added"] = "summary_added"
    summary: Summary
    judge: bool = False


class SummaryRequested(_Event):
    type: Literal["summary_requested"] = "summary_requested"
    agent_id: str
    focus: str | None = None
    from_step: int | None = None
    """Fold everything before this turn (or round) and keep the rest verbatim (`--from turn N`);
    None: the usual split (the latest messages stay verbatim)."""
    command_id: str | None = None
    """Set when the request came from another process (`moot ctl`, an attached watch)."""


class PinChanged(_Event):
    """An item pinned (kept verbatim in every later view of the agents that saw it) or unpinned;
    `command_id` is set when the command came from another process (`moot ctl ID pin …`)."""

    type: Literal["pin_changed"] = "pin_changed"
    pin: Pin
    command_id: str | None = None


class SeatAnswered(_Event):
    """A person answered their turn (`--human`); the contribution follows. Says where the words came
    from; `command_id` is set when they came from another process (`moot ctl ID say`)."""

    type: Literal["seat_answered"] = "seat_answered"
    agent_id: str
    round: int
    phase: Phase
    target_agent_id: str | None = None
    via: Literal["editor", "stdin", "ctl", "library"] = "library"
    chars: int = 0
    command_id: str | None = None


class SynthesisCompleted(_Event):
    type: Literal["synthesis_completed"] = "synthesis_completed"
    solution: Solution


class IndexRebuilding(_Event):
    """The debate's search index being caught up with its log off the calls' path (it was lost, or
    far behind, when the debate resumed): said as it goes, and once more when it is whole
    (`done == total`). Until then recall finds only what is indexed so far."""

    type: Literal["index_rebuilding"] = "index_rebuilding"
    done: int
    """Events of the log indexed so far (of those it lacked at the start)."""
    total: int
    """Events of the log it lacked at the start."""
    texts: int = 0
    """Texts added so far."""


class Warning_(_Event):
    type: Literal["warning"] = "warning"
    message: str
    agent_id: str | None = None
    command_id: str | None = None
    """Set when it refuses a command from another process (`moot ctl`, an attached watch)."""


class ControlChanged(_Event):
    """Pause, resume or stop requested by the user; takes effect at the next call boundary.

    A second `pause` event with `effective=True` follows when no call is in flight any more:
    from then on nothing runs until `resume`."""

    type: Literal["control"] = "control"
    action: Literal["pause", "resume", "stop"]
    effective: bool = False
    command_id: str | None = None
    """Set when the command came from another process (`moot ctl`, an attached watch)."""


class ClarificationsAsked(_Event):
    """Questions from the agents, waiting for the user's answers (a resume asks the user again,
    never the agents)."""

    type: Literal["clarifications_asked"] = "clarifications_asked"
    round: int
    questions: list[Clarification]
    usage: CallMetadata = Field(default_factory=CallMetadata)
    """Tokens and cost of the calls that asked these questions."""
    per_agent: dict[str, CallMetadata] = Field(default_factory=dict)


class ClarificationsAnswered(_Event):
    type: Literal["clarifications_answered"] = "clarifications_answered"
    round: int
    answers: list[Clarification]
    usage: CallMetadata = Field(default_factory=CallMetadata)
    """Tokens and cost of asking calls not already counted with `clarifications_asked` (none asked)."""
    per_agent: dict[str, CallMetadata] = Field(default_factory=dict)
    done: bool = False
    """True after the last clarification round: the debate proper starts."""


class NoteInjected(_Event):
    type: Literal["note_injected"] = "note_injected"
    note: ModeratorNote
    command_id: str | None = None


class ConvergenceScored(_Event):
    type: Literal["convergence_scored"] = "convergence_scored"
    score: ConvergenceScore
    usage: CallMetadata = Field(default_factory=CallMetadata)


class Converged(_Event):
    """The judge's confidence reached the threshold: the debate ends early."""

    type: Literal["converged"] = "converged"
    round: int
    confidence: int
    threshold: int


class AdaptiveDecided(_Event):
    """The `adaptive` protocol's stopping rule was checked after a step: it stops, draws more
    answers or lets the agents that disagree debate; why, with the posterior and the step's cost."""

    type: Literal["adaptive_decided"] = "adaptive_decided"
    decision: AdaptiveDecision


class WindowLearned(_Event):
    """What moot now knows of a model's real context window and token count (see
    `moot.core.engine.windows`): discovered from the server, learned from a refusal, or a
    count ratio that grew after the server reported more prompt tokens than moot counted."""

    type: Literal["window_learned"] = "window_learned"
    endpoint: str
    model: str
    window: int | None = None
    source: Literal["discovered", "learned", "calibrated"]
    ratio: float = 1.0
    reason: str = ""


class BudgetReached(_Event):
    type: Literal["budget_reached"] = "budget_reached"
    reason: str


class DebateCompleted(_Event):
    type: Literal["debate_completed"] = "debate_completed"
    status: Literal["completed", "stopped_budget"] = "completed"
    totals: Usage = Field(default_factory=Usage)


class DebateInterrupted(_Event):
    type: Literal["debate_interrupted"] = "debate_interrupted"
    status: Literal["interrupted", "stopped"] = "interrupted"
    reason: str = ""

    @property
    def cause(self) -> str | None:
        """What cut an interrupted run short (a signal's name), when it is known. None for a
        user's stop (the status says it all) and for older logs, whose reason repeated the status."""
        if self.status != "interrupted" or self.reason in ("", "interrupted"):
            return None
        return self.reason


class DebateFailed(_Event):
    type: Literal["debate_failed"] = "debate_failed"
    error: str
    exit_code: int = 3


Event = Annotated[
    Union[
        DebateStarted,
        DebateResumed,
        RoundStarted,
        PhaseStarted,
        PhaseCompleted,
        CallStarted,
        Token,
        CallFailed,
        ToolCalled,
        ToolReturned,
        CallContinued,
        ToolsReady,
        IndexRebuilding,
        ContributionAdded,
        SummaryAdded,
        SummaryRequested,
        PinChanged,
        SeatAnswered,
        SynthesisCompleted,
        Warning_,
        ControlChanged,
        ClarificationsAsked,
        ClarificationsAnswered,
        NoteInjected,
        ConvergenceScored,
        Converged,
        AdaptiveDecided,
        WindowLearned,
        BudgetReached,
        DebateCompleted,
        DebateInterrupted,
        DebateFailed,
    ],
    Field(discriminator="type"),
]
_ADAPTER: list[TypeAdapter[Event]] = []
"""The union's validator, built at the first parse: building it validates every event class's
schema (a tenth of a second), which a first screen that shows no event yet should not wait for."""

TerminalEvent = DebateCompleted | DebateInterrupted | DebateFailed
TERMINAL_EVENTS = (DebateCompleted, DebateInterrupted, DebateFailed)
"""The events that end a run of the debate (a later `debate_resumed` may continue it)."""


def is_terminal(event: Event) -> bool:
    return isinstance(event, TERMINAL_EVENTS)


def parse_event(line: str | bytes) -> Event:
    """Parse one JSON line of the event log (raises pydantic.ValidationError)."""
    if not _ADAPTER:
        _ADAPTER.append(TypeAdapter(Event))
    return _ADAPTER[0].validate_json(line)


def dump_event(event: Event) -> str:
    return event.model_dump_json(exclude_none=True)

"""The debate's vocabulary, shared by its configuration and its state: roles, phases, protocols,
statuses, the judge's id."""

from __future__ import annotations

from typing import Literal

from .provider_kinds import PERSON

ROLES: tuple[str, ...] = (
    "architect",
    "performance",
    "security",
    "testing",
    "kiss",
    "generalist",
    "data-modeling",
)
Role = Literal["architect", "performance", "security", "testing", "kiss", "generalist", "data-modeling"]
ContributionType = Literal["proposal", "critique", "refinement", "answer", "message", "ranking"]
"""proposal/critique/refinement (rounds), answer (simultaneous, single, vote, council), message
(conversation), ranking (council: one agent's ranking of the others' anonymized answers)."""
Phase = Literal["summarize", "proposal", "critique", "refinement", "answer", "turn", "synthesis", "clarify", "score",
                "rank"]
ProtocolName = Literal["rounds", "conversation", "simultaneous", "single", "vote", "council", "adaptive"]
PROTOCOL_NAMES: tuple[ProtocolName, ...] = ("rounds", "conversation", "simultaneous", "single", "vote", "council",
                                            "adaptive")
AnswerKind = Literal["number", "choice", "text", "boxed"]
SummaryScope = Literal["shared", "per-agent"]
SummaryMethod = Literal["llm", "rule-based", "hybrid"]
SummaryStrategy = Literal["fresh", "rolling"]
SummaryTrigger = Literal["chars", "tokens", "turns", "manual", "judge"]
ProviderName = str
"""A provider's name: a built-in one (`provider_kinds`) or an installed plugin's; a configuration's
are checked as it is validated (`models.config.KnownProvider`)."""
HUMAN = PERSON.name
"""The provider of a seat a person takes (`--human NAME`): their words, typed, never a model call."""
DebateStatus = Literal["running", "completed", "failed", "interrupted", "stopped", "stopped_budget"]

JUDGE_ID = "judge"
MAX_FOCUS = 500
"""Characters of a summary's focus text kept (it goes into the summarization prompt)."""

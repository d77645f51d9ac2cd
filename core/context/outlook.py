"""Where each agent's context stands: its latest view by tier, and how far its next automatic
summary is on each trigger.

Rounds (and simultaneous rounds) summarize an agent when its unsummarized perspective passes
`summarization.threshold` characters, or its view passes `trigger_ratio` of its token budget
(see `protocols.rounds`). A conversation rolls its summary when `summary_every` messages wait
beyond the `recent_messages` window, or the window passes `recent_tokens` (see
`protocols.conversation`). The numbers here are read from the recorded state, so the TUI's
overview and a script see the same thing; the token side uses the latest view (the engine
estimates the next one, which also holds the new task).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from ..models.config import AgentConfig, MootConfig, SummarizationConfig, merge
from ..models.state import DebateState, ViewRecord
from .index import DebateIndex


@dataclass(frozen=True)
class Trigger:
    """One trigger of the next automatic summary: `now` of `at` (characters, tokens or messages)."""

    unit: str
    now: int
    at: int

    @property
    def left(self) -> int:
        return max(0, self.at - self.now)

    @property
    def ratio(self) -> float:
        return self.now / self.at if self.at else 0.0


@dataclass(frozen=True)
class Outlook:
    """An agent's latest view and the distance to its next automatic summary."""

    agent_id: str
    view: ViewRecord | None
    """Its latest call's view (summarization calls aside); None before its first call."""
    triggers: tuple[Trigger, ...]
    """Empty when summaries are off for this agent."""
    owner: str
    """Whose summary the triggers are about: the agent's own, or (a shared conversation) the judge's."""

    @property
    def nearest(self) -> Trigger | None:
        return max(self.triggers, key=lambda t: t.ratio, default=None)


def _config(state: DebateState) -> MootConfig | None:
    try:
        return MootConfig.model_validate(state.config)
    except ValidationError:
        return None  # a debate saved by an older moot: no triggers shown


def _summarization(cfg: MootConfig, agent_id: str) -> SummarizationConfig:
    people: list[AgentConfig] = [*cfg.agents, cfg.judge]
    agent = next((a for a in people if a.id == agent_id), None)
    return merge(cfg.debate.summarization, agent.summarization if agent else None)


def latest_view(state: DebateState, agent_id: str) -> ViewRecord | None:
    """The agent's newest call that is not a summarization, searched from the end."""
    for r in reversed(state.rounds):
        for v in reversed(r.calls):
            if v.agent_id == agent_id and v.phase != "summarize":
                return v
    return None


def outlook(state: DebateState, index: DebateIndex, agent_id: str) -> Outlook:
    view = latest_view(state, agent_id)
    cfg = _config(state)
    if cfg is None:
        return Outlook(agent_id, view, (), agent_id)
    if state.protocol == "conversation":
        return _conversation(state, index, cfg, agent_id, view)
    summ = _summarization(cfg, agent_id)
    if not summ.enabled:
        return Outlook(agent_id, view, (), agent_id)
    summary = index.latest_summary.get(agent_id)
    counted = (index.perspective_items(agent_id) if summ.strategy == "fresh"
               else index.uncovered_items(agent_id, summary))
    chars = Trigger("characters", sum(len(c.content) for c in counted), summ.threshold)
    budget = view.budget if view is not None else 0
    tokens = Trigger("tokens", view.tokens.total if view is not None else 0, int(summ.trigger_ratio * budget))
    return Outlook(agent_id, view, (chars, tokens) if budget else (chars,), agent_id)


def summary_owner(state: DebateState, agent_id: str) -> str:
    """Whose summary `/summarize agent` makes: the agent's own, or in a conversation with one
    shared summary, the judge's (any agent's request rolls it)."""
    cfg = _config(state)
    if state.protocol == "conversation" and cfg is not None and cfg.debate.conversation.summary_scope == "shared":
        return state.judge.id if state.judge else cfg.judge.id
    return agent_id


def _conversation(state: DebateState, index: DebateIndex, cfg: MootConfig, agent_id: str,
                  view: ViewRecord | None) -> Outlook:
    conv = cfg.debate.conversation
    owner = summary_owner(state, agent_id)
    summary = index.latest_summary.get(owner)
    waiting = len(index.messages_after(summary))
    messages = Trigger("messages", waiting, conv.recent_messages + conv.summary_every)
    history = view.tokens.history if view is not None else 0
    tokens = Trigger("tokens", history, conv.window_cap)  # recent_tokens less the recall tier's share
    return Outlook(agent_id, view, (messages, tokens), owner)

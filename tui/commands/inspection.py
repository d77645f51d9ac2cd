"""`/context`: what the agents saw — every agent's context, or the exact messages of one's calls."""

from __future__ import annotations

from ...core.agents import find_agent
from .base import CommandContext, CommandError, no_agent, parse_round


def context(ctx: CommandContext, agent: str | None = None, round_text: str | None = None) -> None:
    """`/context [agent] [round]`: the overview without arguments; with an agent (or just a round:
    the focused agent) its latest call, or its calls in that round."""
    state = ctx.state
    if not state.rounds:
        raise CommandError("no calls recorded yet: the first round has not started")
    if agent is None and round_text is None:
        ctx.feedback("")
        ctx.open_context_overview()
        return
    if agent is not None and round_text is None and agent.isdigit():
        agent, round_text = None, agent
    if agent is None:
        agent_id = ctx.focused_agent_id() or state.agents[0].id
    else:
        found = find_agent(agent, state.agents, state.judge)
        if found is None:
            raise no_agent(ctx, agent, ", judge")
        agent_id = found.id
    round_no = parse_round(round_text, state.round_count) if round_text is not None else None
    ctx.feedback("")
    ctx.open_inspector(agent_id, round_no)

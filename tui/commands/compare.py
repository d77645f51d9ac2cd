"""`/compare A B [round]`: two agents' contributions side by side, with what differs marked;
`/compare fork [ID]`: this debate and a fork of it (or its parent) from the fork point."""

from __future__ import annotations

from ...core.agents import find_agent
from .base import CommandContext, CommandError, UsageError, no_agent


def compare(ctx: CommandContext, first: str | None = None, second: str | None = None,
            round_text: str | None = None) -> None:
    """Open the comparison of two debaters (by id, name or role) in a round (a turn, in a
    conversation; default: the latest where both contributed)."""
    state = ctx.state
    if first is not None and first.lower() == "fork" and find_agent(first, state.agents) is None:
        from .what_if import compare_fork

        if round_text is not None:
            raise UsageError("/compare fork [ID]: a fork's comparison starts at the fork point")
        compare_fork(ctx, second)
        return
    if first is None or second is None:
        raise UsageError("name two agents, e.g. /compare architect kiss 2")
    found = []
    for name in (first, second):
        agent = find_agent(name, state.agents)
        if agent is None:
            raise no_agent(ctx, name)
        found.append(agent.id)
    a, b = found
    if a == b:
        raise CommandError(f"/compare takes two different agents ({a} twice)")
    step: int | None = None
    if round_text is not None:
        word = "turn" if state.protocol == "conversation" else "round"
        try:
            step = int(round_text)
        except ValueError:
            raise CommandError(f"{word} must be a number, not {round_text!r}") from None
        if not 1 <= step <= max(1, state.round_count):
            raise CommandError(f"no {word} {step}: this debate has {word}s 1–{state.round_count}"
                               if state.rounds else f"no {word} has started yet")
    ctx.feedback("")
    ctx.open_compare(a, b, step)

"""What `moot run` checks and says about a debate before it starts: how many agents (and what a
round of them costs), a config that leaves one agent alone, a problem that was cut to fit.

The checks raise at once; the notices are returned as lines, which `moot run` prints only once
the debate's session is built (an error after them must stay the only line on stderr)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from moot.core.errors import ConfigError

if TYPE_CHECKING:
    from moot.core.models.config import MootConfig

MAX_AGENTS = 12
"""Above this many agents `moot run` asks for `--max-agents N`: a `rounds` debate's critiques
grow with the square of the agents (12 agents: 132 critique calls a round; 200: 39,800)."""


def calls_per_step(protocol: str, agents: int) -> str:
    """What one round (or turn) of `agents` costs in LLM calls, in words."""
    if protocol == "conversation":
        return f"1 call a turn (each agent speaks once every {agents:,} turns)"
    if protocol == "simultaneous":
        return f"{agents:,} calls a round, each view holding the {agents - 1:,} other answers"
    critiques = agents * (agents - 1)
    return (f"{agents * 2 + critiques:,} calls a round ({agents:,} proposals, {critiques:,} critiques, "
            f"{agents:,} refinements)")


def check_agent_count(config: MootConfig, allowed: int | None) -> str | None:
    """Refuse more than MAX_AGENTS agents (or `--max-agents`) with what a round would cost; when
    `--max-agents` lets more run, the notice that says the cost."""
    n = len(config.active_agents)
    limit = allowed if allowed is not None else MAX_AGENTS
    cost = calls_per_step(config.debate.protocol, n)
    if n > limit:
        flag = "raise --max-agents" if allowed is not None else "pass --max-agents"
        raise ConfigError(f"{n:,} agents would cost {cost}; the limit is {limit} agents: "
                          f"{flag} {n} to run them anyway, or list fewer under [[agents]]")
    return f"{n:,} agents (--max-agents {limit}): {cost}" if n > MAX_AGENTS else None


def alone(config: MootConfig, source: str) -> str | None:
    """A config file whose [[agents]] lists one agent replaces the default three with it: the
    README's per-agent snippets did that silently. Say so (`-a kiss` is asked for: no word)."""
    agents = config.active_agents
    if len(agents) != 1:
        return None
    return (f"{source} lists one agent ({agents[0].id}), so it debates alone (no critiques, no other answers); "
            "[[agents]] replaces the default agents architect, performance and kiss: list every agent you want")


def say(notices: list[str | None]) -> None:
    """Each notice, one line on stderr."""
    for line in notices:
        if line is not None:
            print(f"moot: {line}", file=sys.stderr)

"""Who reads whom (`debate.topology`), for the protocols whose agents read the others' answers.

`full`: every agent reads every other agent. `ring` (Li et al. 2024, sparse communication):
each agent reads its two neighbours in agent order, the last one's neighbour being the first.
`star`: the first agent (the hub) reads everyone; every other agent reads only the hub.
Fewer answers read make smaller views, so the cost follows the topology.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

Topology = Literal["full", "ring", "star"]


def reads(order: Sequence[str], agent_id: str, topology: Topology) -> set[str]:
    """The agents (among `order`, in agent order) whose answers `agent_id` reads, itself excluded."""
    others = [a for a in order if a != agent_id]
    if topology == "full" or agent_id not in order or len(order) < 3:
        return set(others)
    i = order.index(agent_id)
    if topology == "ring":
        return {order[(i - 1) % len(order)], order[(i + 1) % len(order)]}
    return set(others) if i == 0 else {order[0]}


def most_read(n: int, topology: Topology) -> int:
    """The most answers one agent reads among `n` agents (the largest view, checked before the run)."""
    if topology == "ring" and n >= 3:
        return min(2, n - 1)
    return max(0, n - 1)  # full, and the star's hub

"""The pinned tier of a view: items kept verbatim for the whole debate (`/pin`, `pinned = [...]`).

Where it sits and why is `moot.core.context.view`'s to say; how an item is named and when a pin
is refused, `moot.core.pinning`'s. Here: which pins a view carries and the message they make.
"""

from __future__ import annotations

from ..models.state import Pin

PIN_PHASES = frozenset({"proposal", "critique", "refinement", "turn", "answer"})
"""Phases whose views carry the pinned tier: the debaters' own work (not summaries, not the judge's)."""
PINNED_HEADING = "## Pinned (kept verbatim for the whole debate)"


def pins_for(agent_id: str, phase: str, pins: dict[str, Pin]) -> list[str]:
    """The keys of the active pins a view of `agent_id` in `phase` carries: the debaters' views
    (turns, proposals, critiques, refinements, answers) of the agents that saw each item."""
    if phase not in PIN_PHASES:
        return []
    return [p.key for p in pins.values() if p.active and (not p.agents or agent_id in p.agents)]


def pin_block(pin: Pin) -> str:
    return f"### {pin.heading}\n\n{pin.text.strip()}"


def pinned_message(keys: list[str], pins: dict[str, Pin]) -> str:
    """The pinned tier: each pin under its heading, in the order pinned."""
    return "\n\n".join([PINNED_HEADING, *(pin_block(pins[k]) for k in keys)])

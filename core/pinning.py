"""Pins: items a person keeps verbatim in every later view of the agents that saw them.

A pin names an item the way `moot context` and the inspector do — `turn 12` in a conversation,
`round 2 AGENT [proposal|critique|refinement|answer]` in a debate by rounds, or the item's id —
or one of the config's constraints (`constraint 1`). It is recorded as a `pin_changed` event
holding the item's text, so the views that carry it rebuild byte for byte (`moot context`), and
resume and forks keep it with the rest of the log. Views carry active pins as a tier of their
own (`moot.core.context.view.pinned_message`), which never gives way: so a pin is refused here,
in one line saying how much room it needs, when it would not fit beside the smallest view of
an agent that would carry it.
"""

from __future__ import annotations

import re

from . import tokens
from .config import ResolvedAgent
from .context.index import DebateIndex
from .context.pins import pinned_message
from .context.view import item_label
from .models.state import Contribution, Pin
from .protocols.base import DebateProtocol
from .safety.sanitize import one_line_safe

ITEM_USAGE = "turn N, round N AGENT [proposal|critique|refinement|answer], constraint N, or an item's id"
_TURN = re.compile(r"^turn\s+(\d{1,9})$", re.IGNORECASE)
_ROUND = re.compile(r"^round\s+(\d{1,9})\s+(\S+)(?:\s+(proposal|critique|refinement|answer))?$", re.IGNORECASE)
_CONSTRAINT = re.compile(r"^constraint\s+(\d{1,4})$", re.IGNORECASE)


def constraint_pins(constraints: list[str]) -> list[Pin]:
    """The config's `pinned = [...]`: the problem's constraints, pinned for every debater."""
    return [Pin(key=f"constraint-{n}", label=f"constraint {n}", heading=f"Constraint {n} of the problem",
                text=text.strip()) for n, text in enumerate(constraints, 1)]


def item_pin(c: Contribution, index: DebateIndex) -> Pin:
    """A pin of a recorded item. Messages, proposals, refinements and answers were read by every
    debater; a critique by its author and the agent it criticized."""
    if c.type == "message":
        label = f"turn {c.round}"
    else:
        label = f"round {c.round} {c.type} by {c.agent_id}"
    agents = [c.agent_id, c.target_agent_id] if c.type == "critique" and c.target_agent_id else []
    return Pin(key=c.id, label=label, heading=item_label(c, "", index), text=c.content, agents=agents)


def find_item(spec: str, index: DebateIndex, agents: list[ResolvedAgent]) -> str:
    """The key of the item (or constraint) `spec` names; ValueError (one line) when it names none."""
    from .agents import find_agent

    words = " ".join(spec.split())
    if not words:
        raise ValueError(f"pin what? {ITEM_USAGE}")
    named = next((p.key for p in index.pins.values() if p.label == words.lower()), None)
    if named is not None:  # a pin by the name it was given (its step may be let go of by now)
        return named
    if m := _CONSTRAINT.match(words):
        key = f"constraint-{int(m.group(1))}"
        if key not in index.pins:
            raise ValueError(f"there is no {words.lower()}: the config pins {_count_constraints(index)}")
        return key
    if m := _TURN.match(words):
        ids = index.turn_ids(int(m.group(1)), int(m.group(1)))
        if not ids:
            raise ValueError(f"no message of turn {m.group(1)} is held (is it said yet? {ITEM_USAGE})")
        return ids[0]
    if m := _ROUND.match(words):
        agent = find_agent(m.group(2), agents)
        if agent is None:
            raise ValueError(f"no agent {m.group(2)!r}; agents: {', '.join(a.id for a in agents)}")
        r, kinds = int(m.group(1)), ([m.group(3).lower()] if m.group(3) else ["refinement", "proposal", "answer"])
        for kind in kinds:  # by default its last word that round
            for item in index.contributions.values():
                if item.round == r and item.agent_id == agent.id and item.type == kind:
                    return item.id
        raise ValueError(f"{agent.id} has no {' or '.join(kinds)} in round {r}")
    found = index.contributions.get(words)
    if found is None:
        raise ValueError(f"nothing is called {one_line_safe(words, 80)!r}: name {ITEM_USAGE}")
    return found.id


def _count_constraints(index: DebateIndex) -> str:
    n = sum(1 for k in index.pins if k.startswith("constraint-"))
    return f"{n} constraint{'s' if n != 1 else ''}" if n else "no constraints"


def check_fits(pin: Pin, protocol: DebateProtocol) -> None:
    """ValueError (one line) when `pin` would not fit beside the smallest view of an agent that
    would carry it: the prompts and task of its first call (fitted to its window, as the run
    checks before it starts) and the pins it carries already."""
    ctx = protocol.ctx
    index, builder = ctx.index, ctx.engine.builder
    window = protocol.call_window()
    for agent in ctx.agents:
        if pin.agents and agent.id not in pin.agents:
            continue
        record = ctx.record(agent, max(1, ctx.state.current_round), protocol.opening_phase,
                            params=protocol.opening_params(agent), call_id="pin-check")
        if protocol.opening_kind is not None:  # as the run's own check of the first call (`vote`: `solo`)
            record.task_key = f"{agent.id}/{protocol.opening_kind}"
        budget = ctx.engine.fit(agent, window.get("context_tokens"), window.get("max_tokens")).input_budget
        keys = [k for k in record.pinned if k != pin.key]
        record.pinned = []
        room = builder.room(record, budget)
        pins = {**index.pins, pin.key: pin}
        before = tokens.count_message({"role": "user", "content": pinned_message(keys, pins)}, agent.model) if keys \
            else 0
        after = tokens.count_message({"role": "user", "content": pinned_message([*keys, pin.key], pins)}, agent.model)
        need, left = after - before, room - before
        if need > left:
            raise ValueError(f"cannot pin {pin.label}: it needs {need:,} tokens, the view of {agent.id} has "
                             f"{max(0, left):,} left beside its prompts, task and other pins")

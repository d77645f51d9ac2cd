"""Facts as an engineer writes them — decisions, numbers with units, constraints — planted in a
conversation's early turns and brought up again much later in other words.

Unlike `tests.prose.planted`, no fact has a made-up name only it holds: each is told apart by
the combination of a few ordinary words (what it is about, where, a number and its unit), the
way a real debate comes back to "the burst allowance of the search endpoint". Used by
`tests/test_recall_dropped.py` and `bench/recall.py --engineer`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.prose import FactScript

_THINGS = (
    ("burst allowance", "requests"), ("refill interval", "ms"), ("lease renewal", "seconds"),
    ("retry budget", "percent"), ("eviction window", "minutes"), ("replication lag", "ms"),
    ("connection pool", "connections"), ("audit retention", "days"),
)
_PLACES = (
    "search endpoint", "partner tier", "billing gateway", "webhook relay", "export worker",
    "checkout service", "session store", "mobile edge",
)
_WHY = (
    "because the edge proxy already enforces the hard ceiling",
    "so the nightly reconciliation job never starves the interactive traffic",
    "since the on-call team reads the same dashboard during an incident",
    "which keeps the Redis cluster under sixty percent memory at peak",
)


@dataclass(frozen=True)
class EngineerFact:
    kind: str
    """decision, number or constraint."""
    sentence: str
    mention: str


def engineer_fact(i: int) -> EngineerFact:
    """The i-th fact (distinct for i < 64: no two share both what it is about and where)."""
    thing, unit = _THINGS[i % len(_THINGS)]
    place = _PLACES[(i // len(_THINGS) + i) % len(_PLACES)]
    value = 15 + (i * 37) % 480
    why = _WHY[i % len(_WHY)]
    kind = ("decision", "number", "constraint")[i % 3]
    if kind == "decision":
        sentence = f"We decided to set the {thing} of the {place} to {value} {unit}, {why}."
    elif kind == "number":
        sentence = f"The soak test measured the {thing} of the {place} at {value} {unit} under peak load, {why}."
    else:
        sentence = f"Hard constraint: the {thing} of the {place} must never exceed {value} {unit}, {why}."
    mention = (f"Coming back to the {thing} of the {place} and its {value} {unit} from the first hour of this "
               f"discussion: does that figure still hold once the sharding plan moves traffic between regions?")
    return EngineerFact(kind, sentence, mention)


@dataclass
class EngineerScript(FactScript):
    """A `LoopbackServer` reply function for a conversation: ordinary prose each turn, the fact
    of `plants` (turn → fact) in the middle of its turn's reply, a mention of one at the turns of
    `mentions`."""

    fact: Callable[[int], Any] = engineer_fact
    in_the_middle: bool = True

"""Finding an agent by what a person types: its id, its name or its role; the judge by its
own id, its name or the word `judge`. One resolver for the CLI, the TUI and the engine."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Protocol, TypeVar

from .errors import InspectError

JUDGE_WORD = "judge"


class Named(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def role(self) -> str: ...


A = TypeVar("A", bound=Named)


def find_agent(text: str, agents: Sequence[A], judge: A | None = None) -> A | None:
    """The debater whose id, name or role is `text` (case-insensitive), else the judge when
    `text` is its id, its name or `judge`; None when nothing matches."""
    key = text.strip().lower()
    if not key:
        return None
    for a in agents:
        if key == a.id.lower():
            return a
    for a in agents:
        if key in (a.name.lower(), a.role.lower()):
            return a
    if judge is not None and key in (judge.id.lower(), judge.name.lower(), JUDGE_WORD):
        return judge
    return None


def require_agent(text: str, agents: Sequence[A], judge: A | None = None, *, where: str = "") -> A:
    """`find_agent`, or an InspectError that lists the agents and suggests the closest name."""
    found = find_agent(text, agents, judge)
    if found is not None:
        return found
    choices = [a.id for a in agents] + ([judge.id] if judge is not None else [])
    words = choices + [a.role for a in agents] + ([JUDGE_WORD] if judge is not None else [])
    hint = did_you_mean(text, words)
    names = ", ".join(a.id for a in agents) + (f", judge ({judge.id})" if judge is not None and judge.id != JUDGE_WORD
                                                else ", judge" if judge is not None else "")
    raise InspectError(f"no agent {text!r}{where}{hint}; agents: {names}")


def did_you_mean(text: str, words: Sequence[str]) -> str:
    """` (did you mean 'x'?)` for the word closest to a typo in `text` (case-insensitive), else ""."""
    close = difflib.get_close_matches(text.strip().lower(), [w.lower() for w in words], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""

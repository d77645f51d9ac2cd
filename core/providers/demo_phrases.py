"""The demo provider's phrase banks: package data (`demo_phrases.json`), read once, on first use.

Data, not code: a reader of the provider sees how replies are written, and the wording can be
changed (or reviewed) without touching it. Replies depend on the order of every list (a seeded
random choice picks by position), so the file is loaded as written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

PHRASES_FILE = "demo_phrases.json"
ROLE_KEYS = frozenset({"lens", "position", "design", "decisions", "risks", "strengths", "weaknesses", "suggestions",
                       "questions", "keeps", "changes"})
"""What every role's bank holds."""


@dataclass(frozen=True)
class PhraseBanks:
    roles: dict[str, dict[str, Any]]
    """Per role: its `lens` (a phrase) and lists of phrases by the part of a reply they fill."""
    openers: list[str]
    closers: list[str]
    shared_risks: list[str]
    tradeoffs: list[str]
    recommendations: list[str]
    eval_reasons: dict[str, str]
    """Evaluation criterion → the reason given for its score."""
    stopwords: frozenset[str]
    """Words too common to stand for the problem's topic."""


@cache
def phrase_banks() -> PhraseBanks:
    """The banks, read from the installed package the first time a demo reply is written."""
    text = resources.files(__package__ or __name__).joinpath(PHRASES_FILE).read_text("utf-8")
    data = json.loads(text)
    roles = data["roles"]
    if "generalist" not in roles or any(set(bank) != ROLE_KEYS for bank in roles.values()):
        raise ValueError(f"{PHRASES_FILE}: every role needs the keys {sorted(ROLE_KEYS)}, and `generalist` must exist")
    return PhraseBanks(roles=roles, openers=data["openers"], closers=data["closers"],
                       shared_risks=data["shared_risks"], tradeoffs=data["tradeoffs"],
                       recommendations=data["recommendations"], eval_reasons=data["eval_reasons"],
                       stopwords=frozenset(data["stopwords"]))

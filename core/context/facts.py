"""What a summary lost: the facts of the texts it covers that its own text no longer holds.

A summary says which items it covers, not which of their facts it kept. Each summarization
looks at the facts the rule-based extractor finds in what it covers (`extract_facts`: the
decisions, the numbers with their units, the open questions) and records those its text does
not hold as "dropped facts", each with the text it came from, so a person can see what a
compaction lost (`moot context`, `/context`).

A fact counts as held when the summary holds it in substance, not word for word (an LLM
rewords): each of its quantities ("200 ms", "50k", "85%") appears in the summary, and so do
most of its content words (`WORDS_HELD`), or the fact appears whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..models.state import DroppedFact, FactKind
from .consolidate import block_lines
from .rule_based import extract_facts

WORDS_HELD = 0.6
"""The share of a fact's content words a summary must hold (besides every quantity in it)."""
MAX_DROPPED = 48
"""At most this many dropped facts are recorded per summary (the newest)."""

_WORD = re.compile(r"[a-z][a-z0-9'-]{3,}")
_QUANTITY = re.compile(r"[$€£]?\d[\d,]*(?:\.\d+)?\s?(?:%|[a-zµ/]+)?")
_COMMON = frozenset(
    "that this these those with from into about over under than then them they their there where which while "
    "would could should will shall must have been being were what when also only each very more most less such "
    "some other same just like because after before since until still yet does done make made using used use "
    "need needs keep kept into onto upon your ours ourselves".split())


@dataclass(frozen=True)
class Covered:
    """One text a summary covers: its id, its step, whose it is, how it is labelled, its content."""

    item_id: str | None
    turn: int
    agent_id: str | None
    source: str
    content: str


def plain(text: str) -> str:
    """`text` as `holds` and `returns_to` read it: lower case, without markdown's marks."""
    return _plain(text)


def _plain(text: str) -> str:
    return " ".join(text.lower().replace("**", "").replace("`", "").replace("…", " ").split())


def _quantities(text: str) -> set[str]:
    return {q.replace(" ", "").replace(",", "") for q in _QUANTITY.findall(text)}


def holds(summary: str, fact: str) -> bool:
    """Whether `summary` (lowercased, plain: `_plain`) holds `fact` in substance (see the module doc)."""
    plain = _plain(fact).rstrip(".!?;: ")
    if plain and plain in summary:
        return True
    wanted = _quantities(plain)
    if wanted and not wanted <= _quantities(summary):
        return False
    words = {w for w in _WORD.findall(plain) if w not in _COMMON}
    if not words:
        return bool(wanted)
    have = set(_WORD.findall(summary))
    return len(words & have) >= WORDS_HELD * len(words)


RETURN_WORDS = 3
"""Content words a later text must share with a dropped fact to return to it (with its quantities)."""
_MEASURE = re.compile(r"(?<![\w.])[$€£]?\d[\d,]*(?:\.\d+)?\s?(?:%|[a-zµ/]+)?")
"""A quantity standing on its own ("200 ms", "85%"; not the "3" of "s3")."""


def returns_to(text: str, fact: str) -> bool:
    """Whether `text` (lowercased, plain: `_plain`) comes back to `fact` without saying it again: the
    fact has a quantity and `text` holds every one ("200 ms" again, not another number) and at least
    `RETURN_WORDS` of its content words, yet does not hold the fact (`holds`: a text that restates it
    has it in view already). A fact with no quantity is never returned to: word overlap alone
    cannot tell a debate coming back to a decision from one that uses the same words again."""
    plain = _plain(fact)
    wanted = {q.replace(" ", "").replace(",", "") for q in _MEASURE.findall(plain)}
    if not wanted or not wanted <= _quantities(text):
        return False
    words = {w for w in _WORD.findall(plain) if w not in _COMMON}
    shared = len(words & set(_WORD.findall(text)))
    return shared >= min(RETURN_WORDS, len(words)) and not holds(text, fact)


def facts_of(content: str) -> list[tuple[FactKind, str]]:
    """The decisions, numbers and open questions of one text, in that order."""
    found = extract_facts(content)
    return ([("decision", f) for f in found.decisions] + [("number", f) for f in found.claims]
            + [("open", f) for f in found.questions])


_BLOCK_KINDS: dict[str, FactKind] = {"decision": "decision", "claim": "number", "note": "number", "open": "open"}


def facts_of_block(text: str) -> list[tuple[FactKind, str]]:
    """Every fact an earlier summary block states, in its order: a block is a list of facts already,
    and the per-text limit `facts_of` applies to a message would leave most of a long one unchecked."""
    return [(_BLOCK_KINDS[ln.kind], ln.body) for ln in block_lines(text) if ln.fact]


def dropped_facts(covered: Sequence[Covered], summary: str) -> tuple[int, int, list[DroppedFact]]:
    """(how many facts the covered texts hold, how many of them `summary` holds, those it does
    not: the last `MAX_DROPPED` of them, oldest first). A covered text with no item id is an
    earlier summary's block (merged at a consolidation): all its facts are checked."""
    text = _plain(summary)
    total = kept = 0
    lost: list[DroppedFact] = []
    for c in covered:
        for kind, fact in (facts_of_block(c.content) if c.item_id is None else facts_of(c.content)):
            total += 1
            if holds(text, fact):
                kept += 1
            else:
                lost.append(DroppedFact(kind=kind, text=fact, source=c.source, item_id=c.item_id, turn=c.turn,
                                        agent_id=c.agent_id))
    return total, kept, lost[-MAX_DROPPED:]

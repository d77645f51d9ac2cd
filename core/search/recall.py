"""Finding what a view should recall: old texts that share the rare words of what is said now.

The recall tier (`moot.core.context.recall_tier`) and the `recall` tool ask one question:
which texts that the summary covers — out of the verbatim window — speak of what the
debate is discussing now? The answer must depend only on the call's inputs, never on
timing (calls of one phase run side by side and finish in any order, and views must be
byte-identical whatever that order), so the ranking reads nothing that can change while a
view is built:

- only texts of a closed part of the debate count (`RecallScope`: kinds, a last step the
  summary covers, optionally an explicit set of ids), so FTS5's table-wide statistics,
  which move as sibling calls add their texts, are never used;
- a word counts when it is *rare* there: it occurs in at least one and at most `RARE`
  of those texts, and in at most a tenth of them (the others are what the summary already
  carries); its weight is BM25's
  inverse document frequency over that part; a text's score is the sum of the weights
  of the rare words it holds (BM25 with k1 = 0: presence, not repetition);
- ties go to the older step, then the id;
- an item holding a fact a summary dropped comes first when the query returns to that fact
  (`rank_dropped`, `prefer_dropped`): the summary no longer says it, so only recall can.

Each word's postings are read with a limit (`SearchIndex.postings`), so the cost of a
query is bounded by the number of words and `RARE`, not by the debate's length.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .index import MAX_TERM_CHARS, stop_words

RARE = 16
"""A word occurring in more of the eligible texts than this (or than a tenth of them, when that is
fewer) is what the summary carries anyway."""
SCAN = 4 * RARE
"""Postings read per word when the eligible texts are an explicit set (an agent's perspective):
a word in more texts of those kinds than this is not rare among them either (taken as common)."""
MAX_TERMS = 96
"""Words of a query looked up at most: names first (see `query_words`), then the others in order."""
_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_START = re.compile(r"(?:^|[.!?:;#*>\-|]\s*|\n\s*)$")


class Postings(Protocol):
    """Where the words' postings come from: a `SearchIndex`, or the running debate's `LiveIndex`."""

    def postings(self, term: str, *, kinds: Sequence[str], max_step: int,
                 limit: int) -> list[tuple[str, int]]: ...

    def dropped_postings(self, term: str, *, max_step: int, limit: int) -> list[tuple[str, int, str]]: ...

    def dropped_version(self) -> int: ...


class CachedPostings:
    """Postings of a closed part of the debate never change (texts at or before a covered step are
    all written before any view reads them), so each word's are read once per last step: the next
    turns, whose queries share most of their words, ask SQLite only for new ones. And a word that
    is common up to some step is common up to any later one: once seen common, it is never asked
    for again. Bounded."""

    def __init__(self, source: Postings, size: int = 20_000) -> None:
        self.source = source
        self.size = size
        self._cache: dict[tuple[str, tuple[str, ...], int, int], list[tuple[str, int]]] = {}
        self._common: dict[tuple[str, tuple[str, ...], int], int] = {}
        """(word, kinds, limit) → the first last step at which it filled `limit` postings."""
        self._dropped: dict[tuple[str, int, int], list[tuple[str, int, str]]] = {}
        self._version = -1

    def postings(self, term: str, *, kinds: Sequence[str], max_step: int, limit: int) -> list[tuple[str, int]]:
        common = (term, tuple(kinds), limit)
        since = self._common.get(common)
        if since is not None and since <= max_step:
            return [("", 0)] * limit  # only its count matters
        key = (term, tuple(kinds), max_step, limit)
        rows = self._cache.get(key)
        if rows is None:
            rows = self.source.postings(term, kinds=kinds, max_step=max_step, limit=limit)
            if len(self._cache) >= self.size or len(self._common) >= 4 * self.size:
                self._cache.clear()
                self._common.clear()
            if len(rows) >= limit:
                self._common[common] = min(max_step, since if since is not None else max_step)
                return [("", 0)] * limit
            self._cache[key] = rows
        return rows

    def dropped_version(self) -> int:
        """The dropped facts' version (`SearchIndex.dropped_version`), read once a query: a later
        summary may drop a fact of an item at a step already read, so what was cached for another
        version is let go (else a view would depend on which calls came before it)."""
        version = self.source.dropped_version()
        if version != self._version:
            self._version = version
            self._dropped.clear()
        return version

    def dropped_postings(self, term: str, *, max_step: int, limit: int) -> list[tuple[str, int, str]]:
        """A word's dropped facts up to a step, as of the version last read (`dropped_version`)."""
        key = (term, max_step, limit)
        rows = self._dropped.get(key)
        if rows is None:
            if len(self._dropped) >= self.size:
                self._dropped.clear()
            rows = self._dropped[key] = self.source.dropped_postings(term, max_step=max_step, limit=limit)
        return rows


@dataclass(frozen=True)
class RecallScope:
    """The texts a view may recall: what its summary covers, and nothing newer."""

    kinds: tuple[str, ...]
    """Contribution types (`message`; `proposal`, `refinement`, `critique`, `answer`)."""
    max_step: int
    """The last turn or round the summary covers (texts at or before it)."""
    population: int
    """How many texts are eligible: the N of the inverse document frequency."""
    only: frozenset[str] | None = None
    """When set, only these ids are eligible (an agent's perspective among every agent's texts)."""


@dataclass(frozen=True)
class Found:
    """One text worth recalling, and why."""

    doc_id: str
    step: int
    score: float
    terms: tuple[str, ...]
    """The rare query words it holds, the rarest first."""


@dataclass
class Ranking:
    terms: list[str] = field(default_factory=list)
    """The rare words the query was reduced to (what was searched), rarest first."""
    found: list[Found] = field(default_factory=list)
    """Best first."""


def text_words(text: str) -> frozenset[str]:
    """The distinct words of `text` as queries spell them (lower case, cut as the index cuts them)."""
    return frozenset(m.group().lower()[:MAX_TERM_CHARS] for m in _WORD.finditer(text))


def query_words(texts: Iterable[str], limit: int = MAX_TERMS) -> list[str]:
    """Distinct words of `texts` (lower case, without stop words and one-character words), at most
    `limit`: first those that look like names — capitalized inside a sentence, or letters and
    digits mixed (`Kestrel`, `v2`, `p99`), what a debate comes back to — then the others, each
    group in the order of the texts."""
    stop = stop_words()
    names: list[str] = []
    others: list[str] = []
    seen: set[str] = set()
    for text in texts:
        for m in _WORD.finditer(text):
            raw = m.group()
            w = raw.lower()[:MAX_TERM_CHARS]
            if w in seen or w in stop or len(w) < 2:
                continue
            seen.add(w)
            mixed = any(ch.isdigit() for ch in w) and any(ch.isalpha() for ch in w)
            capital = raw[0].isupper() and not _SENTENCE_START.search(text[max(0, m.start() - 3):m.start()])
            (names if mixed or capital else others).append(w)
    return (names + others)[:limit]


def idf(population: int, df: int) -> float:
    """BM25's inverse document frequency (always positive)."""
    return math.log(1 + (population - df + 0.5) / (df + 0.5))


def rank(index: Postings, words: Sequence[str], scope: RecallScope, *, exclude: Iterable[str] = (),
         rare: int = RARE, share: float = 0.1) -> Ranking:
    """The eligible texts holding rare words of the query, best first (see the module doc): words in
    at most `rare` of them and at most `share` of them count."""
    skip = set(exclude)
    rare = max(1, min(rare, int(scope.population * share)))
    per_word: list[tuple[str, dict[str, int]]] = []
    seen_sets: set[frozenset[str]] = set()
    scan = rare + 1 if scope.only is None else SCAN + 1
    for word in words:
        rows = index.postings(word, kinds=scope.kinds, max_step=scope.max_step, limit=scan)
        if len(rows) >= scan:
            continue  # common among these texts
        docs = {d: st for d, st in rows if scope.only is None or d in scope.only}
        if not docs or len(docs) > rare:
            continue
        key = frozenset(docs)
        if key in seen_sets:
            continue  # another form of a word already counted ("lease", "leases": one stem)
        seen_sets.add(key)
        per_word.append((word, docs))
    per_word.sort(key=lambda wd: len(wd[1]))  # rarest first; stable, so ties keep the query's order
    population = max(scope.population, max((len(d) for _, d in per_word), default=0))
    scores: dict[str, float] = {}
    steps: dict[str, int] = {}
    matched: dict[str, list[str]] = {}
    for word, docs in per_word:
        weight = idf(population, len(docs))
        for doc_id, step in docs.items():
            if doc_id in skip:
                continue
            scores[doc_id] = scores.get(doc_id, 0.0) + weight
            steps[doc_id] = step
            matched.setdefault(doc_id, []).append(word)
    order = sorted(scores, key=lambda d: (-round(scores[d], 9), steps[d], d))
    return Ranking([w for w, _ in per_word],
                   [Found(d, steps[d], round(scores[d], 4), tuple(matched[d])) for d in order])





def rank_dropped(index: Postings, words: Sequence[str], scope: RecallScope, returns_to: Callable[[str], bool], *,
                 exclude: Iterable[str] = ()) -> Ranking:
    """The eligible items holding a fact a summary dropped that the query returns to (`returns_to`
    says, for a fact's text), best first. A fact is returned to by its figures ("250 ms" again),
    so only the query's words with a digit are looked up (a few, where every word would cost a
    lookup each); a fact found scores the query words it holds, an item its best fact's. A fact a
    consolidation dropped has no item of its own (it came from an older block): its item is the
    best text for the fact's own words (`rank`). Like `rank`, it reads only a closed part of the
    debate (facts of items at or before `scope.max_step`)."""
    skip = set(exclude)
    scan = SCAN + 1
    index.dropped_version()  # what is read below is as of now (a cache lets go of an older version)
    asked = set(words)
    found: dict[tuple[str, str], int] = {}
    looked: list[str] = []
    for word in words:
        if not any(ch.isdigit() for ch in word):
            continue
        rows = index.dropped_postings(word, max_step=scope.max_step, limit=scan)
        if len(rows) >= scan:
            continue  # a figure in most dropped facts says nothing about which one
        looked.append(word)
        for doc_id, step, fact in rows:
            found[(doc_id, fact)] = step
    best: dict[str, Found] = {}
    for (doc_id, fact), step in found.items():
        held = asked & text_words(fact)
        if len(held) < 2 or not returns_to(fact):
            continue
        if not doc_id:  # dropped by a consolidation: found again by its own words
            again = rank(index, query_words([fact]), scope, exclude=skip).found
            if not again:
                continue
            doc_id, step = again[0].doc_id, again[0].step
        if doc_id in skip or (scope.only is not None and doc_id not in scope.only):
            continue
        terms = tuple(sorted(held, key=lambda w: (not any(ch.isdigit() for ch in w), w)))  # its figures first
        if doc_id not in best or len(terms) > len(best[doc_id].terms):
            best[doc_id] = Found(doc_id, step, float(len(terms)), terms)
    order = sorted(best.values(), key=lambda f: (-f.score, f.step, f.doc_id))
    return Ranking(looked, order)

def prefer_dropped(ranking: Ranking, dropped: Ranking) -> Ranking:
    """`ranking` with the items of `dropped` first (best first), each once; the words searched are
    both rankings' (those of `ranking` first)."""
    if not dropped.found:
        return ranking
    first = {f.doc_id for f in dropped.found}
    terms = list(dict.fromkeys([*ranking.terms, *dropped.terms]))
    return Ranking(terms, [*dropped.found, *(f for f in ranking.found if f.doc_id not in first)])

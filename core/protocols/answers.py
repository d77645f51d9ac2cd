"""Answers: pulled out of a reply in a stated form, compared with the expected one, counted.

A reply that holds no answer in the asked form gives None, and None is never correct
(Du et al. count an unparsable answer as right; we do not). The forms:

- `number`: the last `Answer: …` line's number, else the last `\\boxed{}`, else the last
  number in the reply; `1,234`, `-7.0` and `7` compare as numbers.
- `choice`: a letter A–Z (`Answer: (B)`, `B) …`, `the answer is B`), or a choice's exact text.
- `text`: the `Answer:` line (else the last non-empty line), compared case- and space-insensitively.
- `boxed`: the last `\\boxed{…}` (nested braces allowed), compared as a number when both are.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from ..models.config import AnswerFormat
from ..models.terms import AnswerKind

_NUMBER = r"[-−+]?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_NUMBER_RE = re.compile(_NUMBER)
_ANSWER_LINE = re.compile(
    r"(?:final\s+answer|answer)\s*(?:is|=|:)?\s*[:=]?\s*(?P<rest>[^\n]*)", re.IGNORECASE)
_THE_ANSWER_IS = re.compile(r"answer\s+(?:is|would be|:)\s*:?\s*\(?\**([A-Z])\b", re.IGNORECASE)
_MARKUP = re.compile(r"[*_`$]")
_PRODUCT = re.compile(r"(?<=\d)[*_](?=\d)")
"""A star (or underscore) between two digits: an operator, not emphasis; taking it off as
markup would join `21*13` into a number the reply never gave."""


def _unmarked(text: str) -> str:
    """`text` without markdown's emphasis, code and math marks; an operator between digits
    becomes a space."""
    return _MARKUP.sub("", _PRODUCT.sub(" ", text))


def _boxed(text: str) -> str | None:
    """The content of the last `\\boxed{…}` (braces balanced), or None."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    i, depth = start + len("\\boxed{"), 1
    out: list[str] = []
    while i < len(text):
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return "".join(out).strip()
        out.append(ch)
        i += 1
    return None


def _answer_lines(text: str) -> list[str]:
    """What follows each `Answer:` / `Final answer:` marker, in order (markup removed)."""
    clean = _unmarked(text)
    return [m.group("rest").strip() for m in _ANSWER_LINE.finditer(clean) if m.group("rest").strip()]


def normalize_number(text: str) -> str | None:
    """A number's canonical text (`1,234.0` → `1234`), or None when `text` holds none."""
    m = _NUMBER_RE.search(text)
    if m is None:
        return None
    raw = m.group(0).replace(",", "").replace("−", "-").replace(" ", "")
    try:
        value = Fraction(raw)
    except (ValueError, ZeroDivisionError):
        return None
    if value.denominator == 1:
        return str(value.numerator)
    f = float(value)
    return repr(f) if math.isfinite(f) else None


def normalize_text(text: str) -> str:
    """Case, accents of width, surrounding punctuation and runs of spaces do not matter."""
    text = unicodedata.normalize("NFKC", _MARKUP.sub("", text)).casefold()
    return re.sub(r"\s+", " ", text).strip().strip(".,;:!\"'()[]").strip()


def _number(text: str) -> str | None:
    for rest in reversed(_answer_lines(text)):
        n = normalize_number(rest)
        if n is not None:
            return n
    boxed = _boxed(text)
    if boxed is not None and normalize_number(boxed) is not None:
        return normalize_number(boxed)
    found = _NUMBER_RE.findall(_unmarked(text))
    return normalize_number(found[-1]) if found else None


def _letter(rest: str) -> str | None:
    """`B`, `(B)`, `B.`, or `B) the text` → `B`; a word that starts with a capital is not a letter."""
    s = rest.strip()
    m = re.fullmatch(r"\(?([A-Za-z])\)?[.:]?", s) or re.match(r"\(?([A-Z])[).:](?:\s|$)", s)
    return m.group(1).upper() if m else None


def _choice(text: str, choices: Sequence[str]) -> str | None:
    letters = {chr(65 + i) for i in range(len(choices) or 26)}
    by_text = {normalize_text(c): chr(65 + i) for i, c in enumerate(choices)}
    candidates = list(reversed(_answer_lines(text)))
    boxed = _boxed(text)
    if boxed is not None:
        candidates.insert(0, boxed)
    for rest in candidates:
        letter = _letter(rest) or by_text.get(normalize_text(rest))
        if letter in letters:
            return letter
    found = [m.group(1).upper() for m in _THE_ANSWER_IS.finditer(_MARKUP.sub("", text))]
    found = [f for f in found if f in letters]
    if found:
        return found[-1]
    lines = [ln for ln in text.splitlines() if ln.strip()]
    last = _letter(_MARKUP.sub("", lines[-1])) if lines else None
    return last if last in letters else None


def _text(text: str) -> str | None:
    lines = _answer_lines(text)
    if lines:
        return normalize_text(lines[-1]) or None
    rest = [ln for ln in text.splitlines() if ln.strip()]
    return normalize_text(rest[-1]) or None if rest else None


def extract(text: str, fmt: AnswerFormat | None) -> str | None:
    """The answer a reply gives in the stated form, normalized; None when it gives none."""
    kind: AnswerKind = fmt.kind if fmt is not None else "text"
    if kind == "number":
        return _number(text)
    if kind == "choice":
        return _choice(text, fmt.choices if fmt is not None else [])
    if kind == "boxed":
        boxed = _boxed(text)
        if boxed is None:
            return None
        return normalize_number(boxed) if re.fullmatch(_NUMBER, boxed.strip()) else normalize_text(boxed) or None
    return _text(text)


def expected_key(expected: str, fmt: AnswerFormat | None) -> str:
    """The expected answer normalized as `extract` normalizes a reply's."""
    kind = fmt.kind if fmt is not None else "text"
    if kind == "number" or (kind == "boxed" and re.fullmatch(_NUMBER, expected.strip())):
        return normalize_number(expected) or normalize_text(expected)
    if kind == "choice":
        e = expected.strip().strip("()").upper()
        if len(e) == 1 and e.isalpha():
            return e
        choices = fmt.choices if fmt is not None else []
        by_text = {normalize_text(c): chr(65 + i) for i, c in enumerate(choices)}
        return by_text.get(normalize_text(expected), normalize_text(expected))
    return normalize_text(expected)


def is_correct(answer: str | None, expected: str, fmt: AnswerFormat | None) -> bool:
    """Unparsable (None) is wrong."""
    return answer is not None and answer == expected_key(expected, fmt)


_CONFIDENCE = re.compile(r"confidence\s*(?:level)?\s*[:=]\s*(\d{1,3}(?:\.\d+)?)\s*(%|/\s*100)?", re.IGNORECASE)


def extract_confidence(text: str) -> int | None:
    """The confidence (0–100) the last `Confidence: N` line states (`85`, `85%`, `85/100`); None when
    there is none or it is out of range."""
    found = _CONFIDENCE.findall(_unmarked(text))
    if not found:
        return None
    value = float(found[-1][0])
    return round(value) if 0 <= value <= 100 else None


@dataclass(frozen=True)
class Weighted:
    """The answer with the most confidence behind it: each answer weighs its confidence / 100, one
    with no stated confidence weighs 1 (a plain vote); a tie goes to the tied answer given first."""

    winner: str | None
    totals: dict[str, float] = field(default_factory=dict)
    tied: list[str] = field(default_factory=list)


def weighted_majority(answers: Sequence[str | None], confidences: Sequence[int | None]) -> Weighted:
    """The confidence-weighted majority of answers given in agent order; None answers count for nothing."""
    totals: dict[str, float] = {}
    for a, c in zip(answers, confidences, strict=True):
        if a is not None:
            totals[a] = totals.get(a, 0.0) + (1.0 if c is None else c / 100)
    if not totals:
        return Weighted(None)
    top = max(totals.values())
    best = [a for a, w in totals.items() if abs(w - top) < 1e-9]  # first-seen order
    ordered = dict(sorted(((a, round(w, 4)) for a, w in totals.items()), key=lambda kv: -kv[1]))
    return Weighted(best[0], ordered, best if len(best) > 1 else [])


@dataclass(frozen=True)
class Majority:
    """The answer most agents gave; a tie goes to the tied answer given first in agent order
    (reproducible: the same answers in the same order always give the same winner)."""

    winner: str | None
    counts: dict[str, int] = field(default_factory=dict)
    tied: list[str] = field(default_factory=list)
    unparsed: int = 0

    @property
    def rule(self) -> str:
        if self.winner is None:
            return "no agent gave an answer in the asked form"
        votes = self.counts[self.winner]
        total = sum(self.counts.values()) + self.unparsed
        if self.tied:
            return (f"tie: {len(self.tied)} answers with {votes} vote{'s' if votes != 1 else ''} each of {total}; "
                    "broken by agent order (the tied answer given first)")
        return f"majority: {votes} of {total}"


def majority(answers: Sequence[str | None]) -> Majority:
    """The majority of answers given in agent order; None answers count for nothing."""
    given = [a for a in answers if a is not None]
    if not given:
        return Majority(None, unparsed=len(answers))
    counts = Counter(given)
    top = max(counts.values())
    best = [a for a in dict.fromkeys(given) if counts[a] == top]  # first-seen order
    ordered = dict(sorted(counts.items(), key=lambda kv: (-kv[1], given.index(kv[0]))))
    return Majority(best[0], ordered, best if len(best) > 1 else [], unparsed=len(answers) - len(given))

"""Two agents side by side: which of their contributions to set against each other, the words that
differ, the claims only one of them makes, and (vote and council debates) the votes or ranks.

Pure (no Textual): the TUI's `/compare` screen draws what this returns; a report could too.
Words are compared with `difflib.SequenceMatcher` over the words of each text (spaces kept for
display), so a moved sentence reads as removed on one side and added on the other, as in a diff;
a single common word between changes ("the") counts as changed, the way diff tools clean up.
A claim is a sentence or a list item; one side's claim "differs" when no claim of the other side
is at least `SAME_CLAIM` alike (word-level ratio).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from .models.state import Contribution, DebateState

SAME_CLAIM = 0.6
"""Two claims at least this alike (difflib's ratio over their words) say the same thing."""
MAX_CLAIMS = 8
"""Claims listed per side (the most distinct first)."""

PAIRED_TYPES = ("proposal", "refinement", "answer", "message", "ranking")
"""Contribution types set against each other (critiques are of different targets: shown, not diffed)."""


@dataclass(frozen=True)
class Piece:
    text: str
    only: bool
    """True: these words are on this side only."""


@dataclass
class Side:
    contribution: Contribution | None
    pieces: list[Piece] = field(default_factory=list)
    claims: list[str] = field(default_factory=list)
    """Claims the other side does not make (`SAME_CLAIM`)."""


@dataclass
class Pairing:
    """One kind of contribution of A and of B, compared (or shown side by side when `diffed` is False)."""

    title: str
    a: Side
    b: Side
    shared: float = 0.0
    """The share of words the two have in common (difflib's ratio), 0–1."""
    diffed: bool = True


@dataclass
class Comparison:
    a: str
    b: str
    step: int | None
    """The round (turn, in a conversation) compared; None when there is nothing to compare."""
    steps: list[int]
    """Every step where both have a contribution (to step through)."""
    pairings: list[Pairing]
    table: list[list[str]] = field(default_factory=list)
    """Votes or ranks (vote and council debates): a header row, then one row per agent."""
    table_title: str = ""


_WORDS = re.compile(r"\S+|\s+")
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_MARK = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#{1,6})\s*")


def word_diff(a: str, b: str) -> tuple[list[Piece], list[Piece], float]:
    """The pieces of each text, the words only on that side marked; and the share of words in common."""
    ta, tb = _WORDS.findall(a), _WORDS.findall(b)
    wa = [i for i, t in enumerate(ta) if not t.isspace()]
    wb = [i for i, t in enumerate(tb) if not t.isspace()]
    matcher = difflib.SequenceMatcher(None, [ta[i] for i in wa], [tb[i] for i in wb], autojunk=False)
    only_a = [True] * len(ta)
    only_b = [True] * len(tb)
    blocks = [b for b in matcher.get_matching_blocks() if b.size]
    for n, block in enumerate(blocks):
        inside = 0 < n < len(blocks) - 1 or (n == 0 and (block.a or block.b)) or (
            n == len(blocks) - 1 and (block.a + 1 < len(wa) or block.b + 1 < len(wb)))
        if block.size == 1 and inside:
            continue  # one common word ("the") inside changed text is noise, not agreement
        for k in range(block.size):
            only_a[wa[block.a + k]] = False
            only_b[wb[block.b + k]] = False
    return _pieces(ta, only_a), _pieces(tb, only_b), matcher.ratio() if (wa or wb) else 1.0


def _pieces(tokens: list[str], only: list[bool]) -> list[Piece]:
    """Runs of tokens with the same mark; a space between two marked words stays marked."""
    out: list[Piece] = []
    for i, tok in enumerate(tokens):
        mark = only[i] and not tok.isspace()
        if tok.isspace():  # joins marked words, so a changed phrase reads as one
            mark = bool(out) and out[-1].only and i + 1 < len(tokens) and only[i + 1]
        if out and out[-1].only == mark:
            out[-1] = Piece(out[-1].text + tok, mark)
        else:
            out.append(Piece(tok, mark))
    return out


def claims(text: str) -> list[str]:
    """The sentences and list items of a text, without list marks and headings' hashes."""
    found = []
    for part in _SPLIT.split(text):
        part = _MARK.sub("", part).strip()
        if len(part.split()) >= 3:
            found.append(part)
    return found


def distinct_claims(a: str, b: str) -> tuple[list[str], list[str]]:
    """Claims of `a` that `b` does not make, and the other way round (the most distinct first)."""
    ca, cb = claims(a), claims(b)
    return _unmatched(ca, cb), _unmatched(cb, ca)


def _unmatched(mine: list[str], theirs: list[str]) -> list[str]:
    words = [c.lower().split() for c in theirs]
    scored: list[tuple[float, int, str]] = []
    for i, claim in enumerate(mine):
        w = claim.lower().split()
        best = 0.0
        for other in words:
            m = difflib.SequenceMatcher(None, w, other, autojunk=False)
            if m.real_quick_ratio() > best and m.quick_ratio() > best:
                best = max(best, m.ratio())
        if best < SAME_CLAIM:
            scored.append((best, i, claim))
    scored.sort()
    return [c for _, _, c in sorted(scored[:MAX_CLAIMS], key=lambda s: s[1])]


def compare(state: DebateState, a: str, b: str, step: int | None = None) -> Comparison:
    """Agents `a` and `b` (ids) in `step` (default: the latest where both contributed)."""
    conversation = state.protocol == "conversation"
    steps = _steps(state, a, b, conversation)
    if step is None:
        step = steps[-1] if steps else None
    pairings: list[Pairing] = []
    if step is not None:
        pairings = _conversation(state, a, b, step) if conversation else _round(state, a, b, step)
    out = Comparison(a=a, b=b, step=step, steps=steps, pairings=pairings)
    _votes(state, out)
    return out


def _steps(state: DebateState, a: str, b: str, conversation: bool) -> list[int]:
    if conversation:  # a turn after which both have spoken
        spoke: dict[str, int] = {}
        out = []
        for rnd in state.rounds:
            for c in rnd.contributions:
                spoke[c.agent_id] = rnd.number
            if a in spoke and b in spoke and rnd.contributions and rnd.contributions[0].agent_id in (a, b):
                out.append(rnd.number)
        return out
    return [rnd.number for rnd in state.rounds
            if {a, b} <= {c.agent_id for c in rnd.contributions if c.type in PAIRED_TYPES}]


def _pair(title: str, ca: Contribution | None, cb: Contribution | None, *, diffed: bool = True) -> Pairing:
    if not diffed or ca is None or cb is None:
        return Pairing(title, Side(ca, [Piece(ca.content, False)] if ca else []),
                       Side(cb, [Piece(cb.content, False)] if cb else []), diffed=False)
    pa, pb, shared = word_diff(ca.content, cb.content)
    only_a, only_b = distinct_claims(ca.content, cb.content)
    return Pairing(title, Side(ca, pa, only_a), Side(cb, pb, only_b), shared)


def _round(state: DebateState, a: str, b: str, step: int) -> list[Pairing]:
    rnd = state.round(step)
    by: dict[tuple[str, str, str | None], Contribution] = {
        (c.agent_id, c.type, c.target_agent_id): c for c in rnd.contributions}
    out = []
    for kind in PAIRED_TYPES:
        ca, cb = by.get((a, kind, None)), by.get((b, kind, None))
        if ca is not None or cb is not None:
            out.append(_pair(f"round {step} · {kind}", ca, cb))
    ab, ba = by.get((a, "critique", b)), by.get((b, "critique", a))
    if ab is not None or ba is not None:
        out.append(_pair(f"round {step} · what each said of the other", ab, ba, diffed=False))
    return out


def _conversation(state: DebateState, a: str, b: str, step: int) -> list[Pairing]:
    latest: dict[str, Contribution] = {}
    for rnd in state.rounds:  # (those held: a long debate's last turns)
        if rnd.number > step:
            break
        for c in rnd.contributions:
            latest[c.agent_id] = c
    ca, cb = latest.get(a), latest.get(b)
    return [_pair(f"latest messages by turn {step} (turns {ca.round if ca else '–'} and {cb.round if cb else '–'})",
                  ca, cb)]


def _votes(state: DebateState, out: Comparison) -> None:
    """Vote and council debates record a tally with their solution: the answers and their votes,
    or each author's mean rank."""
    tally = state.final_solution.tally if state.final_solution is not None else None
    if tally is None:
        return
    ranks, answers, counts = tally.ranks, tally.answers, tally.counts
    mark = {out.a: "◀", out.b: "▶"}
    if tally.kind == "council":
        out.table_title = "council: mean position in the others' rankings (1 = best)"
        out.table = [["", "agent", "mean rank", "answer"]]
        for agent, rank in ranks.items():
            out.table.append([mark.get(agent, ""), agent, f"{rank:.2f}", _short(answers.get(agent))])
    else:
        winner = tally.winner
        out.table_title = f"vote: {tally.rule or 'majority'}"
        out.table = [["", "agent", "answer", "votes for it"]]
        for agent, answer in answers.items():
            votes = counts.get(answer, 0) if answer is not None else 0
            won = " ★" if answer is not None and answer == winner else ""
            out.table.append([mark.get(agent, ""), agent, _short(answer), f"{votes}{won}"])


def _short(text: str | None, n: int = 40) -> str:
    if text is None:
        return "(none parsed)"
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 1] + "…"

"""The facts a consolidation of append-only summary blocks carries: read back as facts, kept first.

Blocks written by the rule-based summarizer are lists of lines, a head per text ("**label** —
its position") and that text's facts ("- decision: …", "- claim: …", "- open: …"); an LLM's
blocks are prose. Summarized again as if each block were one message, a block of twenty facts
gave the extractor one text of which it keeps six facts a kind, the heads of the merged blocks
piled up as lines of their own, and the consolidated block was mostly what gave way last, not
what mattered: the facts of the oldest turns were gone after a few merges.

So a consolidation reads each merged block's facts back (its fact lines as they are, the
decisions, numbers and open questions of its prose by the extractor, without a per-text limit)
and writes them as one compact list, oldest first and without repeats, ahead of the prose (the
heads' positions). When the list does not fit the block's cap, prose gives way first, then the
numbers without a measurement in them (notes), then facts; among facts the newest give way
first, as a rolling summary keeps what it held before what it adds: what a debate settled
first is what its later turns build on, and the newer blocks stand unmerged beside it. A
consolidated block read back gives the same list in the same order, so the next consolidation
keeps it as a prefix and only appends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..tokens import count_text
from .rule_based import EARLIER, extract_facts, is_key_claim

_FACT_LINE = re.compile(r"^- (decision|claim|open): (.+)$")
_HEAD = re.compile(r"^\*\*[^*\n]+\*\* — ")
_NO_LIMIT = 1 << 30

PRIORITY = {"decision": 0, "claim": 0, "open": 0, "note": 1, "prose": 2}
"""What gives way last (0) to first (2) when the merged facts do not fit."""


@dataclass(frozen=True)
class BlockLine:
    """One line of a consolidated block: its kind (decision, claim, note: a claim without a
    measurement, open, prose), its text as written (`- claim: fact` or prose), the fact alone."""

    kind: str
    text: str
    key: str
    body: str

    @property
    def fact(self) -> bool:
        return self.kind != "prose"


def _key(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".!;: …")


def _fact(kind: str, text: str) -> BlockLine:
    while text.startswith(f"{kind}: "):  # an earlier merge that wrote the kind twice
        text = text.removeprefix(f"{kind}: ")
    shown = "note" if kind == "claim" and not is_key_claim(text) else kind
    return BlockLine(shown, f"- {kind}: {text}", _key(text), text)


def block_lines(text: str) -> list[BlockLine]:
    """A block's facts and prose, in reading order: its fact lines as written, its heads as prose,
    and the decisions, numbers and open questions of any other prose (an LLM's block), then that
    prose's position."""
    out: list[BlockLine] = []
    prose: list[str] = []  # the rest, headings and blank lines kept: they say what a paragraph is
    for raw in text.splitlines():
        line = raw.strip()
        if m := _FACT_LINE.match(line):
            out.append(_fact(m.group(1), m.group(2)))
        elif _HEAD.match(line):
            out.append(BlockLine("prose", line, _key(line), line))
        elif line != EARLIER:
            prose.append(raw)
    if any(line.strip() and not line.lstrip().startswith("#") for line in prose):
        found = extract_facts("\n".join(prose), limit=_NO_LIMIT)
        out += [_fact("decision", f) for f in found.decisions] + [_fact("claim", f) for f in found.claims]
        out += [_fact("open", f) for f in found.questions]
        if found.position:  # its gist, as a head gives a text's: prose, the first to give way
            out.append(BlockLine("prose", found.position, _key(found.position), found.position))
    return out


def merged_lines(texts: list[str]) -> list[BlockLine]:
    """The lines of several blocks (oldest first), each fact once (its first, oldest telling)."""
    seen: set[str] = set()
    out: list[BlockLine] = []
    for text in texts:
        for line in block_lines(text):
            if line.key not in seen:
                seen.add(line.key)
                out.append(line)
    return out


def consolidate_facts(texts: list[str], max_chars: int, max_tokens: int, model: str | None,
                      prose: bool = True) -> str:
    """One block for the blocks `texts` (oldest first) within both caps: their facts as one list,
    then their prose (unless `prose` is False: an LLM writes it), giving way in the order the
    module doc gives."""
    lines = [ln for ln in merged_lines(texts) if prose or ln.fact]
    order = sorted(range(len(lines)), key=lambda i: (PRIORITY[lines[i].kind], i))
    kept: set[int] = set()
    chars = toks = 0
    costs = [(len(ln.text) + 1, count_text(ln.text, model) + 1) for ln in lines]  # with its line break
    for i in order:
        c, t = costs[i]
        if chars + c <= max_chars and toks + t <= max_tokens:
            kept.add(i)
            chars, toks = chars + c, toks + t
    while True:
        text = _render([ln for i, ln in enumerate(lines) if i in kept])
        if not kept or (len(text) <= max_chars and count_text(text, model) <= max_tokens):
            return text
        kept.remove(max(kept, key=lambda i: (PRIORITY[lines[i].kind], i)))  # the next to give way


def _render(lines: list[BlockLine]) -> str:
    facts = "\n".join(ln.text for ln in lines if ln.fact)
    prose = "\n".join(ln.text for ln in lines if not ln.fact)
    return "\n\n".join(p for p in (facts, prose) if p)

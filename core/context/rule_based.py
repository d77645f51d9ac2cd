"""Rule-based (extractive) condensation of an agent's older debate history.

Offline and deterministic: no model call, so it costs nothing, runs in tests, and is the
fallback when an LLM summary fails. It keeps what a debater needs to stay consistent --
each text's position, its numeric claims, its decisions and its open questions -- and the
result always fits the caller's character *and* token caps.

Not every number is worth the same room: a claim that reports a measurement or a metric
("the p99 latency of the gateway was 48 ms in the load test") is a key claim, one that
only happens to hold a number ("3 replicas across 2 zones") is a note. When the caps are
tight, notes give way first (oldest items first), then older items' claims and questions,
then older items altogether (`bench/facts.py` measures what survives).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..tokens import count_text, truncate_to_tokens

FACT_CHARS = 200  # one fact, trimmed at a word boundary
MAX_PER_KIND = 6  # per item and kind: a summary, not a copy
ELLIPSIS = "…"
EARLIER = "### Earlier"
_MIN_PREVIOUS = (24, 8)  # (chars, tokens) below which a shortened `previous` is not worth keeping
_TRAIL = " \t\n,;:—–-·"


@dataclass(frozen=True)
class SourceItem:
    """One text of the history; `label` says whose and when, e.g. "Round 2 · your proposal"."""

    label: str
    content: str


@dataclass(frozen=True)
class Facts:
    """What one text contributes to a summary."""

    position: str = ""
    claims: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)


# Patterns run on lowercased text where case does not matter: re.I is several times slower.
_SECTIONS = (  # heading / label words -> section; first match wins ("Decision summary" is decisions)
    ("open", re.compile(r"\b(?:questions?|risks?|unknowns?|unresolved|open issues?|weakness(?:es)?|concerns?)\b")),
    ("decision", re.compile(r"\b(?:decisions?|decided|choices|responses? to)\b")),
    ("position", re.compile(r"\b(?:position|summary|proposal|recommendations?|stance|thesis|verdict|tl;?dr"
                            r"|bottom line|conclusions?)\b")),
)
_STRONG = re.compile(r"\b(?:we will|we'll|decided|decide to|adopt(?:ed|ing)?|choose|chose|chosen|go with|opt for"
                     r"|going with|settled on|settle on|our plan is|the plan is|we plan to|let's|let us"
                     r"|we agreed to|agreed to use|recommend(?:ed)? that we)\b")
_UNSETTLED = re.compile(r"\b(?:still unclear|unclear (?:whether|how|if|who|what)|not (?:yet )?(?:known|clear|settled|"
                        r"decided)|(?:do|does|did) not (?:yet )?know|don't (?:yet )?know|open question|to be decided|"
                        r"\btbd\b|remains open|still open|needs? (?:to be )?validat|unresolved|undecided)")
"""Wording of an open question written without a question mark ("it is still unclear whether …")."""
_MEASURED = re.compile(r"\b(?:measured|measuring|benchmark\w*|load test|soak test|canary|drill|replayed|observed|"
                       r"we saw|profil\w+|p\d\d|latency|throughput|hit rate|error rate|lag|footprint|cold start|"
                       r"cpu|memory|rps|qps|came out at|peaked)\b")
"""Wording that makes a numeric claim a key claim (a measurement or a metric), not a note."""
_WEAK = re.compile(r"\b(?:use|must)\b")
_HEADING = re.compile(r"^#{1,6}(?:\s|$)")
_RULE = re.compile(r"^\s*([-*_])(?:\s*\1){2,}\s*$")
_BULLET = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_TABLE_SEP = re.compile(r"^[\s|:\-]+$")
_BOLD_ONLY = re.compile(r"^\*\*([^*]+)\*\*\s*$")
_LABEL = re.compile(r"^([A-Za-z][\w;/&'()-]*(?:\s[\w;/&'()-]+){0,3})\s*:\s*(.*)$")  # "Key risks: ..."
_LINK = re.compile(r"\[([^\]\n]{0,300})\]\([^)\n]{0,300}\)")  # bounded: no quadratic scan
_SPLIT = re.compile(r"(?<=[.!?])\s+")
_ABBREVS = frozenset({"e.g.", "i.e.", "vs.", "approx.", "cf.", "incl."})
# A number with a unit: "50 ms", "10k", "85%", "$200", "3 replicas" -- not "p99" or "round 2 we".
_NUM = re.compile(r"(?<![\w.])(?:[$€£]\s?\d|\d[\d,]{0,24}(?:\.\d+)?(?:\s?%|[A-Za-zµ]+\b|\s([A-Za-zµ/]+)))")
_STOP = frozenset(  # words after a number that make it not a quantity ("in round 2 we argued")
    "a an the and or of to in on at is are was were be we it its for with by as from that this these those then than "
    "if but so not no more less into per each i you they our your their has have had will would can could should may "
    "might do does did also only which who when where why how what all any some via after before under over about up "
    "out".split())


def _section_of(title: str) -> str | None:
    return next((kind for kind, rx in _SECTIONS if rx.search(title.lower())), None)


def _clean(text: str) -> str:
    """Inline markdown off, whitespace collapsed: facts are compared and shown as plain text."""
    text = _LINK.sub(r"\1", text) if "](" in text else text
    return " ".join(text.replace("**", "").replace("`", "").split())


def _trim(text: str, limit: int = FACT_CHARS) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if (space := cut.rfind(" ")) > limit // 2:
        cut = cut[:space]
    return (cut.rstrip(_TRAIL) or cut) + ELLIPSIS


def _key(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".!;: ")


def _sentences(text: str) -> list[str]:
    out: list[str] = []
    for piece in _SPLIT.split(text):
        if out and any(w.lstrip("(").lower() in _ABBREVS for w in out[-1][-9:].split()[-1:]):
            out[-1] += " " + piece  # "e.g. Redis" does not end a sentence
        else:
            out.append(piece)
    return out


def _blocks(content: str) -> list[tuple[str, str]]:
    """Markdown -> (kind, raw text) blocks: heading, para, bullet, row. Code is skipped.

    Each line is classified once, with cheap first-character checks before any regex."""
    out: list[tuple[str, str]] = []
    buf: list[str] = []
    kind, fence = "", False
    for line in content.splitlines() + [""]:  # the "" flushes the last block
        text = line.strip()
        text = text.lstrip("> ") if text[:1] == ">" else text
        first, bullet = text[:1], None
        if text.startswith(("```", "~~~")):
            what, fence = "skip", not fence
        elif fence or not text or (first in "-*_" and _RULE.match(text)):
            what = "skip"
        elif first == "#" and _HEADING.match(text):
            what = "heading"
        elif first == "|":
            what = "row"
        elif (first in "-*+•" or first.isdigit()) and (bullet := _BULLET.match(text)):
            what = "bullet"
        else:
            what = "more" if buf and (kind == "para" or line[:1].isspace()) else "para"
        if buf and what != "more":
            out.append((kind, " ".join(buf)))
            buf.clear()
        if what == "heading":
            out.append((what, text.lstrip("#").strip().rstrip("#").strip()))
        elif what == "row" and not _TABLE_SEP.match(text):
            out.append((what, " | ".join(c.strip() for c in text.strip("|").split("|") if c.strip())))
        elif what in ("bullet", "para", "more"):
            kind = kind if what == "more" else what
            buf.append(bullet.group(1) if bullet else text)
    return out


def _units(content: str) -> tuple[list[tuple[str, str, bool]], str]:
    """(section, sentence, prose?) units in reading order, and the first heading's title."""
    units: list[tuple[str, str, bool]] = []
    section, title = "other", ""
    for kind, raw in _blocks(content):
        text = _clean(raw)
        label = _LABEL.match(text) if text.find(":", 0, 80) > 0 else None
        labelled = _section_of(label.group(1)) if label else None
        if kind == "heading" or (kind == "para" and raw[:2] == "**" and _BOLD_ONLY.match(raw)):
            title, section = title or text, labelled or _section_of(text) or "other"
            continue
        here = section
        if labelled and label:  # "**Verdict:** ...", "- Risk: ..."; a labelled paragraph opens a section
            here, text = labelled, label.group(2)
            section = labelled if kind == "para" else section
        pieces = _sentences(text) if kind == "para" else [text]
        units.extend((_labelled(p) or here if i else here, p, kind != "row") for i, p in enumerate(pieces) if p)
    return units, title


def _labelled(sentence: str) -> str | None:
    """The section a sentence inside a paragraph names itself ("… Decision: we shard by tenant.")."""
    label = _LABEL.match(sentence) if sentence.find(":", 0, 40) > 0 else None
    return _section_of(label.group(1)) if label and label.group(1).count(" ") < 2 else None


def _kind(section: str, text: str) -> str | None:
    """Section beats wording; explicit decisions beat numbers, which beat a bare "use"/"must"."""
    if section in ("open", "decision"):
        return section
    if text.rstrip(" )\"'*_").endswith("?"):
        return "open"
    low = text.lower()
    if _STRONG.search(low):
        return "decision"
    if _UNSETTLED.search(low):
        return "open"
    if any(m.group(1) is None or m.group(1).lower() not in _STOP for m in _NUM.finditer(text)):
        return "claim"
    return "decision" if _WEAK.search(low) else None


def extract_facts(content: str, limit: int = MAX_PER_KIND) -> Facts:
    """Position, numeric claims, decisions and open questions of one markdown text (at most
    `limit` of each kind)."""
    units, title = _units(content)
    pos_i = next((i for i, (sec, _, _) in enumerate(units) if sec == "position"), None)
    if pos_i is None:  # else the first sentence of three words or more, else the first sentence
        pos_i = next((i for i, (_, t, prose) in enumerate(units) if prose and t.count(" ") >= 2), None)
    if pos_i is None:
        pos_i = next((i for i, (_, _, prose) in enumerate(units) if prose), None)
    position = _trim(units[pos_i][1] if pos_i is not None else (title or " ".join(content.split())))
    seen = {_key(position)}
    found: dict[str, list[str]] = {"claim": [], "decision": [], "open": []}
    for i, (section, text, _) in enumerate(units):
        kind = None if i == pos_i else _kind(section, text)
        if kind is None:
            continue
        fact = _trim(text)
        if (k := _key(fact)) not in seen:
            seen.add(k)
            found[kind].append(fact)
    claims = found["claim"]
    if len(claims) > limit:  # key claims first, then notes; reading order kept
        chosen = set(sorted(range(len(claims)), key=lambda i: not is_key_claim(claims[i]))[:limit])
        claims = [c for i, c in enumerate(claims) if i in chosen]
    return Facts(position, claims, found["decision"][:limit], found["open"][:limit])


def is_key_claim(claim: str) -> bool:
    """A claim that reports a measurement or a metric (kept before the notes)."""
    return bool(_MEASURED.search(claim.lower()))


_Line = tuple[str, str, int, int]  # (head|claim|note|decision|open, text, chars, estimated tokens)
WHOLE = 3


def _kept(block: list[_Line], state: int) -> list[_Line]:
    """State 3 = whole block, 2 = without notes, 1 = without any claim or open question, 0 = dropped."""
    if state == WHOLE:
        return block
    if state == 2:
        return [ln for ln in block if ln[0] != "note"]
    return [ln for ln in block if ln[0] in ("head", "decision")] if state else []


def _size(sections: list[list[_Line]]) -> tuple[int, int]:
    """(chars, estimated tokens): lines joined by "\\n", sections by "\\n\\n" (one token each)."""
    lines = sum(len(s) for s in sections)
    joins = lines - 1 if lines else 0
    chars = sum(ln[2] for s in sections for ln in s) + joins + max(0, len(sections) - 1)
    return chars, sum(ln[3] for s in sections for ln in s) + joins


def _build(items: Sequence[SourceItem], max_chars: int, max_tokens: int, model: str | None) -> list[list[_Line]]:
    """Blocks, oldest first, built newest first: a repeated fact stays only in the newest block,
    and extraction stops where older blocks could not fit even stripped (they would be dropped)."""
    seen: set[str] = set()
    blocks: list[list[_Line]] = []
    for item in reversed(items):
        if not item.content.strip():
            continue
        facts = extract_facts(item.content)
        label = _trim(" ".join(item.label.split()), 120)
        lines = [("head", f"**{label}** — {facts.position}" if label else facts.position)]
        for kind, found in (("claim", facts.claims), ("decision", facts.decisions), ("open", facts.questions)):
            for fact in found:
                if (k := _key(fact)) not in seen:
                    seen.add(k)
                    shown = "note" if kind == "claim" and not is_key_claim(fact) else kind
                    lines.append((shown, f"- {kind}: {fact}"))
        seen.add(_key(facts.position))
        blocks.append([(kind, text, len(text), count_text(text, model)) for kind, text in lines])
        floor = _size([blocks[0]] + [_kept(b, 1) for b in blocks[1:]])
        if floor[0] > max_chars or floor[1] > max_tokens:
            break
    return blocks[::-1]


def _clip(text: str, max_chars: int, max_tokens: int, model: str | None) -> str:
    """Longest word-boundary prefix + "…" within both caps (verified with the real tokenizer)."""
    if len(text) <= max_chars and count_text(text, model) <= max_tokens:
        return text
    cut = text[: max(0, max_chars - len(ELLIPSIS))]
    cut = truncate_to_tokens(cut, max(0, max_tokens - 1), model).rstrip("\ufffd")  # no split UTF-8
    if len(cut) < len(text) and not text[len(cut)].isspace():
        if (space := max(cut.rfind(" "), cut.rfind("\n"))) > len(cut) // 2:
            cut = cut[:space]
    while cut:
        out = (cut.rstrip(_TRAIL) or cut) + ELLIPSIS
        if len(out) <= max_chars and count_text(out, model) <= max_tokens:
            return out
        cut = cut[: len(cut) * 9 // 10] if len(cut) > 20 else cut[:-1]
    bare = truncate_to_tokens(text[:max_chars], max_tokens, model).rstrip("\ufffd")  # caps too small for "…"
    return bare if count_text(bare, model) <= max_tokens else ""


def _fit(blocks: list[list[_Line]], previous: str, prev_tokens: int, max_chars: int, max_tokens: int,
         model: str | None) -> str:
    """Give way in order: notes (oldest items first), older items' claims/questions, older
    blocks, `previous`, then truncate."""
    state = [WHOLE] * len(blocks)
    earlier: list[_Line] = [("", EARLIER, len(EARLIER), count_text(EARLIER, model)),
                            ("", previous, len(previous), prev_tokens)] if previous else []

    def fits() -> bool:
        chars, tokens = _size(([earlier] if earlier else []) + [k for b, s in zip(blocks, state) if (k := _kept(b, s))])
        return chars <= max_chars and tokens <= max_tokens

    steps = [(i, 2) for i in range(len(blocks))]
    steps += [(i, 1) for i in range(len(blocks) - 1)] + [(i, 0) for i in range(len(blocks) - 1)]
    for i, s in steps:
        if fits():
            break
        state[i] = s
    if earlier and not fits():
        chars, tokens = _size([k for b, s in zip(blocks, state) if (k := _kept(b, s))])
        gap = (2, 1) if chars else (0, 0)
        room = (max_chars - chars - gap[0] - len(EARLIER) - 1, max_tokens - tokens - gap[1] - earlier[0][3] - 1)
        short = _clip(previous, *room, model) if min(r - m for r, m in zip(room, _MIN_PREVIOUS)) >= 0 else ""
        earlier = [earlier[0], ("", short, len(short), count_text(short, model))] if short else []
    sections = [f"{EARLIER}\n{earlier[1][1]}"] if earlier else []
    sections += ["\n".join(ln[1] for ln in _kept(b, s)) for b, s in zip(blocks, state) if s]
    text = "\n\n".join(sections)
    return text if fits() else _clip(text, max_chars, max_tokens, model)


def summarize_rule_based(items: Sequence[SourceItem], *, max_chars: int, max_tokens: int,
                         model: str | None = None, previous: str | None = None) -> str:
    """Extractive markdown summary of `items` (oldest first), within `max_chars` and `max_tokens`.

    Tokens are counted once per line and summed; the sum can be off by a token or two at line
    joins, so the result is re-counted and, rarely, refit under a tighter token budget.
    """
    if max_chars <= 0 or max_tokens <= 0:
        return ""
    blocks = _build(items, max_chars, max_tokens, model)
    prev = (previous or "").strip()
    prev_tokens = count_text(prev, model)
    budget, text = max_tokens, ""
    for _ in range(3):
        text = _fit(blocks, prev, prev_tokens, max_chars, budget, model)
        real = count_text(text, model)
        if real <= max_tokens and len(text) <= max_chars:
            return text
        budget = max(1, budget - (real - max_tokens) - 2)
    return _clip(text, max_chars, max_tokens, model)

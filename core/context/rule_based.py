"""Rule-based (extractive) condensation of an agent's older debate history.

Offline and deterministic: no model call, so it costs nothing, runs in tests, and is the
fallback when an LLM summary fails. It keeps what a debater needs to stay consistent --
each text's position, its numeric claims, its decisions and its open questions -- and the
result always fits the caller's character *and* token caps.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.tokens import count_text, truncate_to_tokens

FACT_CHARS = 200  # one fact, trimmed at a word boundary
MAX_PER_KIND = 6  # per item and kind: a summary, not a copy
ELLIPSIS = "…"
EARLIER = "### Earlier"
_MIN_PREVIOUS = (24, 8)  # (chars, tokens) below which a shortened `previous` is useless
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


# Heading / label words -> section kind. Checked in this order ("Decision summary" is decisions).
_SECTIONS = (  # matched against lowercased text: re.I is several times slower
    ("open", re.compile(r"\b(?:open questions?|questions?|risks?|unknowns?|unresolved|open issues?)\b")),
    ("decision", re.compile(r"\b(?:decisions?|decided|choices)\b")),
    ("position", re.compile(r"\b(?:position|summary|proposal|recommendations?|stance|thesis|verdict|tl;?dr"
                            r"|bottom line|conclusions?)\b")),
)
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(?:\s+(.*?))?\s*#*\s*$")
_RULE = re.compile(r"^\s*([-*_])(?:\s*\1){2,}\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_TABLE_SEP = re.compile(r"^[\s|:\-]+$")
_BOLD_ONLY = re.compile(r"^\*\*([^*]+)\*\*\s*$")
_LABEL = re.compile(r"^([A-Za-z][\w;/&'()-]*(?:\s[\w;/&'()-]+){0,3})\s*:\s*(.*)$")  # "Key risks: ..."
_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\n]*\)")
_SPLIT = re.compile(r"(?<=[.!?])\s+")
_ABBREV = re.compile(r"(?:\b(?:e\.g|i\.e|vs|etc|approx|cf|incl)\.)$", re.I)
# A number with a unit: "50 ms", "10k", "85%", "$200", "3 replicas" (but not "p99", "Round 2 we").
_NUM = re.compile(r"(?<![\w.])(?:[$€£]\s?\d|\d[\d,]*(?:\.\d+)?(?:\s?%|[A-Za-zµ]+\b|\s([A-Za-zµ/]+)))")
_STOP = frozenset(
    "a an the and or of to in on at is are was were be we it its for with by as from that this these those "
    "then than if but so not no more less into per each i you they our your their has have had will would "
    "can could should may might do does did also only which who when where why how what all any some via "
    "after before under over about up out".split()
)
_STRONG = re.compile(r"\b(?:we will|we'll|decided|decide to|adopt(?:ed|ing)?|choose|chose|chosen|go with|opt for)\b")
_WEAK = re.compile(r"\b(?:use|must)\b")


def _section_of(title: str) -> str | None:
    low = title.lower()
    return next((kind for kind, rx in _SECTIONS if rx.search(low)), None)


def _clean(text: str) -> str:
    """Inline markdown off, whitespace collapsed: facts are compared and shown as plain text."""
    text = _LINK.sub(r"\1", text).replace("**", "").replace("`", "")
    return " ".join(text.split())


def _trim(text: str, limit: int = FACT_CHARS) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return (cut.rstrip(_TRAIL) or cut) + ELLIPSIS


def _key(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".!;: ")


def _sentences(text: str) -> list[str]:
    out: list[str] = []
    for piece in _SPLIT.split(text):
        if out and _ABBREV.search(out[-1]):
            out[-1] += " " + piece
        else:
            out.append(piece)
    return out


def _blocks(content: str) -> list[tuple[str, str]]:
    """Markdown -> (kind, raw text) blocks: heading, para, bullet, row. Code is skipped."""
    out: list[tuple[str, str]] = []
    buf: list[str] = []
    kind, fence = "", False

    def flush() -> None:
        if buf:
            out.append((kind, " ".join(buf)))
            buf.clear()

    for line in content.splitlines():
        if _FENCE.match(line):
            flush()
            fence = not fence
            continue
        stripped = line.strip()
        if stripped.startswith(">"):
            line = stripped = stripped.lstrip("> ")
        if fence or not stripped or _RULE.match(line):
            flush()
            continue
        if (m := _HEADING.match(line)) or stripped.startswith("|"):
            flush()
            if m:
                out.append(("heading", m.group(1) or ""))
            elif not _TABLE_SEP.match(stripped):
                out.append(("row", " | ".join(c.strip() for c in stripped.strip("|").split("|") if c.strip())))
            continue
        if m := _BULLET.match(line):
            flush()
            kind = "bullet"
            buf.append(m.group(1))
        elif kind == "bullet" and buf and line[:1].isspace():
            buf.append(stripped)  # indented continuation of the bullet
        else:
            if kind != "para":
                flush()
                kind = "para"
            buf.append(stripped)
    flush()
    return out


def _units(content: str) -> tuple[list[tuple[str, str, bool]], str]:
    """(section, sentence, prose?) units in reading order, and the first heading's title."""
    units: list[tuple[str, str, bool]] = []
    section, title = "other", ""
    for kind, raw in _blocks(content):
        text = _clean(raw)
        label = _LABEL.match(text)
        here = section
        if kind == "heading" or (kind == "para" and _BOLD_ONLY.match(raw.strip())):
            title = title or text
            if label and (labelled := _section_of(label.group(1))):  # "## Proposal: use Redis"
                section = labelled
                if label.group(2):
                    units.append((section, label.group(2), True))
            else:
                section = _section_of(text) or "other"
            continue
        if label and (labelled := _section_of(label.group(1))):  # "**Verdict:** ...", "- Risk: ..."
            here, text = labelled, label.group(2)
            if kind == "para":
                section = labelled
        pieces = _sentences(text) if kind == "para" else [text]
        units.extend((here, p, kind != "row") for p in pieces if p)
    return units, title


def _is_question(text: str) -> bool:
    return text.rstrip(" )\"'*_").endswith("?")


def _has_number(text: str) -> bool:
    return any(m.group(1) is None or m.group(1).lower() not in _STOP for m in _NUM.finditer(text))


def _kind(section: str, text: str) -> str | None:
    """Section beats wording; explicit decisions beat numbers, which beat a bare "use"/"must"."""
    if section in ("open", "decision"):
        return section
    if _is_question(text):
        return "open"
    low = text.lower()
    if _STRONG.search(low):
        return "decision"
    if _has_number(text):
        return "claim"
    return "decision" if _WEAK.search(low) else None


def extract_facts(content: str) -> Facts:
    """Position, numeric claims, decisions and open questions of one markdown text."""
    units, title = _units(content)
    firsts = (
        (i for i, (sec, _, _) in enumerate(units) if sec == "position"),
        (i for i, (_, text, prose) in enumerate(units) if prose and len(text.split()) >= 3),
        (i for i, (_, _, prose) in enumerate(units) if prose),
    )
    pos_i = next((i for gen in firsts for i in gen), None)
    position = _trim(units[pos_i][1] if pos_i is not None else (title or " ".join(content.split())))
    seen = {_key(position)}
    found: dict[str, list[str]] = {"claim": [], "decision": [], "open": []}
    for i, (section, text, _) in enumerate(units):
        kind = None if i == pos_i else _kind(section, text)
        if kind is None or len(found[kind]) >= MAX_PER_KIND:
            continue
        fact = _trim(text)
        if (k := _key(fact)) not in seen:
            seen.add(k)
            found[kind].append(fact)
    return Facts(position, found["claim"], found["decision"], found["open"])


# A rendered line: (kind, text, chars, tokens); kind is head/claim/decision/open.
_Line = tuple[str, str, int, int]


def _build(items: Sequence[SourceItem], model: str | None) -> list[list[_Line]]:
    """One block per non-blank item, oldest first; a fact repeated later is kept only in the newest."""
    extracted = [(it, extract_facts(it.content)) for it in items if it.content.strip()]
    seen: set[str] = set()
    blocks: list[list[_Line]] = []
    for item, facts in reversed(extracted):
        label = _trim(" ".join(item.label.split()), 120)
        lines = [("head", f"**{label}** — {facts.position}" if label else facts.position)]
        for kind, found in (("claim", facts.claims), ("decision", facts.decisions), ("open", facts.questions)):
            for fact in found:
                if (k := _key(fact)) not in seen:
                    seen.add(k)
                    lines.append((kind, f"- {kind}: {fact}"))
        seen.add(_key(facts.position))
        blocks.append([(kind, text, len(text), count_text(text, model)) for kind, text in lines])
    return blocks[::-1]


def _kept(block: list[_Line], state: int) -> list[_Line]:
    """State 2 = whole block, 1 = without claims and open questions, 0 = dropped."""
    return [ln for ln in block if state == 2 or ln[0] in ("head", "decision")] if state else []


def _size(sections: list[tuple[int, int, int]]) -> tuple[int, int]:
    """(chars, estimated tokens) of sections given as (chars, tokens, lines); joins cost 1 token."""
    chars = sum(c + n - 1 for c, _, n in sections) + 2 * max(0, len(sections) - 1)
    tokens = sum(t + n - 1 for _, t, n in sections) + max(0, len(sections) - 1)
    return chars, tokens


def _clip(text: str, max_chars: int, max_tokens: int, model: str | None) -> str:
    """Longest word-boundary prefix + "…" within both caps (verified with the real tokenizer)."""
    if len(text) <= max_chars and count_text(text, model) <= max_tokens:
        return text
    cut = text[: max(0, max_chars - len(ELLIPSIS))]
    cut = truncate_to_tokens(cut, max(0, max_tokens - 1), model).rstrip("\ufffd")
    if len(cut) < len(text) and not text[len(cut)].isspace():
        space = max(cut.rfind(" "), cut.rfind("\n"))
        if space > len(cut) // 2:
            cut = cut[:space]
    while cut:
        out = (cut.rstrip(_TRAIL) or cut) + ELLIPSIS
        if len(out) <= max_chars and count_text(out, model) <= max_tokens:
            return out
        cut = cut[: len(cut) * 9 // 10] if len(cut) > 20 else cut[:-1]
    return ""


def _fit(blocks: list[list[_Line]], previous: str, prev_tokens: int, max_chars: int, max_tokens: int,
         model: str | None) -> str:
    """Give way in order: older items' claims/questions, older blocks, `previous`, then truncate."""
    state = [2] * len(blocks)
    head_tokens = count_text(EARLIER, model)

    def size(with_previous: bool) -> tuple[int, int]:
        secs = [(len(EARLIER) + 1 + len(previous), head_tokens + 1 + prev_tokens, 1)] if with_previous else []
        for block, s in zip(blocks, state):
            if kept := _kept(block, s):
                secs.append((sum(ln[2] for ln in kept), sum(ln[3] for ln in kept), len(kept)))
        return _size(secs)

    def fits(chars_tokens: tuple[int, int]) -> bool:
        return chars_tokens[0] <= max_chars and chars_tokens[1] <= max_tokens

    steps = [(i, 1) for i in range(len(blocks) - 1)] + [(i, 0) for i in range(len(blocks) - 1)]
    for i, s in steps:
        if fits(size(bool(previous))):
            break
        state[i] = s
    if previous and not fits(size(True)):
        chars, tokens = size(False)
        extra = 2 if chars else 0
        room = (max_chars - chars - extra - len(EARLIER) - 1, max_tokens - tokens - bool(extra) - head_tokens - 1)
        ok = room[0] >= _MIN_PREVIOUS[0] and room[1] >= _MIN_PREVIOUS[1]
        previous = _clip(previous, room[0], room[1], model) if ok else ""
    sections = [f"{EARLIER}\n{previous}"] if previous else []
    sections += ["\n".join(ln[1] for ln in _kept(b, s)) for b, s in zip(blocks, state) if s]
    text = "\n\n".join(sections)
    return text if fits(size(bool(previous))) else _clip(text, max_chars, max_tokens, model)


def summarize_rule_based(items: Sequence[SourceItem], *, max_chars: int, max_tokens: int,
                         model: str | None = None, previous: str | None = None) -> str:
    """Extractive markdown summary of `items` (oldest first), within `max_chars` and `max_tokens`.

    Token cost is counted once per line and summed; the sum can be off by a token or two
    at line joins, so the result is re-counted and, rarely, refit with a tighter budget.
    """
    if max_chars <= 0 or max_tokens <= 0:
        return ""
    blocks = _build(items, model)
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

"""Text work of the demo provider: the problem's topic and words, and the extractive summaries
(headline and first sentence of each block; a reduce step's partial summaries merged)."""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Sequence

from .base import Message
from .demo_phrases import phrase_banks


def stable_seed(*parts: object) -> int:
    """A stable seed: `hash()` is salted per process, sha256 is not."""
    joined = "\x1f".join("" if p is None else str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(joined.encode("utf-8")).digest()[:8], "big")


IMPERATIVE = re.compile(
    r"^(?:please\s+)?(?:design|build|create|implement|propose|develop|plan|write|architect|pick|choose|select"
    r"|compare|evaluate|recommend|review|suggest|outline|define)\s+(?=\S)", re.I
)
CHOICE = re.compile(r"^(?:please\s+)?(?:pick|choose|select|decide)\s+(?:between|among)\s+(?=\S)", re.I)
"""`Choose between Kafka and NATS`: the topic is the choice ("my stance on the choice between …")."""
REPEAT = re.compile(r"\b(\w+)(?: +\1\b)+", re.I)
QUESTION = re.compile(r"^(?:how|what|which|why|should|can|could|would|is|are|do|does)\b", re.I)


def problem_topic(problem: str) -> str:
    """The problem's first non-empty line, without markdown, at most ~80 characters."""
    for line in problem.splitlines():
        line = line.strip().lstrip("#>*- ").strip().rstrip(".:;")
        line = CHOICE.sub("the choice between ", line)
        line = IMPERATIVE.sub("", line) or line  # "Design a cache" -> "a cache"
        if line:
            line = line if len(line) <= 80 else line[:80].rsplit(" ", 1)[0] + "…"
            # A question cannot stand in for a noun phrase ("… can be solved"): quote it.
            return f'the question "{line}"' if QUESTION.match(line) or line.endswith("?") else line
    return "the problem"


def without_repeats(text: str) -> str:
    """A word said twice in a row once: a filled phrase can put a problem's word beside the same
    word in the phrase ("Fresher {noun2} data" with the noun "data")."""
    return REPEAT.sub(r"\1", text)


def problem_nouns(problem: str) -> list[str]:
    """Up to three distinctive words of the problem, to make replies feel on-topic."""
    stopwords = phrase_banks().stopwords
    found: list[str] = []
    asked = IMPERATIVE.sub("", CHOICE.sub("", problem.strip()))  # "Pick a queue": the verb is no noun
    for word in re.findall(r"[A-Za-z][A-Za-z-]{3,}", asked):
        w = word.lower().strip("-")
        if w not in stopwords and w not in found:
            found.append(w)
        if len(found) == 3:
            break
    for filler in ("data", "service", "request"):
        if len(found) < 3 and filler not in found:
            found.append(filler)
    return found


def last_user(messages: Sequence[Message]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            return m.get("content", "")
    return ""


def bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {i}" for i in items)


def first_sentence(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    m = re.search(r"(?<=[.!?])\s", text)
    sentence = text[: m.start()] if m else text
    return sentence if len(sentence) <= 160 else sentence[:159].rsplit(" ", 1)[0] + "…"


HEADING = re.compile(r"^\s*(#{1,6}\s+(?P<h>.+?)\s*#*|\*\*(?P<b>[^*]{1,80})\*\*:?|\[(?P<s>[^\]]{1,80})\]:?)\s*$")
LABELLED = re.compile(r"^\s*(?P<l>[A-Za-z][\w .()/,-]{0,60}):\s+(?P<rest>\S.*)$")
MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
TURN_HEAD = re.compile(r"^### Turn \d+ · (.+?) \(", re.M)


PART = re.compile(r"^### (?:Summary of part \d+ of \d+\b.*|Partial summary \d+)$", re.M)
"""The heading of each partial summary in a reduce step (`core.context.summarize.reduce_parts`;
the second form is what earlier versions sent)."""


MERGE_RATIO = 3.5
"""A merge stops taking lines that would make it compress more than this (zlib): past it, a line
is mostly what is already kept (the same point in a later round). Well under
`core.context.summarize.COMPRESSION_LIMIT`, which rejects a summary that loops."""


def merge_parts(material: str, limit: int) -> str:
    """A reduce step: the partial summaries are summaries already, so their lines are the content
    to keep. Lines are taken a round at a time across the parts (every part's first line, then
    every part's second line, …) so each part is represented, repetition is skipped (a line
    that would make the whole compress past `MERGE_RATIO`), and they are written in their
    original order, under `limit` characters. Within a round the newest parts come first, so a
    point made again keeps its latest form. (Treating each partial summary as one block kept a
    single line of it: a long debate's summary collapsed to a line.)"""
    parts = [[ln.strip() for ln in chunk.strip().splitlines() if ln.strip() and not ln.strip().startswith("- … (")]
             for chunk in PART.split(material)[1:]]
    chosen: set[tuple[int, int]] = set()
    kept = b""
    used = 0
    for j in range(max((len(lines) for lines in parts), default=0)):
        for i in reversed(range(len(parts))):  # newest first: a point made again keeps its latest form
            lines = parts[i]
            if j >= len(lines):
                continue
            item = as_item(lines[j])
            if used + len(item) + 1 > limit:
                continue
            data = kept + b"\n" + item.encode("utf-8")
            if len(data) > 200 and len(data) / len(zlib.compress(data, 9)) > MERGE_RATIO:
                continue  # repetition
            chosen.add((i, j))
            kept, used = data, used + len(item) + 1
    return "\n".join(as_item(lines[j]) for i, lines in enumerate(parts) for j in range(len(lines))
                     if (i, j) in chosen)


def as_item(line: str) -> str:
    return line if MARKER.match(line) or HEADING.match(line) else f"- {line}"


def text_blocks(material: str) -> list[tuple[str, str]]:
    """(title, headline) per block; blocks start at headings, labelled lines and blank lines."""
    blocks: list[tuple[str, list[str]]] = []
    gap = True
    for raw in material.splitlines():
        if not raw.strip():
            gap = True
            continue
        heading = HEADING.match(raw)
        item = MARKER.match(raw)
        labelled = LABELLED.match(raw) if not heading and not item else None
        # A list item is a sentence of its own: end it so items do not run together.
        line = MARKER.sub("", raw).strip()
        if item and not line.endswith((".", "!", "?", ":")):
            line += "."
        if heading:
            blocks.append((heading.group("h") or heading.group("b") or heading.group("s") or "", []))
        elif labelled and len(labelled.group("l").split()) <= 6:
            blocks.append((labelled.group("l").strip(), [labelled.group("rest")]))
        elif gap and (not blocks or blocks[-1][1]):
            blocks.append(("", [line]))
        else:
            blocks[-1][1].append(line)
        gap = False
    out = [(t.strip(), first_sentence(" ".join(b))) for t, b in blocks]
    return [(t, s) for t, s in out if t or s]

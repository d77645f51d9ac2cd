"""The demo provider's answer to a person in the debate (`--human`): find the latest words of a
person in the view and open the reply by quoting them, so someone who takes a seat in an offline
demo sees the agents respond to what they wrote."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from .base import Message

_HEADING = re.compile(r"^#{2,3} .*$", re.M)
_TAG = re.compile(r"</?[a-z_]+>")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_POINTER = "in your debate history above)"
"""How a task of view layout 2 points at an item its history holds instead of quoting it again."""


def person_words(messages: Sequence[Message], people: Sequence[str]) -> tuple[str, str] | None:
    """(name, text) of the newest thing a person wrote that the view shows: a history item, a
    quoted critique or answer under a heading naming them, or the proposal a critique task quotes
    (`by **Name**`); None when the view holds nothing of theirs."""
    for m in reversed(messages):
        content = m.get("content", "")
        found: list[tuple[int, str, str]] = []
        for name in people:
            quoted = re.search(rf"by \*\*{re.escape(name)}\*\*.*?<proposal>\s*(.*?)\s*</proposal>", content, re.S)
            if quoted:
                found.append((quoted.start(), name, quoted.group(1)))
            for head in _HEADING.finditer(content):
                if re.search(rf"(?:·|from|by|###) {re.escape(name)} \(", head.group(0)):
                    rest = content[head.end():]
                    nxt = _HEADING.search(rest)
                    body = _TAG.split(rest[: nxt.start()] if nxt else rest)[0]
                    if not body.strip().endswith(_POINTER):  # the words themselves are in the history
                        found.append((head.start(), name, body))
        if found:
            _, name, text = max(found)
            if text.strip():
                return name, text.strip()
    return None


def quote_of(text: str, max_words: int = 14) -> str:
    """A short quote: the first sentence of at least four words, without headings or markdown, cut to
    `max_words`; each line ends a sentence (a list item is one)."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    plain = re.sub(r"[*_`>]", "", "\n".join(lines) or text)
    sentences = [s.strip(" -•") for ln in plain.splitlines() for s in _SENTENCE.split(" ".join(ln.split()))]
    pick = next((s for s in sentences if len(s.split()) >= 4), sentences[0] if sentences else "")
    words = pick.split()
    return " ".join(words[:max_words]).rstrip(".,;:!?") + ("…" if len(words) > max_words else "")


REACTIONS = (
    "I agree with the direction, and from the {role} side what decides it is {lens}.",
    "I see it differently: from the {role} side what decides it is {lens}, and that needs a number before "
    "we commit.",
    "That is a fair point, and I build on it below; I would still test it against {lens}.",
    "I take that seriously. It changes my answer where it touches {lens}; the rest I keep.",
)


def answer_person(messages: Sequence[Message], people: Sequence[str], role: str, lens: str,
                  rng: random.Random) -> str | None:
    """The opening paragraph that answers a person (None when the view holds nothing of theirs)."""
    found = person_words(messages, people)
    if found is None:
        return None
    name, text = found
    quote = quote_of(text)
    reaction = rng.choice(REACTIONS).format(role=role, lens=lens)
    return f'**{name}**, you wrote "{quote}". {reaction}' if quote else f"**{name}**, {reaction}"

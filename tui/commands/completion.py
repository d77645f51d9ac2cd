"""Completion on the command line: command names, then each argument's vocabulary (agents, themes)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.suggester import Suggester

from .registry import COMMANDS, lookup


@dataclass
class Vocabulary:
    """What arguments can complete to, read when completing (agents appear mid-debate)."""

    agents: Callable[[], list[str]]
    themes: Callable[[], list[str]]

    def words(self, kind: str) -> list[str]:
        if kind == "theme":
            return self.themes()
        words = list(self.agents())
        if kind == "agent+all":
            words.append("all")
        elif kind == "agent+judge":
            words.append("judge")
        return words


def complete(value: str, vocab: Vocabulary) -> str | None:
    """The full line `value` most likely completes to, or None."""
    if not value.startswith("/"):
        return None
    head, sep, rest = value[1:].partition(" ")
    if not sep:
        for name in COMMANDS:
            if name.startswith(head.lower()) and name != head.lower():
                return "/" + name
        return None
    spec = lookup(head)
    if spec is None or not spec.completes:
        return None
    parts = rest.split(" ")
    index = len(parts) - 1
    if index >= len(spec.completes):
        return None
    partial_word = parts[-1].lower()
    if not partial_word:
        return None
    for word in vocab.words(spec.completes[index]):
        if word.lower().startswith(partial_word) and word.lower() != partial_word:
            return value + word[len(partial_word):]
    return None


class CommandSuggester(Suggester):
    """Input suggester for the command line: command names, agents, themes."""

    def __init__(self, vocab: Vocabulary) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.vocab = vocab

    async def get_suggestion(self, value: str) -> str | None:
        return complete(value, self.vocab)

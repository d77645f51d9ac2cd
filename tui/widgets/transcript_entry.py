"""One item of a transcript, and the parts its lines are made of.

A transcript renders only the lines a pane shows (`transcript.Transcript`), so an entry is
cut into parts that can be rendered, or only counted, one by one: a "block" entry is its
title, its frozen paragraphs (`segments`, each rendered at most once) and the live tail
that is still growing; a note or a history line is one part. A part that was never
rendered has an estimated height (`markdown_blocks.estimate_lines`); rendering it replaces
the estimate with the true count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.strip import Strip

from .markdown_blocks import cuts

HEAD = -1
"""The title of a block entry, or the whole of a note or a history entry."""
TAIL = -2
"""The unfinished text of a block entry, after its segments."""

Rendered = tuple[list[Strip], bool]
"""A part's lines, and whether Rich puts a blank line after it when another block follows."""


@dataclass
class GrownTail:
    """The live tail as last rendered, when it was one plain paragraph whose lines are known
    to hold its words in order: the lines before the last one stay as the paragraph grows
    (word wrapping is greedy), so only the text from the last line on is rendered again."""

    text: str
    width: int
    kept: list[Strip]
    """The rendered lines but the last."""
    last_line: int
    """Where the last line starts in `text`."""


@dataclass
class Entry:
    """One item of the transcript."""

    key: str
    title: str
    text: str = ""
    kind: str = "block"
    """"block": markdown under a title; "history": one line, full plain text when expanded;
    "note": a dim line of text."""
    state: str = "live"
    """live, done, failed or solution (only colours the title)."""
    expanded: bool = False
    brief: str | None = None
    """What a collapsed history line shows after its title (None: the text's first line)."""
    segments: list[str] = field(default_factory=list)
    """Frozen leading blocks of `text` ("block" entries), each rendered once."""
    frozen: int = 0
    """How many characters of `text` the segments hold."""
    version: int = 0
    rendered: dict[int, Rendered] = field(default_factory=dict, repr=False)
    """Part (HEAD, TAIL or a segment's index) → its lines at the transcript's width and theme."""
    estimates: dict[int, int] = field(default_factory=dict, repr=False)
    """Segment index → its estimated height (without the blank line after it)."""
    nonempty: list[bool] = field(default_factory=list, repr=False)
    """Per segment: whether it renders to any line (a segment of blank lines does not)."""
    grown: GrownTail | None = field(default=None, repr=False)

    @property
    def tail(self) -> str:
        return self.text[self.frozen:]

    def parts(self) -> list[int]:
        """The parts of this entry, top to bottom."""
        if self.kind != "block":
            return [HEAD]
        return [HEAD, *range(len(self.segments)), TAIL]

    def part_text(self, part: int) -> str:
        return self.tail if part == TAIL else self.segments[part]

    def freeze(self) -> None:
        """Move the finished paragraphs of the tail into segments."""
        if self.kind != "block":
            return
        parts = cuts(self.tail, self.text[:self.frozen])
        for part in parts[:-1]:
            self.segments.append(part)
            self.frozen += len(part)

    def thaw(self) -> None:
        self.segments.clear()
        self.nonempty.clear()
        self.frozen = 0
        self.forget_rendering()

    def changed(self) -> None:
        """The title, the state or the tail changed: the segments' lines still hold."""
        self.version += 1
        self.rendered.pop(HEAD, None)
        self.rendered.pop(TAIL, None)

    def forget_rendering(self) -> None:
        """The width or the theme changed: every part is rendered (or estimated) again."""
        self.rendered.clear()
        self.estimates.clear()
        self.grown = None

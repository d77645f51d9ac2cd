"""`.gitignore` matching that stays linear whatever the patterns say.

`pathspec` turns each `*` of a pattern into the regular expression `[^/]*`; a line such as
`*a*a*a*a*a*a*a*a*a*a*a*a*a*b` then makes Python's backtracking engine try every way of
splitting a file name among the stars before it fails: 30 `a`s in one name took 18 s, 34
took minutes, and the scan hung without a word. The rules are git's still (pathspec parses
each line and builds the rest of the expression); only a segment's stars are written
differently. Between the first star and the last one, each piece of fixed width is matched
at its earliest place and kept there (an atomic group: the engine never comes back to try a
later place). That is exact: a later place leaves less of the name to the pieces after it, so
if a match exists, one exists with every piece at its earliest place (the glob algorithm of
git's `wildmatch` and of `fnmatch.translate` since Python 3.9). The last star keeps ordinary
backtracking, which is linear, so one name costs at most pieces × its length.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import pathspec
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

_NEGATED = re.compile(r"(?<!\\)\[\^")


def _split_stars(glob: str) -> list[str]:
    """The pieces of one segment's glob between its stars (`a*b?*[*]c` → `a`, `b?`, `[*]c`);
    a star inside brackets or escaped is a character, not a star."""
    pieces, current, i, end = [], "", 0, len(glob)
    while i < end:
        char = glob[i]
        if char == "\\" and i + 1 < end:
            current += glob[i:i + 2]
            i += 2
            continue
        if char == "[":
            j = i + 1
            if j < end and glob[j] in "!^":
                j += 1
            if j < end and glob[j] == "]":
                j += 1
            while j < end and glob[j] != "]":
                j += 1
            if j < end:  # a whole bracket expression; an unclosed `[` is left to pathspec
                current += glob[i:j + 1]
                i = j + 1
                continue
        if char == "*":
            pieces.append(current)
            current = ""
        else:
            current += char
        i += 1
    pieces.append(current)
    return pieces


class LinearGitIgnorePattern(GitIgnoreSpecPattern):
    """pathspec's gitignore pattern with each segment's stars matched as the module doc says."""

    @staticmethod
    def _translate_segment_glob(pattern: str, range_error: Literal["literal", "raise"]) -> str:
        translate = GitIgnoreSpecPattern._translate_segment_glob
        pieces = _split_stars(pattern)
        if len(pieces) <= 2:  # at most one star: backtracking over it is already linear
            return translate(pattern, range_error)
        # A bracket never matches `/` (as in git): a piece then never reaches into the next segment.
        first, *middle, last = (_NEGATED.sub("[^/", translate(p, range_error)) if p else "" for p in pieces)
        inner = "".join(f"(?>[^/]*?{m})" for m in middle if m)
        return f"{first}{inner}[^/]*{last}"


def gitignore_spec(lines: list[str]) -> pathspec.GitIgnoreSpec:
    """A `.gitignore` file's lines as a spec whose matching cannot backtrack catastrophically."""
    return pathspec.GitIgnoreSpec.from_lines(lines, LinearGitIgnorePattern)


class Ignores:
    """The `.gitignore` files met on the way down, each matching paths relative to its folder."""

    def __init__(self) -> None:
        self.specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []

    def load(self, folder: Path, rel: str) -> None:
        gi = folder / ".gitignore"
        try:
            if gi.is_file() and not gi.is_symlink() and gi.stat().st_size < 1 << 20:
                lines = gi.read_text("utf-8", errors="replace").splitlines()
                self.specs.append((rel, gitignore_spec(lines)))
        except OSError:
            pass

    def ignored(self, rel: str, is_dir: bool) -> bool:
        for base, spec in self.specs:
            if base and not rel.startswith(base + "/"):
                continue
            sub = rel[len(base) + 1:] if base else rel
            if spec.match_file(sub + "/" if is_dir else sub):
                return True
        return False

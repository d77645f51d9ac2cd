"""`.gitignore` patterns written to make a backtracking matcher hang, and a scan long enough that
the start must say where it is."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pathspec
import pytest

from moot.core.tools.ignore import gitignore_spec
from tests.conftest import LoopbackServer
from tests.grounding_helpers import call, first_turn_calls, is_proposal, make_refs, run, tool_messages

BACKTRACKING = "*a*a*a*a*a*a*a*a*a*a*a*a*a*b"
"""Thirteen stars before a `b`: on a name of many `a`s and no `b`, every split of the name among
the stars is tried before the match fails (34 `a`s took minutes)."""


@pytest.mark.timeout(60)  # a hang guard: before the fix this scan did not end for hours
def test_a_backtracking_gitignore_line_neither_hangs_the_start_nor_changes_what_is_ignored(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    (refs / ".gitignore").write_text(f"build/\n*.log\n{BACKTRACKING}\n")
    banana = "a" * 40
    (refs / "docs" / f"{banana}.md").write_text("Notes from the banana-shaped outage review, kept for the plan.\n")
    (refs / "docs" / f"{banana}b").write_text("A scratch file the pattern ignores, as git would.\n")
    script = first_turn_calls(call("list_files", path="docs"))
    with LoopbackServer(tool_calls=script) as server:
        result = run(server.base_url, refs, "-a", "architect")
        follow = next(r for r in server.requests if is_proposal(r) and tool_messages(r))
    assert result.returncode == 0, result.stderr
    listing = tool_messages(follow)[0]["content"]
    assert f"docs/{banana}.md" in listing and f"{banana}b" not in listing and "docs/plan.md" in listing


def test_the_linear_matcher_agrees_with_pathspec_on_ordinary_patterns() -> None:
    patterns = ["*.log", "build/", "**/tmp/*x*y*", "a*b*c", "!keep*me*.log", "docs/**/*draft*notes*", "\\**star*",
                "*[*]*z", "x**y**z", "/top*mid*end", "*.py[co]", "**/node_modules/**", "*_test*.go", "src/*/gen*"]
    rnd = random.Random(7)
    alphabet = "abcdxyz._-/"
    names = {"".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 14))).strip("/") or "a" for _ in range(4000)}
    names |= {"docs/2024/a-draft-of-meeting-notes.md", "keep-me.log", "tmp/axby", "q/tmp/xxyy", "top1mid2end",
              "sub/top1mid2end", "web/node_modules/left-pad/index.js", "store_test_helpers.go", "src/api/generated.py"}
    for pattern, name in itertools.product(patterns, sorted(names)):
        expected = pathspec.GitIgnoreSpec.from_lines([pattern]).match_file(name)
        assert gitignore_spec([pattern]).match_file(name) == expected, (pattern, name)


def test_a_long_scan_says_where_it_is_on_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refs = make_refs(tmp_path)
    for n in range(12):
        (refs / "docs" / f"meeting-{n:02d}.md").write_text(f"Minutes of storage review {n}: the journal stays.\n")
    ticks = itertools.count(0.0, 1.0)  # a slow disk: every entry looked at takes a second
    monkeypatch.setattr("moot.core.tools.references._now", lambda: next(ticks))
    with LoopbackServer() as server:
        result = run(server.base_url, refs, "-a", "architect")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "scanning the references" in line]
    assert lines and lines[0].startswith("moot: scanning the references: ") and "entries looked at" in lines[0]
    assert len(lines) < 8  # every few seconds, not every entry

"""`moot.core.compare`: which contributions two agents are compared on, the words only one wrote, the
claims only one makes, and the votes or ranks of vote and council debates."""

from __future__ import annotations

from pathlib import Path

from moot.core.compare import compare, distinct_claims, word_diff
from moot.core.models.state import Solution, Tally

from .conftest import run_debate

A = ("Store links in one Postgres table. Cache the hottest codes in Redis for a day. "
     "Rate limit each account to ten links a minute.")
B = ("Store links in one Postgres table. Skip the cache until the p99 passes fifty milliseconds. "
     "Rate limit each account to ten links a minute.")


def test_word_diff_marks_only_the_words_one_side_wrote() -> None:
    left, right, shared = word_diff(A, B)
    assert "".join(p.text for p in left) == A and "".join(p.text for p in right) == B
    only_left = " ".join(p.text.strip() for p in left if p.only)
    only_right = " ".join(p.text.strip() for p in right if p.only)
    assert only_left == "Cache the hottest codes in Redis for a day."
    assert only_right == "Skip the cache until the p99 passes fifty milliseconds."
    assert 0.5 < shared < 0.8
    same, _, ratio = word_diff(A, A)
    assert not any(p.only for p in same) and ratio == 1.0


def test_distinct_claims_are_the_sentences_the_other_side_does_not_make() -> None:
    only_a, only_b = distinct_claims(A, B)
    assert only_a == ["Cache the hottest codes in Redis for a day."]
    assert only_b == ["Skip the cache until the p99 passes fifty milliseconds."]
    # A claim said a little differently is the same claim; list marks and headings do not count.
    reworded = "## Storage\n- Store all links in one Postgres table.\n- Rate limit each account to ten links per minute."
    assert distinct_claims(reworded, B)[0] == []


async def test_compare_sets_the_same_kinds_against_each_other(tmp_path: Path) -> None:
    state, _ = await run_debate(tmp_path, rounds=2, roles=["architect", "kiss", "security"])
    c = compare(state, "architect", "kiss")
    assert (c.step, c.steps) == (2, [1, 2])
    assert [p.title for p in c.pairings] == ["round 2 · proposal", "round 2 · refinement",
                                             "round 2 · what each said of the other"]
    proposal, refinement, critiques = c.pairings
    assert proposal.a.contribution is not None and proposal.a.contribution.agent_id == "architect"
    assert any(p.only for p in refinement.a.pieces) and any(p.only for p in refinement.b.pieces)
    assert refinement.a.claims and refinement.b.claims  # the demo's roles write different designs
    assert not critiques.diffed
    assert critiques.a.contribution is not None and critiques.a.contribution.target_agent_id == "kiss"
    assert compare(state, "architect", "kiss", 1).pairings[0].title == "round 1 · proposal"
    assert c.table == []  # a rounds debate has no votes


async def test_compare_in_a_conversation_takes_the_latest_messages(tmp_path: Path) -> None:
    state, _ = await run_debate(tmp_path, config={"debate": {"protocol": "conversation", "turns": 7}}, rounds=None,
                                roles=["architect", "kiss", "security"])
    c = compare(state, "architect", "security")
    assert c.step == 7 and c.steps == [3, 4, 6, 7]
    [p] = c.pairings
    assert p.title == "latest messages by turn 7 (turns 7 and 6)"
    assert compare(state, "architect", "security", 4).pairings[0].title == "latest messages by turn 4 (turns 4 and 3)"


async def test_votes_and_ranks_become_a_small_table(tmp_path: Path) -> None:
    state, _ = await run_debate(tmp_path, rounds=1, roles=["architect", "kiss", "security"])
    vote = Tally(answers={"architect": "42", "kiss": "42", "security": "41"}, counts={"42": 2, "41": 1},
                 winner="42", rule="majority of 3")
    state.final_solution = Solution(description="42", tally=vote)
    c = compare(state, "architect", "security")
    assert c.table_title == "vote: majority of 3"
    assert c.table == [["", "agent", "answer", "votes for it"], ["◀", "architect", "42", "2 ★"],
                       ["", "kiss", "42", "2 ★"], ["▶", "security", "41", "1"]]
    council = Tally(answers={"architect": None, "kiss": "B"}, ranks={"kiss": 1.5, "architect": 2.0}, kind="council")
    state.final_solution = Solution(description="B", tally=council)
    c = compare(state, "kiss", "architect")
    assert c.table == [["", "agent", "mean rank", "answer"], ["◀", "kiss", "1.50", "B"],
                       ["▶", "architect", "2.00", "(none parsed)"]]


async def test_council_and_vote_debates_compare_answers_and_show_the_tally(tmp_path: Path) -> None:
    state, _ = await run_debate(tmp_path / "council", config={"debate": {"protocol": "council"}}, rounds=None,
                                roles=["architect", "kiss", "security"])
    c = compare(state, "architect", "kiss")
    assert [p.title for p in c.pairings] == ["round 1 · answer", "round 1 · ranking"]
    assert c.table_title.startswith("council: mean position")
    assert [row[1] for row in c.table[1:]] == list(state.final_solution.tally.ranks)  # best first
    state, _ = await run_debate(tmp_path / "vote", config={"debate": {"protocol": "vote"}}, rounds=None,
                                roles=["architect", "kiss", "security"])
    c = compare(state, "architect", "kiss")
    assert [p.title for p in c.pairings] == ["round 1 · answer"]
    assert c.table[0] == ["", "agent", "answer", "votes for it"] and len(c.table) == 4

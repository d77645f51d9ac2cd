"""Rule-based summaries: what gets extracted, and that the caps hold for any input."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moot.core.context.rule_based import FACT_CHARS, SourceItem, extract_facts, summarize_rule_based
from moot.core.tokens import count_text

PROPOSAL = """## Position
We should put a write-through Redis cache in front of Postgres for the catalog service.

## Rationale
Today the catalog endpoint serves 10k QPS at peak and p99 latency is 180 ms. A cache hit
takes under 2 ms, so with an 85% hit rate p99 should drop under 50 ms.
Postgres CPU sits at 70% during peaks (e.g. during sales), which leaves little headroom.

```python
cache.set(key, value, ex=300)  # code is never a fact
```

## Key decisions
- Use Redis Cluster with 3 replicas per shard.
- Invalidate on write via the outbox table rather than TTL alone.
- We will keep a 5 minute TTL as a safety net.

## Open questions
- How do we warm the cache after a deploy?
- What is the memory budget per shard?
"""

CRITIQUE = """**Verdict:** The cache helps reads but the invalidation plan is fragile.

The outbox relay adds 200 ms of lag in our staging runs, so stale reads are likely. I'd rather
see the team adopt a versioned key scheme. Have you measured the hit rate on real traffic?

### Risks
- Thundering herd when a hot key expires.
"""

BIG = 10**9


def _item(i: int) -> SourceItem:
    """A proposal whose facts differ per round (identical facts would be deduplicated)."""
    body = (f"## Position\nRound {i}: shard the cache into {i + 2} pieces.\n\n"
            f"Throughput reaches {i}0k QPS with p99 under {i + 40} ms. Memory use is {i}0% of the budget.\n\n"
            f"## Decisions\n- Use {i + 2} replicas for option {i}.\n- We will revisit plan {i} later.\n\n"
            f"## Open questions\n- Is plan {i} cheap enough?\n")
    return SourceItem(f"Round {i} · your proposal", body)


def _check_caps(out: str, max_chars: int, max_tokens: int, model: str | None = None) -> None:
    assert len(out) <= max_chars
    assert count_text(out, model) <= max_tokens


def test_extracts_proposal_facts() -> None:
    f = extract_facts(PROPOSAL)
    assert f.position == "We should put a write-through Redis cache in front of Postgres for the catalog service."
    joined = " | ".join(f.claims)
    for needle in ("10k QPS", "under 50 ms", "70%"):
        assert needle in joined
    assert "(e.g. during sales), which" in joined  # no sentence split after an abbreviation
    assert f.decisions == [
        "Use Redis Cluster with 3 replicas per shard.",
        "Invalidate on write via the outbox table rather than TTL alone.",
        "We will keep a 5 minute TTL as a safety net.",
    ]
    assert f.questions == ["How do we warm the cache after a deploy?", "What is the memory budget per shard?"]
    assert not any("cache.set" in x for x in f.claims + f.decisions + f.questions)


def test_extracts_critique_facts() -> None:
    f = extract_facts(CRITIQUE)
    assert f.position == "The cache helps reads but the invalidation plan is fragile."
    assert f.claims == ["The outbox relay adds 200 ms of lag in our staging runs, so stale reads are likely."]
    assert f.decisions == ["I'd rather see the team adopt a versioned key scheme."]
    assert f.questions == ["Have you measured the hit rate on real traffic?", "Thundering herd when a hot key expires."]


PROJECT_CRITIQUE = """## Strengths
- The cache layer is a clean boundary; keep it.

## Weaknesses
- Invalidation through the outbox lags by 200 ms under load, so users read stale prices (severity: high).
- No story for a cold cache after deploys.

## Concrete improvements
1. Version the keys per catalog release.

## Verdict
Sound direction, but the invalidation path must be fixed before launch.
"""

PROJECT_REFINEMENT = """## Responses to critiques
- **Accepted**: versioned keys per catalog release replace outbox invalidation.
- **Rejected**: a second cache tier; one tier meets the 50 ms target.

## Position
Keep the single Redis tier and switch to versioned keys.

## Key decisions
- Versioned keys, because they need no invalidation fan-out.
"""


def test_project_prompt_structure() -> None:
    """The debate prompts ask for Position / Key decisions / Risks, and Verdict last in critiques."""
    c = extract_facts(PROJECT_CRITIQUE)
    assert c.position == "Sound direction, but the invalidation path must be fixed before launch."
    assert c.questions == [
        "Invalidation through the outbox lags by 200 ms under load, so users read stale prices (severity: high).",
        "No story for a cold cache after deploys.",
    ]
    r = extract_facts(PROJECT_REFINEMENT)
    assert r.position == "Keep the single Redis tier and switch to versioned keys."
    assert r.decisions == [
        "Accepted: versioned keys per catalog release replace outbox invalidation.",
        "Rejected: a second cache tier; one tier meets the 50 ms target.",
        "Versioned keys, because they need no invalidation fan-out.",
    ]


def test_position_falls_back_to_first_sentence_after_headings() -> None:
    f = extract_facts("# Caching plan for the API\n\nOk.\n\nShard the cache by tenant id. It has 4 shards.")
    assert f.position == "Shard the cache by tenant id."
    assert f.claims == ["It has 4 shards."]
    assert extract_facts("plain text with no punctuation at all").position == "plain text with no punctuation at all"
    assert extract_facts("---\n\n***").position  # nothing extractable, still something


def test_numbers_need_units() -> None:
    f = extract_facts("In 2024 and in round 2 we argued. Keep p99 sane. It costs $200 per month. Run 3x faster.")
    assert f.claims == ["It costs $200 per month.", "Run 3x faster."]


def test_dedupes_and_trims() -> None:
    long = "We will " + " ".join(f"word{i}" for i in range(200)) + "."
    f = extract_facts(f"Intro sentence here.\n\n## Decisions\n- Use 3 replicas.\n-   use 3   REPLICAS\n- {long}")
    assert f.decisions[0] == "Use 3 replicas."
    assert len(f.decisions) == 2
    trimmed = f.decisions[1]
    assert len(trimmed) <= FACT_CHARS and trimmed.endswith("…")
    assert trimmed[:-1].split()[-1] in long.split()  # cut at a word boundary


def test_summary_format_and_cross_item_dedupe() -> None:
    refinement = ("## Position\nKeep the Redis cache, add request coalescing.\n\n"
                  "## Decisions\n- Use Redis Cluster with 3 replicas per shard.")
    items = [SourceItem("Round 1 · your proposal", PROPOSAL),
             SourceItem("Round 1 · critique from performance", CRITIQUE),
             SourceItem("Round 2 · your refinement", refinement)]
    out = summarize_rule_based(items, max_chars=BIG, max_tokens=BIG)
    assert out.startswith("**Round 1 · your proposal** — We should put a write-through Redis cache")
    assert "\n- claim: Today the catalog endpoint serves 10k QPS" in out
    assert "\n- open: How do we warm the cache after a deploy?" in out
    assert "\n\n**Round 2 · your refinement** — Keep the Redis cache, add request coalescing." in out
    # a fact repeated later is kept only in the newest block
    assert out.count("Use Redis Cluster with 3 replicas per shard.") == 1
    assert out.endswith("- decision: Use Redis Cluster with 3 replicas per shard.")


def test_deterministic() -> None:
    items = [_item(i) for i in range(5)] + [SourceItem("c", CRITIQUE)]
    a = summarize_rule_based(items, max_chars=900, max_tokens=300, previous="Earlier: caching.")
    b = summarize_rule_based(list(items), max_chars=900, max_tokens=300, previous="Earlier: caching.")
    assert a == b


def test_oldest_claims_go_first_then_oldest_blocks() -> None:
    items = [_item(1), _item(2), _item(3)]
    full = summarize_rule_based(items, max_chars=BIG, max_tokens=BIG)
    out = summarize_rule_based(items, max_chars=len(full) - 10, max_tokens=BIG)
    blocks = out.split("\n\n")
    assert len(blocks) == 3
    assert "- claim:" not in blocks[0] and "- open:" not in blocks[0] and "- decision:" in blocks[0]
    assert blocks[2] == full.split("\n\n")[2]  # newest untouched

    cap = len(full.split("\n\n")[2]) + 60  # room for the newest block only
    tight = summarize_rule_based(items, max_chars=cap, max_tokens=BIG)
    assert tight == full.split("\n\n")[2]


def test_newest_kept_when_caps_are_tiny() -> None:
    items = [_item(i) for i in range(1, 30)]
    out = summarize_rule_based(items, max_chars=80, max_tokens=20)
    assert out.startswith("**Round 29 · your proposal**") and out.endswith("…")
    _check_caps(out, 80, 20)


@pytest.mark.parametrize(("max_chars", "max_tokens"), [(1, 1), (2, 1), (5, 2), (1, 100), (1000, 1)])
def test_absurdly_small_caps_still_say_something(max_chars: int, max_tokens: int) -> None:
    out = summarize_rule_based([_item(1)], max_chars=max_chars, max_tokens=max_tokens)
    _check_caps(out, max_chars, max_tokens)
    assert out


def test_previous_included_and_shortened_last() -> None:
    previous = "Round 0: the agent proposed an in-process LRU cache sized at 512 MB. " * 3
    items = [_item(1), _item(2)]
    out = summarize_rule_based(items, max_chars=BIG, max_tokens=BIG, previous=previous)
    assert out.startswith("### Earlier\n" + previous.strip() + "\n\n**Round 1")

    newest_only = len(summarize_rule_based(items[1:], max_chars=BIG, max_tokens=BIG))
    out = summarize_rule_based(items, max_chars=newest_only + 100, max_tokens=BIG, previous=previous)
    assert out.startswith("### Earlier\nRound 0: the agent") and "…" in out.split("\n\n")[0]
    assert "Round 1" not in out and "Round 2" in out
    _check_caps(out, newest_only + 100, BIG)


def test_empty_inputs() -> None:
    assert summarize_rule_based([], max_chars=100, max_tokens=50) == ""
    assert summarize_rule_based([SourceItem("x", "  \n ")], max_chars=100, max_tokens=50) == ""
    out = summarize_rule_based([SourceItem("x", "")], max_chars=100, max_tokens=50, previous="before")
    assert out == "### Earlier\nbefore"


@pytest.mark.parametrize("content", [
    "x" * 20000,
    "word " * 5000,
    "<|endoftext|>" * 500 + " we will use <|endoftext|> 10 ms?",
    "数据库缓存需要三个副本。延迟低于五十毫秒。" * 300,
    "🙂🚀" * 3000,
    "# only a heading",
    "|a|b|\n|-|-|\n|p99|50 ms|",
])
@pytest.mark.parametrize("model", [None, "gpt-4o"])
def test_edge_content_respects_caps(content: str, model: str | None) -> None:
    for max_chars, max_tokens in ((50, 16), (300, 40), (3000, 1000)):
        out = summarize_rule_based([SourceItem("label", content)], max_chars=max_chars,
                                   max_tokens=max_tokens, model=model, previous=content[:500])
        _check_caps(out, max_chars, max_tokens, model)
        assert out.strip()


def test_many_large_items_is_not_slow() -> None:
    body = (PROPOSAL + "\n" + CRITIQUE) * 3
    items = [SourceItem(f"Round {i}", body[:3000].replace("Redis", f"Redis{i}")) for i in range(50)]
    out = summarize_rule_based(items, max_chars=4000, max_tokens=1000)
    _check_caps(out, 4000, 1000)
    assert "Round 49" in out


_FRAGMENTS = st.sampled_from([
    "## Position\n", "### Key decisions\n", "## Open questions\n", "**Verdict:** ", "- ", "1. ", "\n", "\n\n",
    "We will use 3 replicas. ", "p99 under 50 ms", "Why not?", "<|endoftext|>", "```\n", "| a | b |\n", "---\n",
    "e.g. ", "10k QPS ", "…", "—", "  ", "\t", "数据库", "🙂",
])
_TEXT = st.one_of(
    st.text(max_size=300),
    st.lists(st.one_of(_FRAGMENTS, st.text(max_size=30)), max_size=60).map("".join),
    st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=40), st.integers(1, 400)),  # long text
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=st.lists(st.builds(SourceItem, st.text(max_size=60), _TEXT), max_size=8),
    max_chars=st.integers(50, 3000),
    max_tokens=st.integers(16, 1000),
    model=st.sampled_from([None, "gpt-4o"]),
    previous=st.one_of(st.none(), _TEXT),
)
def test_caps_always_hold(items: list[SourceItem], max_chars: int, max_tokens: int, model: str | None,
                          previous: str | None) -> None:
    out = summarize_rule_based(items, max_chars=max_chars, max_tokens=max_tokens, model=model, previous=previous)
    _check_caps(out, max_chars, max_tokens, model)
    if any(it.content.strip() for it in items):
        assert out.strip()
    assert out == summarize_rule_based(items, max_chars=max_chars, max_tokens=max_tokens, model=model,
                                       previous=previous)

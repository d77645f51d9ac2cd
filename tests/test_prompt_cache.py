"""The provider's prompt cache (views laid out for it, cached tokens recorded, priced and shown)
and calls scheduled by their data dependencies, through the real provider against the loopback
server."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from moot.core.context.index import DebateIndex
from moot.core.context.view import LAYOUT, render_messages
from moot.core.models.state import Contribution, DebateState, HeldItem, HeldRecall, RecalledItem, RecallRecord, ViewRecord
from moot.core.pricing import call_cost, rates_for
from tests.conftest import cli, run_debate
from tests.loopback import Faults, LoopbackServer, ModelServer
from tests.prefix_cache import cache_share, prompt_tokens
from tests.prose import loopback_reply

PROBLEM = "Design a rate limiter for a public HTTP API serving 50k requests per second"
ROLES = ["architect", "performance", "kiss"]


def _seed(body: dict[str, Any]) -> int:
    return int.from_bytes(hashlib.sha256(json.dumps(body["messages"]).encode()).digest()[:4], "big")


def prose(body: dict[str, Any], n: int) -> str:
    """2,000 characters of prose seeded by the request: the same request gets the same reply."""
    return loopback_reply(body, _seed(body), 2000)


def _by_kind(bodies: list[dict[str, Any]], head: str) -> list[dict[str, Any]]:
    return [b for b in bodies if b["messages"][-1]["content"].startswith(head)]


# ---------------------------------------------------------------- views for the cache


async def test_views_put_what_changes_least_first(tmp_path: Path) -> None:
    """The topic is in every system message and in no task; a refinement's history starts with
    the history its agent's critiques had; a summarization request starts with the agent's
    refinement view (system, summary, history) and only adds to it."""
    with LoopbackServer(reply=prose) as srv:
        state, _ = await run_debate(tmp_path, PROBLEM, rounds=3, provider="openai", base_url=srv.base_url,
                                    roles=ROLES)
        bodies = srv.requests
    assert state.status == "completed" and state.view_layout == LAYOUT
    for b in bodies:
        assert b["messages"][0]["content"].endswith(f"## Debate topic\n\n{PROBLEM}")
        assert PROBLEM not in b["messages"][-1]["content"]
    for agent in ROLES:
        mine = [b for b in bodies if b["messages"][0]["content"].startswith(state.prompts[f"{agent}/system"])]
        crits = _by_kind(mine, "# Critique")
        refs = _by_kind(mine, "# Refinement")
        sums = _by_kind(mine, "# Summarize")
        assert len(refs) == 3 and len(sums) == 2
        for r, ref in enumerate(refs):
            history = ref["messages"][-2]["content"]
            for crit in crits[2 * r: 2 * r + 2]:
                assert history.startswith(crit["messages"][-2]["content"])  # what its critiques had, then more
            assert "(your proposal for this round: in your debate history above)" in ref["messages"][-1]["content"]
        for ref, summ in zip(refs, sums):
            assert summ["messages"][:-2] == ref["messages"][:-2]  # system (and summary) as the refinement had them
            assert summ["messages"][-2]["content"].startswith(ref["messages"][-2]["content"])
    cached, total = cache_share(bodies)
    assert cached / total >= 0.45  # bench/cache.py: 29.8% with the views before this layout


def test_a_debate_recorded_before_the_layout_rebuilds_as_it_was_sent() -> None:
    """Layout 1 (no `view_layout` in its log): the problem inside the task, the system prompt alone."""
    state = DebateState(id="old", problem="Design a cache", prompts={
        "a/system": "You are A.", "a/refine": "# Refinement\n\n<problem>\n{{problem}}\n</problem>\n\n"
        "<own_proposal>\n{{own_proposal}}\n</own_proposal>\n\n<critiques>\n{{critiques}}\n</critiques>"})
    state.round(1).contributions += [
        Contribution(id="p", agent_id="a", role="architect", type="proposal", round=1, content="Use Redis."),
        Contribution(id="c", agent_id="b", role="kiss", type="critique", round=1, target_agent_id="a",
                     content="Too much."),
    ]
    index = DebateIndex(state)
    assert index.layout == 1
    record = ViewRecord(call_id="x", agent_id="a", round=1, phase="refinement", system_key="a/system",
                        task_key="a/refine", task_contribution_ids=["p", "c"])
    messages = render_messages(record, index)
    assert messages[0]["content"] == "You are A."
    assert "<problem>\nDesign a cache\n</problem>" in messages[-1]["content"]
    assert "Use Redis." in messages[-1]["content"] and "Too much." in messages[-1]["content"]
    state.view_layout = 2  # the same record in today's layout: topic in the system message
    assert render_messages(record, DebateIndex(state))[0]["content"] == "You are A.\n\n## Debate topic\n\nDesign a cache"


def test_recalled_items_follow_the_history_in_this_layout_and_precede_it_in_the_first() -> None:
    """Recall changes with each call's query: after the verbatim window, the window stays a prefix
    the provider's cache can serve (before it, each new recall recomputed the whole window); a
    debate recorded with recall before its history rebuilds that way."""
    state = DebateState(id="recall", problem="Design a cache", prompts={
        "a/system": "You are A.", "a/propose": "# Proposal\n\nPropose your design for the next round."})
    state.round(1).contributions += [
        Contribution(id=i, agent_id="a", role="architect", type="proposal", round=r, content=text)
        for i, r, text in [("old", 1, "Shard the counters by tenant so that no single node owns the hot keys."),
                           ("p2", 2, "Keep a token bucket per key in Redis with a Lua script for atomicity."),
                           ("p3", 3, "Put a local pre-filter in front of Redis to absorb the obvious bursts.")]]
    record = ViewRecord(call_id="x", agent_id="a", round=4, phase="proposal", system_key="a/system",
                        task_key="a/propose", contribution_ids=["p2", "p3"],
                        recall=RecallRecord(query=["tenant"], items=[RecalledItem(id="old", score=2.0)], cap=200))

    def order(layout: int) -> list[str]:
        state.view_layout = layout
        messages = render_messages(record, DebateIndex(state))
        return [next(name for name, mark in [("recall", "Shard the counters"), ("history", "token bucket"),
                                             ("task", "Propose your design"), ("system", "You are A.")]
                     if mark in m["content"]) for m in messages]

    assert order(2) == ["system", "history", "recall", "task"]
    assert order(1) == ["system", "recall", "history", "task"]


def test_a_held_recall_block_stays_where_it_was_sent_and_rolls_out_with_the_messages_before_it() -> None:
    """Layout 3: the block a turn recalled sits after the messages before that turn in the same
    reader's later views, byte for byte as it was sent (then the window goes on, then this call's
    block, then the task); once no message of the window precedes it, it is gone."""
    state = DebateState(id="held", problem="Design a cache", protocol="conversation", view_layout=3, prompts={
        "a/system": "You are A.", "a/turn": "# Turn {{turn}}\n\nIt is your turn."})
    texts = {1: "Shard the counters by tenant so that no single node owns the hot keys.",
             2: "Keep a lease of thirty seconds on each shard and renew it from the owner.",
             5: "A token bucket per key in Redis, with a Lua script for atomicity.",
             6: "Put a local pre-filter in front of Redis to absorb the obvious bursts.",
             7: "Measure the p99 of the pre-filter before we trust it."}
    state.round(7)
    for turn, text in texts.items():
        state.round(turn).contributions.append(Contribution(id=f"m{turn}", agent_id="a" if turn % 2 else "b",
                                                            role="architect", type="message", round=turn,
                                                            content=text))
    index = DebateIndex(state)
    earlier = ViewRecord(call_id="x", agent_id="a", round=7, phase="turn", system_key="a/system", task_key="a/turn",
                         task_params={"turn": 7}, history_turns=(5, 6),
                         recall=RecallRecord(query=["tenant"], items=[RecalledItem(id="m1", score=2.0)], cap=200))
    later = ViewRecord(call_id="y", agent_id="a", round=9, phase="turn", system_key="a/system", task_key="a/turn",
                       task_params={"turn": 9}, history_turns=(5, 7),
                       recall=RecallRecord(query=["lease"], items=[RecalledItem(id="m2", score=2.0)], cap=200,
                                           held=[HeldRecall(turn=7, items=[HeldItem(id="m1")])]))
    sent, now = render_messages(earlier, index), render_messages(later, index)
    assert now[: len(sent) - 1] == sent[:-1]  # the earlier request up to its task, recall block included
    assert [m["content"].split("\n")[0] for m in now[len(sent) - 1:]] == [
        "## The latest messages, continued (verbatim, oldest first)",
        "## Recalled from earlier in the conversation (verbatim, oldest first; the summary covers these turns, "
        "and the latest messages return to them)", "# Turn 9"]
    assert "Shard the counters" in now[2]["content"] and "lease of thirty" in now[4]["content"]
    rolled = later.model_copy(update={"history_turns": (7, 7)})  # turn 6 rolled out: the block before 7 with it
    assert not any("Shard the counters" in m["content"] for m in render_messages(rolled, index))


def test_the_modelled_cache_counts_the_longest_shared_prefix_per_speaker() -> None:
    a = {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "one two three"}]}
    b = {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "one two four five"}]}
    other = {"messages": [{"role": "system", "content": "T"}, {"role": "user", "content": "one two four five"}]}
    cached, total = cache_share([a, other, b])
    shared = len(prompt_tokens(a["messages"])) - 3  # all but " three" and the end marker: ids differ there
    assert 0 < cached < total and cached >= shared - 1


# ---------------------------------------------------------------- cached tokens: read, recorded, priced, shown


def test_cached_tokens_are_recorded_priced_at_their_rate_and_shown(tmp_path: Path) -> None:
    sd = tmp_path / "d"
    with LoopbackServer(reply=prose) as srv:
        r = cli("run", PROBLEM, "--headless", "-r", "2", "-a", ",".join(ROLES), "--model", "gpt-4o-mini",
                "--provider", "openai", "--base-url", srv.base_url, "--state-dir", str(sd))
        reported = srv.cached_reported
    assert r.returncode == 0, r.stderr
    folder = next(p for p in sd.iterdir() if p.is_dir())
    state = DebateState.model_validate_json((folder / "state.json").read_bytes())
    assert state.totals.cached_tokens == reported > 0
    calls = [c.metadata for rnd in state.rounds for c in rnd.contributions if not c.carried_from]
    assert any(m.cached_tokens for m in calls)
    for m in calls:
        assert m.cost_usd == pytest.approx(call_cost("gpt-4o-mini", m.prompt_tokens, m.completion_tokens,
                                                     cached_tokens=m.cached_tokens))
    fresh = call_cost("gpt-4o-mini", state.totals.prompt_tokens, state.totals.completion_tokens)
    assert state.totals.cost_usd < fresh  # cached input at half the input rate
    shown = cli("show", folder.name, "--state-dir", str(sd))
    share = f"{state.totals.cached_tokens / state.totals.prompt_tokens:.0%}"
    assert f"({state.totals.cached_tokens} from the provider's prompt cache, {share})" in shown.stdout
    report = cli("report", folder.name, "--state-dir", str(sd)).stdout
    assert "Prompt from cache" in report and f"{state.totals.cached_tokens} ({share})" in report
    page = cli("report", folder.name, "--html", "--state-dir", str(sd)).stdout
    assert "Prompt from cache" in page and "served from the provider" in page


def test_pricing_has_a_cached_rate() -> None:
    assert rates_for("gpt-4o-mini") == (0.15, 0.60, 0.075)
    assert call_cost("gpt-4o", 1_000_000, 0, cached_tokens=400_000) == pytest.approx(0.6 * 2.5 + 0.4 * 1.25)
    assert call_cost("mine", 1_000_000, 0, {"mine": (1.0, 2.0)}, cached_tokens=10**6) == 1.0  # no cached rate given
    assert call_cost("mine", 1_000_000, 0, {"mine": (1.0, 2.0, 0.1)}, cached_tokens=10**6) == pytest.approx(0.1)
    assert call_cost("gpt-4o", 100, 0, cached_tokens=500) == pytest.approx(100 * 1.25 / 1e6)  # never above the prompt


async def test_llama_cpp_gets_cache_prompt_and_a_slot_per_speaker_and_its_timings_are_read(tmp_path: Path) -> None:
    served = ModelServer(window=8192, style="llama.cpp", slots=4)
    # usage without prompt_tokens_details: only the timings say what was cached
    with LoopbackServer(reply=prose, model=served, faults=Faults(usage={"prompt_tokens": 100,
                                                                        "completion_tokens": 400})) as srv:
        state, _ = await run_debate(tmp_path / "a", PROBLEM, rounds=2, provider="openai", base_url=srv.base_url,
                                    roles=ROLES)
        bodies = srv.requests
    assert state.status == "completed"
    assert all(b.get("cache_prompt") is True for b in bodies)
    slots: dict[str, set[int]] = {}
    for b in bodies:
        slots.setdefault(b["messages"][0]["content"][:80], set()).add(b["id_slot"])
    assert len(slots) == 4 and all(len(s) == 1 for s in slots.values())  # one slot per speaker, kept
    assert len({next(iter(s)) for s in slots.values()}) == 4
    assert 0 < state.totals.cached_tokens < state.totals.prompt_tokens

    with LoopbackServer(reply=prose, model=ModelServer(window=8192, style="llama.cpp", slots=2)) as srv:
        await run_debate(tmp_path / "b", PROBLEM, rounds=1, provider="openai", base_url=srv.base_url, roles=ROLES)
        fewer = srv.requests
    assert all(b.get("cache_prompt") is True and "id_slot" not in b for b in fewer)  # 4 speakers, 2 slots

    with LoopbackServer(reply=prose) as srv:  # not llama.cpp: none of its fields
        await run_debate(tmp_path / "c", PROBLEM, rounds=1, provider="openai", base_url=srv.base_url, roles=ROLES)
        plain = srv.requests
    assert all("cache_prompt" not in b and "id_slot" not in b for b in plain)


# ---------------------------------------------------------------- no phase barrier


async def test_calls_wait_only_for_what_they_read_and_send_the_same_requests_in_any_order(tmp_path: Path) -> None:
    """kiss's proposals are slow: the critiques between the other two agents go out before kiss's
    first proposal is answered (no phase barrier), and the requests are the same, byte for byte,
    as in a run where every call takes the same time."""

    def slow_kiss(body: dict[str, Any]) -> float:
        last = body["messages"][-1]["content"]
        kiss = body["messages"][0]["content"].startswith("# Role: Simplicity Advocate")
        return 2.0 if last.startswith("# Proposal") and kiss else 0.0

    with LoopbackServer(reply=prose, latency=slow_kiss, chunk_chars=4096) as srv:
        state, _ = await run_debate(tmp_path / "slow", PROBLEM, rounds=2, provider="openai", base_url=srv.base_url,
                                    roles=ROLES)
        bodies, answered = srv.requests, srv.answered_before
    assert state.status == "completed"
    kiss_system = next(b["messages"][0]["content"] for b in bodies
                       if b["messages"][0]["content"].startswith(state.prompts["kiss/system"]))
    kiss_proposal = next(i for i, b in enumerate(bodies) if b["messages"][0]["content"] == kiss_system
                         and b["messages"][-1]["content"].startswith("# Proposal"))
    first_critique = next(i for i, b in enumerate(bodies) if b["messages"][-1]["content"].startswith("# Critique"))
    # Sent while kiss's proposal was still unanswered (the two fast proposals had been answered).
    assert first_critique > kiss_proposal and answered[first_critique] < 3
    assert "kiss" not in bodies[first_critique]["messages"][-1]["content"].lower().split("the proposal, by")[-1]

    with LoopbackServer(reply=prose, chunk_chars=4096) as srv:
        again, _ = await run_debate(tmp_path / "even", PROBLEM, rounds=2, provider="openai", base_url=srv.base_url,
                                    roles=ROLES)
        even = srv.requests
    assert again.status == "completed"
    assert sorted(json.dumps(b, sort_keys=True) for b in bodies) == sorted(json.dumps(b, sort_keys=True) for b in even)


async def test_phases_overlap_but_are_announced_in_order(tmp_path: Path) -> None:
    state, folder = await run_debate(tmp_path, PROBLEM, rounds=3, roles=ROLES)
    events = [json.loads(line) for line in folder.events_path.read_text().splitlines()]
    started = [(e["round"], e["phase"]) for e in events if e["type"] == "phase_started" and e["phase"] != "synthesis"]
    order = {"summarize": 0, "proposal": 1, "critique": 2, "refinement": 3}
    assert started == sorted(started, key=lambda k: (k[0], order[k[1]]))
    assert len(started) == len(set(started)) == 12
    completed = {(e["round"], e["phase"]) for e in events if e["type"] == "phase_completed"}
    assert set(started) <= completed
    assert state.status == "completed"


def test_summary_at_ignores_a_later_summary(tmp_path: Path) -> None:
    """A lagging call of round 1 must not read the agent's round-2 summary."""
    state, _ = asyncio.run(run_debate(tmp_path, PROBLEM, config={"debate": {"summarization": {"threshold": 100}}},
                                      rounds=3, roles=ROLES))
    index = DebateIndex(state)
    latest = index.latest_summary["architect"]
    assert latest.round == 3
    assert index.summary_at("architect", (3, 2)) is latest
    earlier = index.summary_at("architect", (2, 2))
    assert earlier is not None and earlier.round == 2
    assert index.summary_at("architect", (1, 2)) is None

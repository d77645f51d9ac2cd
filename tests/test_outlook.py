"""The context overview's "next summary" numbers agree with what the engine then did.

A demo debate is run; its events are folded again one by one, and at every point where the
engine decides on automatic summaries, the outlook computed from the state so far must
predict that decision (the character trigger exactly; a token-triggered summary only when the
character one was not due)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from moot.core.config import Overrides, load_config
from moot.core.context.index import DebateIndex
from moot.core.context.outlook import outlook, summary_owner
from moot.core.events import CallStarted, Event, PhaseStarted, SummaryAdded
from moot.core.session import SessionOptions, new_session
from moot.core.storage.log import read_events
from moot.core.storage.state import apply, new_state

FOUR = ["architect", "performance", "kiss", "security"]


def run(tmp_path: Path, debate: dict) -> list[Event]:
    config = load_config(None, Overrides(rounds=3, provider="demo", roles=FOUR, debate=debate))
    session = new_session("Design a rate limiter for a public API", config,
                          SessionOptions(state_dir=tmp_path, demo_delay=0.0, deterministic_ids=True))

    async def go() -> None:
        session.start_writer()
        await session.run()

    asyncio.run(go())
    return list(read_events(session.folder.events_path))


def test_character_trigger_predicts_each_round_summary(tmp_path: Path) -> None:
    events = run(tmp_path, {"summarization": {"threshold": 3000, "strategy": "rolling"}})
    state, index = new_state(""), DebateIndex()
    predicted: dict[int, set[str]] = {}
    for e in events:
        if isinstance(e, PhaseStarted) and e.phase == "summarize":
            due = {a.id for a in state.agents
                   if (chars := outlook(state, index, a.id).triggers[0]).unit == "characters" and chars.left == 0}
            predicted[e.round] = due
        apply(state, e)
        index.on_event(e)
    made: dict[int, set[str]] = {}
    for e in events:
        if isinstance(e, SummaryAdded) and not e.judge and e.summary.trigger == "chars":
            made.setdefault(e.summary.round, set()).add(e.summary.agent_id)
    assert any(made.values()), "the threshold is low enough that some summaries are due"
    for r, due in predicted.items():
        assert made.get(r, set()) == due, (r, due, made.get(r))
    # The overview at the end: a trigger per unit, the latest view's numbers.
    look = outlook(state, index, "architect")
    assert [t.unit for t in look.triggers] == ["characters", "tokens"]
    assert look.view is not None and look.triggers[1].now == look.view.tokens.total
    assert look.triggers[1].at == int(0.8 * look.view.budget)


def test_summaries_off_show_no_trigger(tmp_path: Path) -> None:
    events = run(tmp_path, {"summarization": {"enabled": False}})
    state = new_state("")
    for e in events:
        apply(state, e)
    assert outlook(state, DebateIndex(state), "kiss").triggers == ()


def test_conversation_message_trigger_predicts_each_roll(tmp_path: Path) -> None:
    debate = {"protocol": "conversation", "turns": 20, "conversation": {"recent_messages": 4, "summary_every": 3}}
    events = run(tmp_path, debate)
    state, index = new_state(""), DebateIndex()
    rolls_due: list[int] = []
    seen: set[int] = set()
    for e in events:
        if isinstance(e, CallStarted) and e.view.round not in seen:  # a turn's first call (a roll's, if due)
            seen.add(e.view.round)
            messages = outlook(state, index, "architect").triggers[0]
            assert messages.unit == "messages" and messages.at == 7
            if messages.left == 0:
                rolls_due.append(e.view.round)
        apply(state, e)
        index.on_event(e)
    rolled = sorted({e.summary.round for e in events if isinstance(e, SummaryAdded) and e.summary.trigger == "turns"})
    assert rolled, "20 turns with a window of 4 + 3 roll the summary"
    # A roll is the first call of its turn; the outlook saw it due just before, and at no other turn.
    assert rolled == rolls_due
    assert summary_owner(state, "kiss") == "judge"

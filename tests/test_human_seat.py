"""A person's seat in the engine (`--human`, `provider = "human"`): the person proposes, critiques,
refines (or speaks on their turn) through the same call path as an agent, with no deadline, no
model slot, no cost; a stop ends their open turn and resume asks it again with what they typed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from moot.core.config import Overrides, build_config
from moot.core.errors import ConfigError, InputError
from moot.core.events import CallStarted, ControlChanged, Event, SeatAnswered
from moot.core.human.desk import Turn
from moot.core.session import DebateSession, SessionOptions, new_session, resume_session
from moot.core.storage.state_dir import StateDir

PROPOSAL = ("Start with one Postgres table keyed by a base62 counter, and put a read-through cache in front "
            "only once the p99 of redirects passes fifty milliseconds.")
CRITIQUE = ("The {target} plan spends its first month on moving parts that no user will notice; "
            "I would ship the single table first and measure.")
REFINEMENT = ("I keep the single table. After the critiques I add a daily backup with a tested restore, "
              "and a rate limit of ten links a minute per account.")
MESSAGE = "Before we add a cache, can someone say what traffic we expect in the first three months?"


def answer_for(turn: Turn) -> str:
    """What Ada types for each kind of turn (real prose: the summary guard rejects repetition)."""
    if turn.phase == "proposal":
        return PROPOSAL
    if turn.phase == "critique":
        return CRITIQUE.format(target=turn.target_agent_id)
    if turn.phase == "refinement":
        return REFINEMENT
    return MESSAGE


def session_with_ada(state_dir: Path, *, rounds: int = 1, debate: dict | None = None,
                     roles: list[str] | None = None, debate_id: str | None = None) -> DebateSession:
    cfg = build_config({}, Overrides(rounds=rounds, roles=roles or ["architect", "kiss"], provider="demo",
                                     humans=["Ada Lovelace"], debate=debate))
    return new_session("Design a URL shortener", cfg, SessionOptions(state_dir=state_dir, demo_delay=0,
                                                                     debate_id=debate_id))


def answer_every_turn(session: DebateSession, delay: float = 0.0) -> list[Turn]:
    """Ada answers each turn as it opens (after `delay` seconds), as the TUI or stdin would."""
    asked: list[Turn] = []
    orch = session.orchestrator

    def opened(turn: Turn, is_open: bool) -> None:
        if is_open:
            asked.append(turn)
            loop = asyncio.get_running_loop()
            loop.call_later(delay, lambda: turn.answer.done() or orch.say(turn.agent_id, answer_for(turn)))

    orch.desk.watch(opened)
    return asked


def test_human_flag_adds_a_persons_seat_that_other_flags_leave_alone() -> None:
    cfg = build_config({}, Overrides(provider="demo", model="gpt-4o", humans=["Ada Lovelace"]))
    ada = cfg.agents[-1]
    assert (ada.id, ada.name, ada.provider, ada.model, ada.role) == ("ada-lovelace", "Ada Lovelace", "human",
                                                                    None, "generalist")
    assert [a.provider for a in cfg.agents[:-1]] == ["demo"] * 3
    with pytest.raises(ConfigError, match="judge cannot be a person"):
        build_config({"judge": {"provider": "human"}}, Overrides())
    with pytest.raises(InputError, match="'kiss' is already an agent"):
        build_config({}, Overrides(humans=["Kiss"]))
    with pytest.raises(InputError, match="needs a letter or a digit"):
        build_config({}, Overrides(humans=["!!"]))


async def test_a_person_proposes_critiques_and_refines_like_an_agent(tmp_path: Path) -> None:
    session = session_with_ada(tmp_path / "debates")
    asked = answer_every_turn(session)
    state = await session.run()
    assert state.status == "completed"
    assert [(t.phase, t.target_agent_id) for t in asked] == [
        ("proposal", None), ("critique", "architect"), ("critique", "kiss"), ("refinement", None)]
    mine = [c for c in state.all_contributions() if c.agent_id == "ada-lovelace"]
    assert [c.content for c in mine] == [PROPOSAL, CRITIQUE.format(target="architect"),
                                         CRITIQUE.format(target="kiss"), REFINEMENT]
    assert all(c.metadata.cost_usd == 0 and c.metadata.provider == "human" for c in mine)
    assert mine[0].metadata.completion_tokens > 20  # counted like any reply
    # What Ada was asked is what an agent in her seat gets: the critique quotes the target's proposal.
    architect_proposal = next(c for c in state.all_contributions()
                              if c.agent_id == "architect" and c.type == "proposal")
    assert architect_proposal.content.strip()[:200] in asked[1].task
    # The agents answer her: a critique of her proposal and a refinement after her critique quote her.
    critique_of_ada = next(c for c in state.all_contributions()
                           if c.type == "critique" and c.target_agent_id == "ada-lovelace")
    assert '**Ada Lovelace**, you wrote "Start with one Postgres table keyed by a base62 counter' in \
        critique_of_ada.content
    kiss_refinement = next(c for c in state.all_contributions() if c.agent_id == "kiss" and c.type == "refinement")
    assert 'you wrote "The kiss plan spends its first month on moving parts' in kiss_refinement.content
    # The judge weighs her final proposal and refinement like everyone's.
    # (here the final round is long, so the judge summarizes it first and synthesizes from that).
    judged = next(v for r in state.rounds for v in r.calls if v.agent_id == "judge" and v.phase == "summarize")
    assert {mine[0].id, mine[3].id} <= set(judged.task_contribution_ids)
    assert state.judge_summary is not None and "Postgres" in state.judge_summary.summary


async def test_a_persons_history_is_summarized_offline_and_recalled(tmp_path: Path) -> None:
    session = session_with_ada(tmp_path / "debates", rounds=2,
                               debate={"summarization": {"threshold": 300}, "carry_refinements": False})
    answer_every_turn(session)
    state = await session.run()
    assert state.status == "completed"
    ada_summaries = [s for r in state.rounds for s in r.summaries.values() if s.agent_id == "ada-lovelace"]
    assert ada_summaries and all(s.method == "rule-based" for s in ada_summaries)
    assert "Postgres" in ada_summaries[0].summary
    # Her round-2 proposal view carries that summary, like any agent's.
    view = next(v for v in state.rounds[1].calls if v.agent_id == "ada-lovelace" and v.phase == "proposal")
    assert view.summary_id == ada_summaries[0].id


async def test_a_person_takes_minutes_no_deadline_no_model_slot_and_pause_acts_at_once(tmp_path: Path) -> None:
    """A turn outlives `timeout_s`; the agents' calls go on beside it with one model slot; a pause is
    in effect while the person is still asked (and they may still answer)."""
    session = session_with_ada(tmp_path / "debates", debate={"timeout_s": 0.2, "max_concurrency": 1})
    orch = session.orchestrator
    events: list[Event] = []
    session.bus.listen(events.append)
    opened = asyncio.Event()
    orch.desk.watch(lambda turn, is_open: is_open and opened.set())
    task = asyncio.ensure_future(session.run())
    await asyncio.wait_for(opened.wait(), 30)
    await asyncio.sleep(0.6)  # three times the deadline of a model call
    # The agents' proposals were made meanwhile through the single model slot.
    assert {c.agent_id for c in orch.state.round(1).contributions} == {"architect", "kiss"}
    assert orch.pause()
    assert any(isinstance(e, ControlChanged) and e.effective for e in events)
    # Calls wait only for what they read, so the agents' critiques of each other may have begun
    # meanwhile; from the pause on, none begins.
    started = sum(isinstance(e, CallStarted) for e in events)
    orch.say("ada lovelace", PROPOSAL)  # by name: the same resolver as every command
    await asyncio.sleep(0.2)
    assert [c.content for c in orch.state.round(1).contributions if c.agent_id == "ada-lovelace"] == [PROPOSAL]
    assert sum(isinstance(e, CallStarted) for e in events) == started  # still paused
    answer_every_turn(session)
    orch.resume()
    state = await asyncio.wait_for(task, 60)
    assert state.status == "completed"


async def test_an_answer_the_turn_cannot_take_is_refused_in_one_line(tmp_path: Path) -> None:
    session = session_with_ada(tmp_path / "debates")
    orch = session.orchestrator
    opened = asyncio.Event()
    orch.desk.watch(lambda turn, is_open: is_open and opened.set())
    with pytest.raises(ValueError, match="no turn of ada-lovelace is waiting"):
        orch.say("ada-lovelace", PROPOSAL)
    task = asyncio.ensure_future(session.run())
    await asyncio.wait_for(opened.wait(), 30)
    with pytest.raises(ValueError, match="empty"):
        orch.say("ada-lovelace", "  \n ")
    long = " ".join(f"Sentence {i} adds one more distinct consideration about shards and caches." for i in range(300))
    with pytest.raises(ValueError, match=r"tokens; a turn holds at most 1,000"):
        orch.say("ada-lovelace", long)
    with pytest.raises(ValueError, match="no person's seat 'kiss'"):
        orch.say("kiss", PROPOSAL)
    orch.stop()
    state = await asyncio.wait_for(task, 30)
    assert state.status == "stopped"


async def test_stopped_while_waiting_then_resumed_with_the_draft(tmp_path: Path) -> None:
    root = tmp_path / "debates"
    session = session_with_ada(root, debate_id="seat")
    orch = session.orchestrator
    events: list[Event] = []
    session.bus.listen(events.append)
    opened: asyncio.Queue[Turn] = asyncio.Queue()
    orch.desk.watch(lambda turn, is_open: is_open and opened.put_nowait(turn))
    task = asyncio.ensure_future(session.run())
    turn = await asyncio.wait_for(opened.get(), 30)
    assert orch.desk.drafts is not None
    orch.desk.drafts.save(turn.agent_id, turn.slot, "Start with one Postgres table")  # half typed
    orch.stop()
    state = await asyncio.wait_for(task, 30)
    assert state.status == "stopped"
    failed = [e for e in events if e.type == "call_failed" and e.agent_id == "ada-lovelace"]
    assert failed and "stopped before an answer came" in failed[-1].error

    resumed = resume_session("seat", SessionOptions(state_dir=root, demo_delay=0))
    again: asyncio.Queue[Turn] = asyncio.Queue()
    resumed.orchestrator.desk.watch(lambda t, is_open: is_open and again.put_nowait(t))
    task = asyncio.ensure_future(resumed.run())
    turn = await asyncio.wait_for(again.get(), 30)
    assert (turn.phase, turn.round) == ("proposal", 1)
    drafts = resumed.orchestrator.desk.drafts
    assert drafts is not None and drafts.load(turn.agent_id, turn.slot) == "Start with one Postgres table"
    answer_every_turn(resumed)
    resumed.orchestrator.say("ada-lovelace", PROPOSAL)
    state = await asyncio.wait_for(task, 60)
    assert state.status == "completed"
    assert [c.content for c in state.round(1).contributions if c.agent_id == "ada-lovelace"][0] == PROPOSAL
    assert not list((StateDir(root).open("seat").path / "drafts").iterdir())  # recorded: drafts pruned


async def test_a_person_speaks_on_their_turn_in_a_conversation(tmp_path: Path) -> None:
    session = session_with_ada(tmp_path / "debates", debate={"protocol": "conversation", "turns": 7})
    asked = answer_every_turn(session)
    events: list[Event] = []
    session.bus.listen(events.append)
    state = await session.run()
    assert state.status == "completed"
    assert [(t.phase, t.round) for t in asked] == [("turn", 3), ("turn", 6)]
    assert [e.via for e in events if isinstance(e, SeatAnswered)] == ["library", "library"]
    after = next(c for c in state.all_contributions() if c.round == 4)  # architect answers her, quoting her
    assert 'Ada Lovelace ("Before we add a cache, can someone say' in after.content.split("\n")[0]


async def test_a_person_answers_each_round_in_simultaneous(tmp_path: Path) -> None:
    session = session_with_ada(tmp_path / "debates", rounds=2, debate={"protocol": "simultaneous"})
    asked = answer_every_turn(session)
    state = await session.run()
    assert state.status == "completed"
    assert [(t.phase, t.round) for t in asked] == [("answer", 1), ("answer", 2)]
    # In round 2 the agents read her round-1 answer and answer her.
    kiss2 = next(c for c in state.round(2).contributions if c.agent_id == "kiss")
    assert '**Ada Lovelace**, you wrote "Before we add a cache, can someone say what traffic' in kiss2.content

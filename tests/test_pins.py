"""Pins and `/summarize --from`, through the real provider against the loopback server with prose
replies: a pinned turn stays verbatim in every later request of the agents that saw it, across the
summary's rolls, until it is unpinned; the config's constraints ride in every debater's request;
a pin that would not fit is refused in one line (exit 2 from `moot ctl`); resume and forks keep
pins; `moot context` rebuilds every view byte for byte with them; `--from turn N` folds everything
before turn N and keeps the rest verbatim."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from moot.core.context.pins import PINNED_HEADING
from moot.core.context.view import SUMMARY_HEADING
from moot.core.events import ContributionAdded, Event
from moot.core.session import DebateSession
from tests.conftest import cli, read_jsonl, run_debate
from tests.loopback import LoopbackServer
from tests.test_prompt_cache import PROBLEM, ROLES, prose

TURN_TASK = re.compile(r"^# Turn (\d+) of (\d+)", re.M)
SMALL = {"protocol": "conversation", "turns": 16,
         "conversation": {"recent_messages": 3, "summary_every": 2, "summary_tokens": 300}}
PAIR = ["architect", "kiss"]
"""Two debaters for the debates by rounds (each of their rounds is a few calls per agent)."""
CONSTRAINT = "Every write path stays idempotent: a retried request with the same key returns the first result."


def _turn(body: dict[str, Any]) -> int | None:
    m = TURN_TASK.match(body["messages"][-1]["content"])
    return int(m.group(1)) if m else None


def _pinned(body: dict[str, Any]) -> str | None:
    return next((m["content"] for m in body["messages"] if m["content"].startswith(PINNED_HEADING)), None)


def _after_turn(session: DebateSession, turn: int, act: Callable[[], object]) -> None:
    """Run `act` (a command at the engine's door) as soon as turn `turn` is recorded, as a person
    typing it then would: it takes effect from the next turn on."""
    def on(event: Event) -> None:
        if isinstance(event, ContributionAdded) and event.contribution.round == turn:
            act()
    session.orchestrator.bus.listen(on)


def _events(folder: Path) -> list[dict[str, Any]]:
    return read_jsonl(folder / "events.jsonl")


def _context_is_what_was_sent(debate: str, state_dir: Path, bodies: list[dict[str, Any]], turns: int) -> int:
    """Every call `moot context --json` shows, turn by turn, is byte for byte a request the server got."""
    received = {json.dumps(b["messages"], ensure_ascii=False) for b in bodies}
    shown = 0
    for t in range(1, turns + 1):
        out = cli("context", debate, "--turn", str(t), "--json", "--state-dir", str(state_dir))
        assert out.returncode == 0, out.stderr
        for call in json.loads(out.stdout):
            assert json.dumps(call["messages"], ensure_ascii=False) in received, (t, call["phase"])
            shown += 1
    return shown


def test_a_pinned_turn_stays_verbatim_across_rolls_until_it_is_unpinned(tmp_path: Path) -> None:
    def before_run(session: DebateSession) -> None:
        _after_turn(session, 3, lambda: session.orchestrator.pin("turn 2"))
        _after_turn(session, 9, lambda: session.orchestrator.unpin("turn 2"))

    with LoopbackServer(reply=prose) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, {"debate": {**SMALL, "turns": 12}}, rounds=None,
                                               provider="openai", base_url=srv.base_url, roles=ROLES,
                                               before_run=before_run))
        bodies = srv.requests
    assert state.status == "completed"
    events = _events(folder.path)
    changes = [e for e in events if e["type"] == "pin_changed"]
    assert [(c["pin"]["label"], c["pin"]["active"]) for c in changes] == [("turn 2", True), ("turn 2", False)]
    second = next(c for c in state.rounds[1].contributions if c.type == "message")
    block = f"### Turn 2 · {state.agents[1].name} ({state.agents[1].role})\n\n{second.content.strip()}"

    # The calls started between the pin and the unpin, in the log's order: every turn view carries
    # the pinned block after the summary and before the latest messages, the summarization requests
    # none; after the unpin no request does.
    pin_seq, unpin_seq = changes[0]["seq"], changes[1]["seq"]
    views = [e["view"] for e in events if e["type"] == "call_started"]
    seqs = [e["seq"] for e in events if e["type"] == "call_started"]
    between = [v for v, s in zip(views, seqs) if pin_seq < s < unpin_seq and v["phase"] == "turn"]
    after = [v for v, s in zip(views, seqs) if s > unpin_seq]
    assert len(between) >= 4 and after
    assert all(v["pinned"] == [second.id] and v["tokens"]["pinned"] > 0 for v in between)
    assert all(not v.get("pinned") and not v["tokens"].get("pinned") for v in after)
    by_call = {b["metadata"]["call_id"]: b for b in bodies if b.get("metadata", {}).get("call_id")}
    turn_bodies = [b for b in bodies if _turn(b) is not None]
    carried = [b for b in turn_bodies if _pinned(b) is not None]
    assert len(carried) == len(between) and not by_call  # the server sees the request, not moot's ids
    for body in carried:
        pinned = _pinned(body)
        assert pinned == f"{PINNED_HEADING}\n\n{block}"
        contents = [m["content"] for m in body["messages"]]
        at = contents.index(pinned)
        assert at == 2 if contents[1].startswith(SUMMARY_HEADING) else at == 1
        assert sum(block in c for c in contents) == 1  # not repeated in the verbatim window
    # Between the pin and the unpin the summary rolled past turn 2 more than once: the turn is
    # covered by the summary and still there, word for word.
    rolls = [e for e in events if e["type"] == "summary_added" and pin_seq < e["seq"] < unpin_seq]
    assert len(rolls) >= 2
    assert [_turn(b) for b in carried] == list(range(_turn(carried[0]) or 0, (_turn(carried[-1]) or 0) + 1))
    assert all(_pinned(b) is None for b in turn_bodies if (_turn(b) or 0) > (_turn(carried[-1]) or 0))
    assert _context_is_what_was_sent(state.id, folder.path.parent, bodies, 12) == len(bodies)


def test_the_configs_constraints_ride_in_every_debaters_request(tmp_path: Path) -> None:
    config = {"debate": {**SMALL, "turns": 6, "pinned": [CONSTRAINT]}}
    with LoopbackServer(reply=prose) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, config, rounds=None, provider="openai",
                                               base_url=srv.base_url, roles=ROLES))
        bodies = srv.requests
    assert state.status == "completed"
    turns = [b for b in bodies if _turn(b) is not None]
    assert len(turns) == 6
    for body in turns:
        assert _pinned(body) == f"{PINNED_HEADING}\n\n### Constraint 1 of the problem\n\n{CONSTRAINT}"
    # A summary asked of a debater continues its turn view, pins and all (the same prefix); the
    # judge's requests, and a summary written in its words, carry none.
    asked = [b for b in bodies if b["messages"][-1]["content"].startswith("# Summarize turns ")]
    assert all(_pinned(b) == _pinned(turns[0]) for b in asked)
    assert all(_pinned(b) is None for b in bodies if _turn(b) is None and b not in asked)
    out = cli("context", state.id, "--turn", "4", "--state-dir", str(folder.path.parent))
    assert out.returncode == 0 and "pinned: constraint 1" in out.stdout and "] pinned · " in out.stdout


def test_a_key_pasted_into_a_pinned_constraint_is_never_saved(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-pinned-8f3a1c9e27b4d6f0a5e8c1b3"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    (tmp_path / "moot.toml").write_text('[debate]\nprotocol = "conversation"\nturns = 2\n'
                                        f'pinned = ["Deploy with the token {key} on the staging cluster."]\n')
    r = cli("run", PROBLEM, "--provider", "demo", "--headless", "-c", str(tmp_path / "moot.toml"),
            "--state-dir", str(tmp_path / "d"))
    assert r.returncode == 0, r.stderr
    saved = [p for p in (tmp_path / "d").rglob("*") if p.is_file()]
    assert saved and not any(key.encode() in p.read_bytes() for p in saved)
    assert key not in r.stdout + r.stderr


def _pinned_run(tmp_path: Path, srv: LoopbackServer, turns: int, *, stop_after: int | None = None) -> tuple[str, Path]:
    """A conversation with turn 2 pinned once turn 3 is said (stopped after `stop_after`, resumable)."""
    def before_run(session: DebateSession) -> None:
        _after_turn(session, 3, lambda: session.orchestrator.pin("turn 2"))
        if stop_after is not None:
            _after_turn(session, stop_after, session.orchestrator.stop)

    state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, {"debate": {**SMALL, "turns": turns}}, rounds=None,
                                           provider="openai", base_url=srv.base_url, roles=ROLES,
                                           before_run=before_run))
    assert state.status == ("stopped" if stop_after else "completed")
    return state.id, folder.path


def _turn_two(folder: Path) -> str:
    return next(e["contribution"]["content"] for e in _events(folder)
                if e["type"] == "contribution_added" and e["contribution"]["round"] == 2).strip()


def test_a_resumed_debate_keeps_its_pins(tmp_path: Path) -> None:
    with LoopbackServer(reply=prose) as srv:
        debate, folder = _pinned_run(tmp_path, srv, 10, stop_after=5)
        sent = len(srv.requests)
        out = cli("resume", debate, "--headless", "--base-url", srv.base_url, "--state-dir", str(folder.parent))
        assert out.returncode == 0, out.stderr
        later = [b for b in srv.requests[sent:] if _turn(b) is not None]
    assert [_turn(b) for b in later] == list(range(6, 11))
    assert all(_turn_two(folder) in (_pinned(b) or "") for b in later)


def test_a_fork_made_after_a_pin_keeps_it_and_one_made_before_does_not(tmp_path: Path) -> None:
    with LoopbackServer(reply=prose) as srv:
        debate, folder = _pinned_run(tmp_path, srv, 8)
        state_dir = str(folder.parent)
        for at, carries in (("turn:6", True), ("turn:3", False)):
            sent = len(srv.requests)
            out = cli("fork", debate, "--at", at, "--turns", "8", "--headless", "--state-dir", state_dir)
            assert out.returncode == 0, out.stderr
            later = [b for b in srv.requests[sent:] if _turn(b) is not None]
            assert later and all((_pinned(b) is not None) == carries for b in later), at
            if carries:
                assert all(_turn_two(folder) in (_pinned(b) or "") for b in later)


def test_a_pin_that_would_not_fit_is_refused_in_one_line_with_exit_2(tmp_path: Path) -> None:
    """`moot ctl ID pin turn 1` against the running debate, whose window cannot hold turn 1
    beside its prompts and task: refused, saying how much room it needs."""
    release = threading.Event()

    def reply(body: dict[str, Any], n: int) -> str:
        if _turn(body) == 2:
            release.wait(60)  # the debate waits on turn 2 while the command is sent
        if _turn(body) == 1:
            return " ".join(prose(body, k) for k in range(8))  # far longer than the window leaves
        return prose(body, n)

    tight = {"debate": {**SMALL, "turns": 3, "conversation": {**SMALL["conversation"], "max_context_tokens": 4000,
                                                                 "reserve_output_tokens": 500}}}
    outcome: dict[str, Any] = {}

    def before_run(session: DebateSession) -> None:
        def send() -> None:
            outcome["ctl"] = cli("ctl", session.folder.id, "pin", "turn", "1", "--state-dir",
                                 str(session.folder.path.parent))
            outcome["plain"] = cli("ctl", session.folder.id, "pin", "turn", "7", "--state-dir",
                                   str(session.folder.path.parent))
            release.set()

        _after_turn(session, 1, lambda: threading.Thread(target=send, daemon=True).start())

    with LoopbackServer(reply=reply) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, tight, rounds=None, provider="openai",
                                               base_url=srv.base_url, roles=ROLES, before_run=before_run))
    assert state.status == "completed" and not state.pins
    refused = outcome["ctl"]
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert re.search(r"cannot pin turn 1: it needs [\d,]+ tokens, the view of \w+ has [\d,]+ left", refused.stderr)
    assert outcome["plain"].returncode == 2 and "no message of turn 7" in outcome["plain"].stderr


def test_summarize_from_a_turn_folds_everything_before_it_and_keeps_the_rest(tmp_path: Path) -> None:
    """`/summarize architect --from turn 6` once turn 8 is said (the library call the TUI and `moot
    ctl` make): the next summary covers turns 1–5, and the request after it carries every turn
    from 6 on verbatim, though the window would have kept six messages."""
    config = {"debate": {**SMALL, "turns": 10, "conversation": {**SMALL["conversation"], "recent_messages": 6,
                                                                  "summary_every": 6}}}

    def before_run(session: DebateSession) -> None:
        _after_turn(session, 8, lambda: session.orchestrator.request_summary("architect", from_step=6))

    with LoopbackServer(reply=prose) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, config, rounds=None, provider="openai",
                                               base_url=srv.base_url, roles=ROLES, before_run=before_run))
        bodies = srv.requests
    assert state.status == "completed"
    events = _events(folder.path)
    asked = next(e for e in events if e["type"] == "summary_requested")
    assert asked["from_step"] == 6
    manual = [e["summary"] for e in events if e["type"] == "summary_added" and e["summary"]["trigger"] == "manual"]
    assert len(manual) == 1 and manual[0]["covered_count"] == 5 and manual[0]["round"] == 9
    made_at = 9
    after = next(b for b in bodies if _turn(b) == made_at)
    contents = [m["content"] for m in after["messages"]]
    assert contents[1].startswith(SUMMARY_HEADING) and "(turns 1–5;" in contents[1]
    window = contents[2]
    assert [int(t) for t in re.findall(r"^### Turn (\d+) ·", window, re.M)] == list(range(6, made_at))


def test_summarize_from_a_round_folds_the_rounds_before_it(tmp_path: Path) -> None:
    """In a debate by rounds, `--from round 2` asked during round 2 folds the architect's round-1
    perspective (its proposal, the critiques it received, its refinement) and nothing of round 2."""
    def before_run(session: DebateSession) -> None:
        orch = session.orchestrator

        def on(event: Event) -> None:
            if event.type == "phase_completed" and event.round == 2 and event.phase == "proposal":
                asyncio.get_running_loop().call_soon(lambda: orch.request_summary("architect", from_step=2))
        orch.bus.listen(on)

    with LoopbackServer(reply=prose) as srv:
        quiet = {"debate": {"summarization": {"threshold": 1_000_000, "trigger_ratio": 0.99}}}  # none by itself
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, quiet, rounds=2, provider="openai",
                                               base_url=srv.base_url, roles=PAIR, before_run=before_run))
    assert state.status == "completed"
    manual = [e["summary"] for e in _events(folder.path)
              if e["type"] == "summary_added" and e["summary"]["trigger"] == "manual"]
    assert len(manual) == 1 and manual[0]["round"] == 2
    first = [c for c in state.rounds[0].contributions
             if c.agent_id == "architect" and c.type != "critique" or c.target_agent_id == "architect"]
    assert manual[0]["covered_count"] == len(first) and manual[0]["covered_through"] in {c.id for c in first}


def test_ctl_checks_the_from_point_and_the_item_before_sending(tmp_path: Path) -> None:
    with LoopbackServer(reply=prose) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, {"debate": {**SMALL, "turns": 2}}, rounds=None,
                                               provider="openai", base_url=srv.base_url, roles=ROLES))
    sd = str(folder.path.parent)
    for argv, says in ((["summarize", "all", "--from", "turn", "x"], "usage: moot ctl ID summarize AGENT|all --from"),
                       (["pin", "--from", "turn", "2"], "--from goes with summarize"),
                       (["pin"], "usage: moot ctl ID pin turn N"),
                       (["unpin", "turn", "2"], "is not running in any process")):
        out = cli("ctl", state.id, *argv, "--state-dir", sd)
        assert out.returncode == 2 and says in out.stderr and len(out.stderr.splitlines()) == 1, (argv, out.stderr)


def test_a_pinned_refinement_rides_in_every_later_view_of_a_debate_by_rounds(tmp_path: Path) -> None:
    """`/pin round 1 architect` (its refinement) once round 1 ends: every round-2 view of every
    debater carries it under its heading, and `moot context` rebuilds those views as sent."""
    def before_run(session: DebateSession) -> None:
        orch = session.orchestrator

        def on(event: Event) -> None:
            if event.type == "phase_completed" and event.round == 1 and event.phase == "refinement":
                asyncio.get_running_loop().call_soon(lambda: orch.pin("round 1 architect"))
        orch.bus.listen(on)

    with LoopbackServer(reply=prose) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, rounds=2, provider="openai",
                                               base_url=srv.base_url, roles=PAIR, before_run=before_run))
        bodies = srv.requests
    assert state.status == "completed"
    refinement = next(c for c in state.rounds[0].contributions if c.agent_id == "architect" and c.type == "refinement")
    (pin,) = state.pins.values()
    assert pin.label == "round 1 refinement by architect" and pin.key == refinement.id
    views = [v for v in state.rounds[1].calls if v.phase in ("critique", "refinement")]
    assert {v.agent_id for v in views} == set(PAIR) and all(v.pinned == [refinement.id] for v in views)
    block = f"### Round 1 · refinement by Architect (architect)\n\n{refinement.content.strip()}"
    sent = {json.dumps(b["messages"], ensure_ascii=False) for b in bodies}
    shown = []
    for agent in PAIR:
        out = cli("context", state.id, "--round", "2", "--agent", agent, "--json", "--state-dir", str(folder.path.parent))
        assert out.returncode == 0, out.stderr
        shown += [c for c in json.loads(out.stdout) if c["phase"] in ("critique", "refinement")]
    assert len(shown) == len(views)
    for call in shown:
        assert json.dumps(call["messages"], ensure_ascii=False) in sent
        assert f"{PINNED_HEADING}\n\n{block}" in [m["content"] for m in call["messages"]]


def test_summarize_from_a_turn_says_when_what_it_keeps_outgrows_the_window(tmp_path: Path) -> None:
    """`--from turn 5` once turn 5, far longer than the verbatim window's cap, is said: everything
    before it is folded, and a warning says turn 5 alone is more than the window holds."""
    def reply(body: dict[str, Any], n: int) -> str:
        return " ".join(prose(body, n + k) for k in range(6)) if _turn(body) == 5 else prose(body, n)

    def before_run(session: DebateSession) -> None:
        _after_turn(session, 5, lambda: session.orchestrator.request_summary("kiss", from_step=5))

    config = {"debate": {**SMALL, "turns": 6, "conversation": {**SMALL["conversation"], "recent_tokens": 2000}}}
    with LoopbackServer(reply=reply) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, config, rounds=None, provider="openai",
                                               base_url=srv.base_url, roles=ROLES, before_run=before_run))
    assert state.status == "completed"
    events = _events(folder.path)
    manual = [e["summary"] for e in events if e["type"] == "summary_added" and e["summary"]["trigger"] == "manual"]
    assert len(manual) == 1 and manual[0]["round"] == 6 and manual[0]["blocks"][-1]["last"] == 4
    warnings = [e["message"] for e in events if e["type"] == "warning"]
    assert any(w.startswith("turn 5 is more than the verbatim window holds (4 messages, ") for w in warnings), warnings


def test_answers_of_a_debate_without_history_carry_pins_too(tmp_path: Path) -> None:
    """`adaptive` (answers drawn a few at a time): an answer pinned once it is given rides in every
    later answer's view; naming an agent that is not there is one line."""
    refused: list[str] = []

    def before_run(session: DebateSession) -> None:
        orch = session.orchestrator

        def on(event: Event) -> None:
            if isinstance(event, ContributionAdded) and not orch.index.pins:
                try:
                    orch.pin("round 1 nobody")
                except ValueError as exc:
                    refused.append(str(exc))
                orch.pin(f"round 1 {event.contribution.agent_id}")
        orch.bus.listen(on)

    state, _ = asyncio.run(run_debate(tmp_path, PROBLEM, {"debate": {"protocol": "adaptive"}}, rounds=1,
                                      roles=PAIR, before_run=before_run))
    assert state.status == "completed"
    assert len(refused) == 1 and refused[0].startswith("no agent 'nobody'; agents: architect, kiss")
    (pin,) = state.pins.values()
    answers = [v for r in state.rounds for v in r.calls if v.phase == "answer"]
    assert len(answers) >= 3 and [v.pinned for v in answers[2:]] == [[pin.key]] * len(answers[2:])

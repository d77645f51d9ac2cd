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
from moot.core.events import ContributionAdded, Event, PinChanged
from moot.core.session import DebateSession
from tests.conftest import cli, read_jsonl, run_debate
from tests.loopback import LoopbackServer
from tests.test_prompt_cache import PROBLEM, ROLES, prose

TURN_TASK = re.compile(r"^# Turn (\d+) of (\d+)", re.M)
SMALL = {"protocol": "conversation", "turns": 16,
         "conversation": {"recent_messages": 3, "summary_every": 2, "summary_tokens": 300}}
CONSTRAINT = "Every write path stays idempotent: a retried request with the same key returns the first result."


def _turn(body: dict[str, Any]) -> int | None:
    m = TURN_TASK.match(body["messages"][-1]["content"])
    return int(m.group(1)) if m else None


def _pinned(body: dict[str, Any]) -> str | None:
    return next((m["content"] for m in body["messages"] if m["content"].startswith(PINNED_HEADING)), None)


def _after_turn(session: DebateSession, turn: int, act: Callable[[], object]) -> None:
    """Run `act` (a command at the engine's door) on the loop once turn `turn` is recorded, as a
    person typing it then would: it takes effect from the next view built."""
    def on(event: Event) -> None:
        if isinstance(event, ContributionAdded) and event.contribution.round == turn:
            asyncio.get_running_loop().call_soon(act)
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
        _after_turn(session, 12, lambda: session.orchestrator.unpin("turn 2"))

    with LoopbackServer(reply=prose) as srv:
        state, folder = asyncio.run(run_debate(tmp_path, PROBLEM, {"debate": SMALL}, rounds=None, provider="openai",
                                               base_url=srv.base_url, roles=ROLES, before_run=before_run))
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
    assert len(between) >= 6 and after
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
    assert _turn(carried[-1]) is not None and _turn(carried[-1]) >= 10  # type: ignore[operator]  # (checked)
    assert all(PINNED_HEADING not in json.dumps(b) for b in bodies if _turn(b) is not None
               and _turn(b) > 13)  # type: ignore[operator]  # (checked: a turn's request)
    assert _context_is_what_was_sent(state.id, folder.path.parent, bodies, 16) == len(bodies)


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
    assert all(_pinned(b) is None for b in bodies if _turn(b) is None)  # summaries and the judge: not pinned
    out = cli("context", state.id, "--turn", "4", "--state-dir", str(folder.path.parent))
    assert out.returncode == 0 and "pinned: constraint 1" in out.stdout and "] pinned · " in out.stdout

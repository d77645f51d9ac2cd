"""What a view recalls does not depend on how far the event log's writer is behind.

A long debate lets go of old steps (`storage.archive`) and reads them back from the log when
the recall tier brings one back. The writer runs behind the engine (far behind a zero-delay
demo), so a step can be let go of before its events are on disk: the view must still hold the
item, exactly as a debate that keeps everything in memory sends it. The thresholds are lowered
(as in `test_bounded_memory`) so that a few dozen turns let go of most of them.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

import moot.core.session as session_module
from moot.core.event_bus import Subscription
from moot.core.events import Event, Warning_
from moot.core.models.state import DebateState
from moot.core.search import archived
from moot.core.search.log_scan import last_logged_seq
from moot.core.storage import archive
from moot.core.storage.folder import DebateFolder
from moot.core.storage.log import numbered_events
from moot.core.storage.log_writer import EventLogWriter
from tests.loopback import LoopbackServer
from tests.prose import FactScript, planted
from tests.test_bounded_memory import AGENTS, _bodies
from tests.test_bounded_memory import _conversation as conversation

PLANT, MENTION = 2, 50
"""Turn 2 plants a fact that turn 50 names again: turn 51's view recalls turn 2."""


def _conversation(state_dir: Path, url: str) -> tuple[DebateState, DebateFolder]:
    return conversation(state_dir, url, turns=60)


def _turn(sent: list[list[dict[str, Any]]], turn: int) -> str:
    (request,) = [m for m in sent if m[-1]["content"].startswith(f"# Turn {turn} of")]
    return "\n".join(m["content"] for m in request)


def _events(folder: DebateFolder) -> list[Event]:
    return [event for _, event in numbered_events(folder.events_path)]


def _stall_writer(monkeypatch: pytest.MonkeyPatch, srv: LoopbackServer, folder_seq: list[int]) -> None:
    """The log's writer writes nothing after the debate's first event until turn 52's request is
    sent (as a writer far behind a fast engine); `folder_seq` gets the log's last seq by then."""
    monkeypatch.setattr(session_module, "WRITER_BACKLOG", 1_000_000)  # (the debate must not wait for it)
    run = EventLogWriter.run

    async def stalled(self: EventLogWriter, sub: Subscription) -> None:
        batch = sub.batch

        async def late_batch(most: int) -> list[Event]:
            deadline = time.monotonic() + 120  # (only if the debate stopped early: never hang)
            while not folder_seq and time.monotonic() < deadline:
                if any(m[-1]["content"].startswith("# Turn 52 of") for m in _bodies(srv)):
                    folder_seq.append(last_logged_seq(self.folder.events_path))
                    break
                await asyncio.sleep(0.01)
            return await batch(most)

        monkeypatch.setattr(sub, "batch", late_batch)
        await run(self, sub)

    monkeypatch.setattr(EventLogWriter, "run", stalled)


def test_a_view_recalls_a_let_go_turn_the_lagging_writer_has_not_written_yet(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = FactScript({PLANT: 0}, {MENTION: 0}, chars=600)
    with LoopbackServer(reply=script) as srv:
        whole, _ = _conversation(tmp_path / "whole", srv.base_url)
        sent_whole = _bodies(srv)
    monkeypatch.setattr(archive, "HOLD", 24)
    monkeypatch.setattr(archive, "KEEP", 6)
    logged: list[int] = []
    with LoopbackServer(reply=script) as srv:
        _stall_writer(monkeypatch, srv, logged)
        bounded, folder = _conversation(tmp_path / "bounded", srv.base_url)
        sent_bounded = _bodies(srv)

    assert whole.archived_rounds == 0 and bounded.archived_rounds > 40
    assert whole.status == bounded.status == "completed"
    # When turn 51's view was built, turn 2 was let go of and its event was not in the log yet.
    events = _events(folder)
    (plant_seq, plant), = [(e.seq, e.contribution) for e in events if e.type == "contribution_added"
                           and e.contribution.round == PLANT and e.contribution.type == "message"]
    assert planted(0).sentence in plant.content
    assert logged and logged[0] < plant_seq
    # Still, the view recalled it verbatim, and every request is what the debate held whole sent.
    assert plant.content.strip() in _turn(sent_bounded, MENTION + 1)
    assert sent_bounded == sent_whole
    assert not [e for e in events if isinstance(e, Warning_)]


def test_an_item_that_cannot_be_read_back_is_warned_of_not_skipped_silently(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_memory: None) -> None:
    # As a damaged log leaves it: the index finds turn 2, but its line cannot be read.
    monkeypatch.setattr(archived, "line_with_seq", lambda path, seq: None)
    with LoopbackServer(reply=FactScript({PLANT: 0}, {MENTION: 0}, chars=600)) as srv:
        state, folder = _conversation(tmp_path, srv.base_url)
        sent = _bodies(srv)
    assert state.status == "completed" and state.archived_rounds > 40
    assert planted(0).sentence not in _turn(sent, MENTION + 1)
    warned = [e for e in _events(folder) if isinstance(e, Warning_) and "could not read back" in e.message]
    assert warned and warned[0].agent_id in AGENTS
    assert "this view was built without them" in warned[0].message

"""Engine events reach the debate screen in batches, one per frame, in the order they came
(no stall when many agents finish together)."""

from __future__ import annotations

import asyncio

from textual import events
from textual.message import Message

from moot.core.events import CallStarted, ContributionAdded, Event, PhaseStarted, Token
from moot.core.models.state import CallMetadata, Contribution
from moot.tui.app import create_app
from moot.tui.bridge import DRAWN_WAIT_S, FLUSH_INTERVAL_S, Bridge, EngineBatch, TokenChunk
from moot.tui.screens.debate import DebateScreen
from moot.tui.textual_compat import nothing_queued
from tests.tui.scripted import ScriptedRuntime

from .conftest import fixed_clock, settle, upto, wait_for

REPLY = ("The cache keeps hot keys close to the edge while writes go through a queue, so latency "
         "stays flat under load and the database only sees batched traffic.")


class Recorder:
    """Stands in for the screen: keeps what the bridge posts."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def post_message(self, message: Message) -> bool:
        self.messages.append(message)
        return True

    @property
    def batches(self) -> list[EngineBatch]:
        return [m for m in self.messages if isinstance(m, EngineBatch)]


def finish_together(started: list[CallStarted]) -> list[Event]:
    """Every call streams its last words and ends, and each agent's next call starts streaming."""
    out: list[Event] = []
    for call in started:
        view = call.view
        out.append(Token(call_id=view.call_id, agent_id=view.agent_id, delta="and ends here."))
        out.append(ContributionAdded(contribution=Contribution(
            id=f"c-{view.call_id}", agent_id=view.agent_id, role=view.agent_id, type="proposal", round=view.round,
            content=REPLY + " And ends here.", metadata=CallMetadata(call_id=view.call_id))))
        nxt = view.model_copy(update={"call_id": view.call_id + "-next", "phase": "critique"})
        out.append(CallStarted(view=nxt))
        out.append(Token(call_id=nxt.call_id, agent_id=view.agent_id, delta="Reviewing the proposal, "))
        out.append(Token(call_id=nxt.call_id, agent_id=view.agent_id, delta="the queue is the weak point."))
    return out


async def test_a_burst_is_one_batch_in_order_and_the_next_waits_for_the_frame() -> None:
    runtime = ScriptedRuntime(clock=fixed_clock)
    target = Recorder()
    bridge = Bridge(runtime, target)  # type: ignore[arg-type]
    task = asyncio.create_task(bridge.run())
    try:
        await asyncio.sleep(0.01)
        first = PhaseStarted(round=1, phase="proposal")
        runtime.push(first, Token(call_id="a", agent_id="x", delta="One "), Token(call_id="a", agent_id="x", delta="two"),
                     PhaseStarted(round=1, phase="critique"), Token(call_id="a", agent_id="x", delta=" three"))
        await asyncio.sleep(0.01)
        assert len(target.batches) == 1
        items = target.batches[0].items
        assert [type(i).__name__ for i in items] == ["PhaseStarted", "TokenChunk", "PhaseStarted", "TokenChunk"]
        assert [i.text for i in items if isinstance(i, TokenChunk)] == ["One two", " three"]
        # Not drawn yet: what comes now waits, merged, however long past the flush interval.
        runtime.push(Token(call_id="a", agent_id="x", delta=" four"), PhaseStarted(round=1, phase="refinement"))
        await asyncio.sleep(FLUSH_INTERVAL_S * 2)
        assert len(target.batches) == 1
        bridge.drawn()
        await asyncio.sleep(0.01)
        assert len(target.batches) == 2
        assert [type(i).__name__ for i in target.batches[1].items] == ["TokenChunk", "PhaseStarted"]
        # Text alone goes after the flush interval, once the last batch is drawn.
        bridge.drawn()
        runtime.push(Token(call_id="a", agent_id="x", delta=" five"))
        await asyncio.sleep(0.01)
        assert len(target.batches) == 2
        await asyncio.sleep(FLUSH_INTERVAL_S * 2)
        assert len(target.batches) == 3
        # A screen that never says it drew (not shown) still gets the next batch.
        runtime.push(PhaseStarted(round=2, phase="proposal"))
        await asyncio.sleep(DRAWN_WAIT_S + 0.1)
        assert len(target.batches) == 4
    finally:
        task.cancel()


async def test_agents_finishing_together_reach_the_screen_as_one_batch(recorded4) -> None:  # type: ignore[no-untyped-def]
    before = upto(recorded4, lambda e: e.type == "phase_started" and e.round == 1 and e.phase == "proposal")
    started = [e for e in recorded4[len(before):] if isinstance(e, CallStarted) and e.view.phase == "proposal"]
    runtime = ScriptedRuntime(events=before + started, clock=fixed_clock)
    batches: list[EngineBatch] = []

    def hook(message: Message) -> None:
        if isinstance(message, EngineBatch) and all(message is not b for b in batches):  # it bubbles to the app
            batches.append(message)

    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(160, 48), message_hook=hook) as pilot:
        await settle(pilot, runtime)
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        for call in started:
            runtime.push(Token(call_id=call.view.call_id, agent_id=call.view.agent_id, delta=REPLY + " "))
        await settle(pilot, runtime)
        shown = len(batches)
        burst = finish_together(started)
        runtime.push(*burst)
        await settle(pilot, runtime)
        assert len(batches) == shown + 1, [len(b.items) for b in batches[shown:]]
        assert sum(not isinstance(i, TokenChunk) for i in batches[-1].items) == 2 * len(started)
        for call in started:
            pane = screen.pane(call.view.agent_id)
            assert pane is not None
            done = pane.transcript.get(call.view.call_id)
            assert done is not None and done.state == "done" and done.text.endswith("And ends here.")
            live = pane.transcript.get(call.view.call_id + "-next")
            assert live is not None and live.text == "Reviewing the proposal, the queue is the weak point."


async def test_streamed_text_joins_each_pane_without_a_message_to_it(recorded4) -> None:  # type: ignore[no-untyped-def]
    """Text for a pane with nothing queued goes into its transcript in the screen's turn: no
    callback message to each pane for every batch. Text that follows a call's start in the
    same batch still waits behind it (the test above) and lands in the new call's entry."""
    before = upto(recorded4, lambda e: e.type == "phase_started" and e.round == 1 and e.phase == "proposal")
    started = [e for e in recorded4[len(before):] if isinstance(e, CallStarted) and e.view.phase == "proposal"]
    runtime = ScriptedRuntime(events=before + started, clock=fixed_clock)
    queued_text: list[Message] = []

    def hook(message: Message) -> None:
        if isinstance(message, events.Callback) and getattr(message.callback, "func", None).__name__ == "stream":
            queued_text.append(message)

    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(160, 48), message_hook=hook) as pilot:
        await settle(pilot, runtime)
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        queued_text.clear()
        sentences = REPLY.split(", ")
        panes = [screen.pane(call.view.agent_id) for call in started]

        def idle() -> bool:  # on a loaded machine a pane can still be busy with its own messages
            return all(p is not None and nothing_queued(p) for p in panes)

        for sentence in sentences:
            await wait_for(pilot, idle)
            queued_text.clear()  # only text sent while its pane had nothing waiting is counted
            for call in started:
                runtime.push(Token(call_id=call.view.call_id, agent_id=call.view.agent_id, delta=sentence + ", "))
            await settle(pilot, runtime)
            assert queued_text == [], sentence
        for call in started:
            pane = screen.pane(call.view.agent_id)
            assert pane is not None
            entry = pane.transcript.get(call.view.call_id)
            assert entry is not None and entry.text == ", ".join(sentences) + ", "
        assert queued_text == []


async def test_the_screen_folds_events_exactly_as_the_engine_does(tmp_path, small_memory) -> None:  # type: ignore[no-untyped-def]
    """The live screen's state and index come from the same fold as the engine's, old steps let
    go included: after a long conversation both hold the same state and the same transcript."""
    from .conftest import make_session

    session = make_session(tmp_path / "state", roles=["architect", "kiss", "security"],
                           debate={"protocol": "conversation", "turns": 40})
    events: list[Event] = []
    session.bus.listen(events.append)
    session.start_writer()
    await session.run()
    engine = session.orchestrator
    assert engine.state.archived_rounds > 0  # the fold let old turns go
    runtime = ScriptedRuntime(events=events, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, runtime)
        screen = app.screen
        assert isinstance(screen, DebateScreen)
        assert screen.state.model_dump() == engine.state.model_dump()
        assert screen.index.message_count == engine.index.message_count
        assert [c.id for c in screen.index.messages_after(None, 41)] == \
               [c.id for c in engine.index.messages_after(None, 41)]

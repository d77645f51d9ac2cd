"""The debate screen is made of parts that subscribe to the events they show: every event of
the union reaches a part or is named as shown only by the header and the event log, and each
event reaches its subscribers in the order of the parts, coroutines awaited."""

from __future__ import annotations

import asyncio
from typing import Any, get_args

from textual.screen import Screen

from moot.core import events as ev
from moot.tui.bridge import TokenChunk
from moot.tui.screens.debate import DebateScreen
from moot.tui.screens.debate_events import LOG_ONLY, Debate, DebatePart, EventTable, Subscription, handle
from tests.tui.scripted import ScriptedRuntime


def _union_classes() -> set[type[Any]]:
    union = get_args(ev.Event)[0]  # Annotated[Union[...], discriminator]
    return set(get_args(union))


def test_every_event_class_reaches_a_part_or_is_named_as_shown_only_in_the_log() -> None:
    screen = DebateScreen(ScriptedRuntime())
    subscribed = screen.feed.table.kinds
    events = _union_classes()
    assert len(events) > 25, "the event union was not read: did its shape change?"
    forgotten = sorted(k.__name__ for k in events - subscribed - set(LOG_ONLY))
    assert forgotten == [], f"no part of the debate screen shows {forgotten}: subscribe a part or add to LOG_ONLY"
    assert set(LOG_ONLY) <= events
    assert subscribed - events == {TokenChunk}, "a part subscribed to something that is not an event"


class _Recorder(DebatePart):
    """A part that notes what reaches it: phases (after a pause, as a coroutine) and streamed text."""

    def __init__(self, screen: Screen[None], debate: Debate, name: str, seen: list[str]) -> None:
        super().__init__(screen, debate)
        self.name = name
        self.seen = seen

    def subscriptions(self) -> list[Subscription]:
        return [handle(ev.PhaseStarted, self._phase), handle(TokenChunk, self._text)]

    async def _phase(self, event: ev.PhaseStarted) -> None:
        await asyncio.sleep(0)
        self.seen.append(f"{self.name}: {event.phase} of round {event.round}")

    def _text(self, chunk: TokenChunk) -> None:
        self.seen.append(f"{self.name}: {chunk.text}")


class _PhasesOnly(DebatePart):
    def __init__(self, screen: Screen[None], debate: Debate, seen: list[str]) -> None:
        super().__init__(screen, debate)
        self.seen = seen

    def subscriptions(self) -> list[Subscription]:
        return [handle(ev.PhaseStarted, lambda e: self.seen.append(f"phases only: {e.phase}"))]


def test_each_event_reaches_its_subscribers_in_the_order_of_the_parts() -> None:
    runtime = ScriptedRuntime()
    screen = DebateScreen(runtime)
    debate = Debate(runtime)
    seen: list[str] = []
    table = EventTable([_Recorder(screen, debate, "first", seen), _PhasesOnly(screen, debate, seen),
                        _Recorder(screen, debate, "last", seen)])

    async def feed() -> None:
        await table.dispatch(ev.PhaseStarted(round=2, phase="critique"))
        await table.dispatch(TokenChunk("call-7", "security", "Rate limits belong at the gateway."))
        await table.dispatch(ev.RoundStarted(round=3))  # nobody subscribed: nothing happens

    asyncio.run(feed())
    assert seen == ["first: critique of round 2", "phases only: critique", "last: critique of round 2",
                    "first: Rate limits belong at the gateway.", "last: Rate limits belong at the gateway."]

"""The seats people take: the turns waiting for a person's words, and the words when they come.

A person's agent (`provider = "human"`) runs on `human.provider.HumanProvider`, whose reply is
`HumanDesk.ask`: the turn opens here with the messages the person is asked (the same view an
agent would get) and waits, without a deadline, until `submit` hands it their text — from the
TUI's editor, the headless seat reading stdin, `moot ctl ID say` (through the orchestrator's
command door) or a library caller. Everything else (the view, the events, the contribution,
summaries, resume) is the call engine's ordinary path, so a person's words are managed context
like any agent's. A stop ends every open turn with `StopRequested` (the debate stops at once
instead of waiting on someone who may be away); what was typed is in the drafts (`drafts.py`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..engine.gate import StopRequested
from ..providers.base import ChatRequest, Message
from ..tokens import count_text
from .drafts import Drafts, mask_typed, slot_of

Via = Literal["editor", "stdin", "ctl", "library"]
"""Where a person's answer came from."""


@dataclass(frozen=True)
class Answer:
    text: str
    via: Via
    command_id: str | None = None
    """Set when it came from another process (`moot ctl ID say`)."""


@dataclass
class Turn:
    """One turn a person is asked to take."""

    agent_id: str
    phase: str
    round: int
    target_agent_id: str | None
    messages: list[Message]
    """What the person is asked: exactly the messages an agent in this seat would be sent."""
    max_tokens: int
    """The most their answer may hold, as for any agent's reply."""
    model: str
    opened_at: float = field(default_factory=time.time)
    answer: asyncio.Future[Answer] = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    @property
    def slot(self) -> str:
        return slot_of(self.phase, self.round, self.target_agent_id)

    @property
    def task(self) -> str:
        """The last message: the turn's task (what to write now)."""
        return self.messages[-1]["content"] if self.messages else ""


Watcher = Callable[[Turn, bool], None]
"""Told when a turn opens (True) and when it closes (False)."""


class HumanDesk:
    """The open turns of every person in one debate (one turn per person at a time: the engine
    gives each person's seat a limit of one call in flight)."""

    def __init__(self, secrets: Callable[[], Sequence[str]] = tuple) -> None:
        self.secrets = secrets
        """The keys the debate's providers use (asked when needed: they are added as providers are made)."""
        self._open: dict[str, Turn] = {}
        self._watchers: list[Watcher] = []
        self._stopped = False
        self.drafts: Drafts | None = None
        """Where drafts are kept (set once the debate has a folder)."""
        self.on_answer: Callable[[Turn, Answer], None] | None = None
        """Called as an answer is accepted (the orchestrator records where it came from)."""

    def watch(self, fn: Watcher) -> None:
        self._watchers.append(fn)
        for turn in list(self._open.values()):
            fn(turn, True)

    def unwatch(self, fn: Watcher) -> None:
        if fn in self._watchers:
            self._watchers.remove(fn)

    def waiting(self, agent_id: str | None = None) -> list[Turn]:
        """The open turns (of one person), oldest first."""
        turns = sorted(self._open.values(), key=lambda t: t.opened_at)
        return [t for t in turns if agent_id is None or t.agent_id == agent_id]

    async def ask(self, request: ChatRequest) -> Answer:
        """Open the turn `request` describes and wait for the person's answer (no deadline).
        StopRequested when the debate stops meanwhile; a cancellation closes the turn."""
        if self._stopped:
            raise StopRequested
        hint = request.hint
        if hint.agent_id in self._open:  # the engine's limit of one call per seat makes this a bug
            raise RuntimeError(f"{hint.agent_id} already has a turn open")
        turn = Turn(agent_id=hint.agent_id, phase=hint.phase, round=hint.round,
                    target_agent_id=hint.target_agent_id, messages=list(request.messages),
                    max_tokens=request.max_tokens, model=request.model)
        self._open[turn.agent_id] = turn
        self._tell(turn, True)
        try:
            return await turn.answer
        finally:
            self._open.pop(turn.agent_id, None)
            self._tell(turn, False)

    def submit(self, agent_id: str, text: str, *, via: Via = "library", command_id: str | None = None) -> Turn:
        """Answer `agent_id`'s open turn with `text`, its keys masked (every way an answer comes in
        passes here: the editor, stdin, `moot ctl say`, a library caller). ValueError (a line to
        show the person) when no turn of theirs is open, the text is empty, or it is longer than
        a reply may be."""
        turn = self._open.get(agent_id)
        if turn is None or turn.answer.done():
            open_ = ", ".join(t.agent_id for t in self.waiting()) or "nobody"
            raise ValueError(f"no turn of {agent_id} is waiting for an answer (waiting now: {open_})")
        text = mask_typed(text.strip(), self.secrets())
        if not text:
            raise ValueError("the answer is empty: write something first")
        n = count_text(text, turn.model)
        if n > turn.max_tokens:
            raise ValueError(f"the answer is {n:,} tokens; a turn holds at most {turn.max_tokens:,} (as any "
                             "agent's reply): shorten it")
        if self.drafts is not None:  # kept until the log holds the contribution (drafts.prune)
            try:
                self.drafts.save(agent_id, turn.slot, text)
            except Exception:  # noqa: BLE001 - the answer itself goes on; only the safety copy failed
                pass
        answer = Answer(text=text, via=via, command_id=command_id)
        if self.on_answer is not None:
            self.on_answer(turn, answer)
        turn.answer.set_result(answer)
        return turn

    def stop(self) -> None:
        """The debate stops: every open turn ends with StopRequested, and none opens again."""
        self._stopped = True
        for turn in list(self._open.values()):
            if not turn.answer.done():
                turn.answer.set_exception(StopRequested())

    def _tell(self, turn: Turn, opened: bool) -> None:
        for fn in list(self._watchers):
            fn(turn, opened)

"""The headless seat: a person's turn shown on stderr, their answer read from stdin.

When a person's turn opens, the messages they are asked (the view an agent in their seat would
be sent) are printed to stderr, then their answer is read from stdin: every line until one that
holds only `.`, or the end of input. Each line read is saved as the turn's draft, so a debate
killed mid-answer keeps what was typed (a resume prints it and reads on). An answer the turn
refuses (too long) is said in one line and read again. Another process may answer meanwhile
(`moot ctl ID say`): the seat then moves on, keeping the lines typed since for the next turn.
With stdin at its end, or a terminal this process does not own (a background job), the turns
wait for `moot ctl ID say`, as a line on stderr says.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, TextIO

from ..safety.sanitize import one_line_safe, terminal_safe
from ..tokens import count_messages
from .desk import HumanDesk, Turn
from .stdin_lines import can_read_stdin, stdin_lines

END = "."
"""A line holding only this ends an answer."""


def turn_title(turn: Turn) -> str:
    if turn.phase == "turn":
        return f"message, turn {turn.round}"
    target = f" of {turn.target_agent_id}'s proposal" if turn.target_agent_id else ""
    return f"{turn.phase}{target}, round {turn.round}"


def render_turn(turn: Turn, name: str, *, with_system: bool = True, plain: bool = False) -> str:
    """What the person is shown: every message of their view, labelled, terminal-safe (`plain`:
    labelled in words, for a screen reader, as plain mode reads everything else)."""
    n = count_messages(turn.messages, turn.model)
    about = f"what you are asked: {len(turn.messages)} messages, {n:,} tokens"
    lines = [f"Your turn, {one_line_safe(name, 60)}: {turn_title(turn)} ({about})." if plain
             else f"━━ your turn, {one_line_safe(name, 60)}: {turn_title(turn)} ━━ ({about})"]
    for i, m in enumerate(turn.messages, 1):
        if m["role"] == "system" and not with_system:
            lines.append("Message 1, system: as in your first turn." if plain
                         else "── system ── (as in your first turn)")
            continue
        label = f"Message {i}, {m['role']}:" if plain else f"── {m['role']} ──"
        lines += [label, terminal_safe(m["content"]).rstrip()]
    return "\n".join(lines)


class LineReader(Protocol):
    """Where a seat reads its lines: stdin (`StdinLines`), or plain mode's lines that are no command."""

    @property
    def eof(self) -> bool:
        """No line is left to read."""

    async def readline(self) -> str: ...


class StdinSeat:
    """Serves the people's turns on stdin and stderr until cancelled."""

    def __init__(self, desk: HumanDesk, debate_id: str, names: dict[str, str], out: TextIO,
                 lines: LineReader | None = None, plain: bool = False) -> None:
        self.desk = desk
        self.debate_id = debate_id
        self.names = names
        self.out = out
        self.lines = lines or stdin_lines()
        self._opened: asyncio.Queue[Turn] = asyncio.Queue()
        self._shown_system: set[str] = set()
        self._readable = can_read_stdin()
        self.plain = plain
        """Plain mode: the seat's lines in words, without the rules a screen reader would spell out."""

    def _say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def _note(self, text: str) -> None:
        """A line of the seat's own (not the person's view): marked, or in plain mode a sentence."""
        self._say(f"{text[:1].upper()}{text[1:]}." if self.plain else f"━━ {text}")

    def _on_turn(self, turn: Turn, opened: bool) -> None:
        if opened:
            self._opened.put_nowait(turn)

    def _ctl_hint(self, turn: Turn) -> str:
        seat = f" --as {turn.agent_id}" if len(self.names) > 1 else ""
        return f"moot ctl {self.debate_id}{seat} say \"…\""

    async def run(self) -> None:
        self.desk.watch(self._on_turn)
        try:
            while True:
                turn = await self._opened.get()
                if turn.answer.done():
                    continue
                await self._serve(turn)
        finally:
            self.desk.unwatch(self._on_turn)

    async def _serve(self, turn: Turn) -> None:
        name = self.names.get(turn.agent_id, turn.agent_id)
        self._say(render_turn(turn, name, with_system=turn.agent_id not in self._shown_system, plain=self.plain))
        self._shown_system.add(turn.agent_id)
        what = "message" if turn.phase == "turn" else turn.phase
        if not self._readable or self.lines.eof:
            why = "stdin is not this process's to read (a background job)" if not self._readable else "stdin has ended"
            self._note(f"{why}: answer with `{self._ctl_hint(turn)}` from another shell")
            return
        drafts = self.desk.drafts
        typed = drafts.load(turn.agent_id, turn.slot) if drafts is not None else ""
        if typed:
            mark = "Your saved draft, kept; type on to add to it:" if self.plain else (
                "── your saved draft (kept; type on to add to it) ──")
            self._say(f"{mark}\n{terminal_safe(typed).rstrip()}")
        self._note(f"type your {what}; end it with a line holding only \"{END}\" (or end of input); "
                  f"`{self._ctl_hint(turn)}` from another shell works too")
        while not turn.answer.done():
            line = await self._next_line(turn)
            if line is None:
                return  # answered elsewhere, or the debate stopped
            ended = line == "" or line.rstrip("\r\n") == END
            if not ended:
                typed += line
                self._save(turn, typed)
                continue
            if not typed.strip():
                if line == "":
                    self._note(f"stdin has ended: answer with `{self._ctl_hint(turn)}` from another shell")
                    return
                self._note("nothing typed yet: type your answer, then a line holding only \".\"")
                continue
            try:
                self.desk.submit(turn.agent_id, typed, via="stdin")
            except ValueError as exc:
                self._note(f"{one_line_safe(str(exc), 300)}; type it again")
                typed = ""
                if line == "":
                    return

    async def _next_line(self, turn: Turn) -> str | None:
        """The next line, or None when the turn closed first (its line, if any, stays queued)."""
        reading: asyncio.Future[Any] = asyncio.ensure_future(self.lines.readline())
        closed: asyncio.Future[Any] = asyncio.ensure_future(asyncio.shield(turn.answer))
        try:
            await asyncio.wait([reading, closed], return_when=asyncio.FIRST_COMPLETED)
        finally:
            if closed.done() and not closed.cancelled():
                closed.exception()  # a stop: the engine's side reports it
            closed.cancel()
            if not reading.done():
                reading.cancel()
        if reading.done() and not reading.cancelled():
            return reading.result()
        return None

    def _save(self, turn: Turn, text: str) -> None:
        if self.desk.drafts is None:
            return
        try:
            self.desk.drafts.save(turn.agent_id, turn.slot, text)
        except Exception as exc:  # noqa: BLE001 - the text is still here; say so once per line
            self._note(f"the draft could not be saved: {one_line_safe(str(exc), 200)}")

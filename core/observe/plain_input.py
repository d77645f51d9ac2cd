"""What the user types in plain mode: the TUI's slash commands, one per line on stdin.

`/pause`, `/resume`, `/stop`, `/inject TEXT`, `/summarize [agent|all] [focus]`, `/pin ITEM`,
`/unpin ITEM`, `/help` and `/quit` go through the same door as the TUI's (`Orchestrator.pause`, …); each answers in one
sentence at once, and the event that records the effect is read out when it happens. Lines come
from the process's one reader of stdin (`human.stdin_lines`), and while the agents'
clarifying questions wait for answers, or a person (`--human`) has a seat, each line that is no
command is text for them instead (the person's seat reads it as it reads stdin headless).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import TextIO

from ..human.stdin_lines import StdinLines, stdin_lines
from ..models.state import Clarification
from ..models.terms import MAX_FOCUS
from ..orchestrator import Orchestrator
from ..safety.sanitize import one_line_safe

COMMANDS: dict[str, str] = {
    "pause": "/pause — hold new calls; the calls already running finish first.",
    "resume": "/resume — go on after a pause.",
    "stop": "/stop — stop at the next call boundary; the debate stays resumable with moot resume.",
    "inject": "/inject TEXT — a moderator note that every agent sees from its next call.",
    "summarize": "/summarize [agent|all] [focus] — summarize an agent's context at its next call, "
                 "keeping what the focus names.",
    "pin": "/pin ITEM — keep an item (turn 12, round 2 architect) verbatim in every later view.",
    "unpin": "/unpin ITEM — let a pinned item go: later views may summarize it.",
    "help": "/help — this list.",
    "quit": "/quit — stop now and exit; calls still running get 3 seconds, then the debate is saved, resumable.",
}
ALIASES = {"sum": "summarize", "q": "quit", "exit": "quit", "h": "help", "?": "help"}
QUIT_GRACE_S = 3.0


def _questions_to_come(orch: Orchestrator) -> bool:
    """Clarifying questions will be asked: a line that is no command answers the first."""
    return orch.config.debate.clarify and not orch.state.clarified


def lookup(name: str) -> str | None:
    """A command by name, alias or unambiguous prefix."""
    key = name.lower()
    if key in COMMANDS:
        return key
    if key in ALIASES:
        return ALIASES[key]
    matches = [n for n in COMMANDS if n.startswith(key)]
    return matches[0] if len(matches) == 1 else None


class TypedLines:
    """The lines that are not commands, for whoever reads text: the clarifier, a person's seat
    (`StdinSeat` reads it as it reads stdin: `readline()`, "" at the end, and `eof`)."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._ended = False

    @property
    def eof(self) -> bool:
        """stdin has ended and every line typed before was read (stdin is read ahead of them)."""
        return self._ended and self._queue.qsize() <= 1

    def put(self, line: str) -> None:
        self._queue.put_nowait(line)

    def end(self) -> None:
        self._ended = True
        self._queue.put_nowait("")

    async def readline(self) -> str:
        line = await self._queue.get()
        if line == "":
            self._queue.put_nowait("")  # the end of input, for every later reader too
        return line


class PlainInput:
    """Reads stdin lines (through the process's one reader) and acts on the commands among them;
    the other lines answer clarifying questions (`ask`) and a person's turns (`typed`)."""

    def __init__(self, out: TextIO | None = None, source: StdinLines | None = None) -> None:
        self.out = out or sys.stdout
        self.source = source
        self.typed = TypedLines()
        self._asking = False
        self.people = False
        """A person has a seat: lines that are no command are theirs, typed ahead or not."""

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    # ------------------------------------------------------------------ reading

    async def ask(self, questions: list[Clarification]) -> list[str]:
        """The clarifier: each question read out, each next line its answer (empty: none; a
        line typed ahead answers the next question; end of input answers none of the rest)."""
        self._asking = True
        self.say(f"The agents ask {len(questions)} clarifying question{'s' if len(questions) != 1 else ''}. "
                 "Type each answer and press Enter; an empty line gives no answer.")
        out: list[str] = []
        try:
            for i, q in enumerate(questions, 1):
                self.say(f"Question {i} of {len(questions)}, from {one_line_safe(q.agent_id, 60)}: "
                         f"{one_line_safe(q.question, 2000)}")
                out.append((await self.typed.readline()).strip())
        finally:
            self._asking = False
        return out

    async def serve(self, orchestrator: Orchestrator, interrupt: Callable[[str], None]) -> None:
        """Act on each line until stdin ends (the debate goes on without input then)."""
        source = self.source or stdin_lines()
        while True:
            line = await source.readline()
            if line == "":
                self.typed.end()
                return
            if not line.lstrip().startswith("/") and (self._asking or self.people
                                                      or _questions_to_come(orchestrator)):
                self.typed.put(line)
                continue
            if line.strip():
                answer = self.run(orchestrator, line, interrupt)
                if answer:
                    self.say(answer)

    # ------------------------------------------------------------------ commands

    def run(self, orch: Orchestrator, line: str, interrupt: Callable[[str], None]) -> str:
        """One command line; the sentence that answers it ("" when the event that records it will
        be read out instead)."""
        text = line.strip()
        if not text.startswith("/"):
            return "Commands start with a slash, for example /pause. Type /help for the list."
        name, _, rest = text[1:].partition(" ")
        command = lookup(name) if name else None
        if command is None:
            return f"Unknown command /{one_line_safe(name, 40)}. Type /help for the list."
        rest = rest.strip()
        if command == "help":
            return "Commands:\n" + "\n".join(COMMANDS.values())
        if not orch.accepting:
            return "The debate is not running: there is nothing to steer."
        try:
            return self._steer(orch, command, rest, interrupt)
        except ValueError as exc:
            return f"Not done: {one_line_safe(str(exc), 300)}."

    def _steer(self, orch: Orchestrator, command: str, rest: str, interrupt: Callable[[str], None]) -> str:
        if command in ("pause", "resume", "stop", "quit") and rest:
            return f"/{command} takes no argument."
        if command == "pause":
            return "" if orch.pause() else "Already paused; /resume goes on."
        if command == "resume":
            return "" if orch.resume() else "Not paused."
        if command == "stop":
            return "" if orch.stop() else "Already stopping."
        if command == "quit":
            orch.stop()
            asyncio.get_running_loop().call_later(QUIT_GRACE_S, interrupt, "quit")
            return f"Quitting: calls still running get {QUIT_GRACE_S:g} seconds; the debate is saved."
        if command in ("pin", "unpin"):
            if not rest:
                return f"Usage: /{command} ITEM, for example /{command} turn 12 or /{command} round 2 architect."
            if command == "pin":
                orch.pin(rest)
            else:
                orch.unpin(rest)
            return ""
        if command == "inject":
            if not rest:
                return "Usage: /inject TEXT, for example /inject Keep it simple."
            orch.inject(rest)
            return ""
        return self._summarize(orch, rest)

    def _summarize(self, orch: Orchestrator, rest: str) -> str:
        target, _, focus = rest.partition(" ")
        if not target or target.lower() == "all":
            ids = [a.id for a in orch.agents]
        else:
            agent = orch.find_agent(target)
            if agent is None:
                names = ", ".join(a.id for a in orch.agents)
                return f"No agent {one_line_safe(target, 40)}. Agents: {names}, or all."
            ids = [agent.id]
        focus = " ".join(focus.split())
        if len(focus) > MAX_FOCUS:
            return f"The focus is {len(focus)} characters; at most {MAX_FOCUS}."
        for agent_id in ids:
            orch.request_summary(agent_id, focus or None)
        return ""

"""Plain mode (`moot run --plain`, `MOOT_PLAIN=1`): the debate as linear text a screen reader
reads in order.

Built on the headless view (`headless.run_headless`, `describe`) with three differences: every
line is words, not symbols (a screen reader spells out ✎, ⇣ and box-drawing rules); every
contribution is printed whole, once, when it is complete, after a label that says who wrote it,
what it is and in which round or turn; and everything goes to stdout, in the order it happened,
so the final solution is the last thing read. Nothing is redrawn, nothing spins. What the user
types on stdin is handled by `plain_input`.
"""

from __future__ import annotations

import sys
from typing import TextIO, assert_never

from .. import events as ev
from ..event_bus import Subscription
from ..models.provider_kinds import any_scripted, listed
from ..models.state import Contribution, Summary
from ..safety.sanitize import one_line_safe, terminal_safe
from .describe import PHASE_LABELS, describe

TYPE_WORDS = {"proposal": "proposal", "critique": "critique", "refinement": "refinement", "answer": "answer",
              "message": "turn"}
TRIGGER_WORDS = {
    "chars": "its history passed the character threshold",
    "tokens": "its view passed the token threshold",
    "turns": "enough messages had aged out of the window",
    "manual": "you asked for it",
    "judge": "the final round is summarized for the judge",
}


class PlainNarrator:
    """Turns events into sentences; remembers agents' names and the debate's length."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.total = 0
        self.conversation = False

    def name(self, agent_id: str) -> str:
        return self.names.get(agent_id, one_line_safe(agent_id, 60))

    def text(self, event: ev.Event) -> str | None:
        """What to print for `event` (None: nothing). Safe for a terminal."""
        said = self._text(event)
        return terminal_safe(said) if said is not None else None

    def _text(self, event: ev.Event) -> str | None:
        match event:
            case ev.DebateStarted():
                self.names = {a.id: one_line_safe(a.name, 60) for a in [*event.agents, event.judge]}
                self.total = event.total_rounds
                self.conversation = event.protocol == "conversation"
                unit = ("turn" if self.conversation else "round") + ("" if event.total_rounds == 1 else "s")
                demo = (" The demo provider is in use: every answer is scripted, not written by a model."
                        if any_scripted(listed(event.provider_label)) else "")
                agents = ", ".join(self.name(a.id) for a in event.agents)
                return (f"Debate {event.debate_id} started: protocol {event.protocol}, {event.total_rounds} {unit}. "
                        f"Agents: {agents}. Judge: {self.name(event.judge.id)}.{demo}\n"
                        "Type a command and press Enter at any time; /help lists them.\n")
            case ev.DebateResumed(from_round=r):
                return f"Debate {event.debate_id} resumed at {'turn' if self.conversation else 'round'} {r}.\n"
            case ev.RoundStarted(step="turn"):
                return None  # the message's own label says the turn
            case ev.RoundStarted(round=r):
                of = f" of {self.total}" if self.total else ""
                return f"Round {r}{of}."
            case ev.PhaseStarted(phase="turn") | ev.PhaseStarted(phase="summarize"):
                return None  # a turn's message says its turn; a summary says itself when one is made
            case ev.PhaseStarted(phase=phase):
                return f"{PHASE_LABELS.get(phase, phase).capitalize()}."
            case ev.ContributionAdded(contribution=c):
                return self._contribution(c)
            case ev.SummaryAdded(summary=s, judge=judge):
                return self._summary(s, judge)
            case ev.SeatAnswered(agent_id=agent_id, via=via):
                where = {"editor": " in the editor", "stdin": " on the keyboard", "ctl": " with moot ctl say",
                         "library": ""}[via]
                return f"{self.name(agent_id)} answered{where}; the answer is read out as it is recorded."
            case ev.SummaryRequested(agent_id=agent_id, focus=focus):
                about = f", focusing on: {one_line_safe(focus, 200)}" if focus else ""
                return f"Summary requested for {self.name(agent_id)}, made at its next call{about}."
            case ev.CallFailed(agent_id=agent_id, error=error, will_retry=retry):
                again = " Trying again." if retry else ""
                return f"Problem: the call of {self.name(agent_id)} failed: {one_line_safe(error, 300)}.{again}"
            case ev.Warning_(message=message):
                return f"Warning: {one_line_safe(message, 400)}"
            case ev.SynthesisCompleted(solution=solution):
                conf = f"confidence {solution.confidence}" if solution.confidence is not None else "no confidence given"
                return f"The judge has written the final solution ({conf}). It is read out at the end."
            case ev.ClarificationsAsked():
                return None  # the questions themselves are read out by the one who answers them
            case ev.ClarificationsAnswered(answers=answers):
                n = sum(1 for a in answers if a.answer)
                return f"Clarifications: {n} of {len(answers)} questions answered." if answers else None
            case ev.PinChanged(pin=pin):
                what = one_line_safe(pin.label, 80)
                return (f"Pinned {what}: kept verbatim in every later view." if pin.active
                        else f"Unpinned {what}: later views may summarize it.")
            case ev.NoteInjected(note=note):
                return f"Moderator note, which every agent sees from its next call: {one_line_safe(note.text, 400)}"
            case ev.ControlChanged(action="pause", effective=True):
                return "Paused: no call is running. Type /resume to go on."
            case ev.ControlChanged(action="pause"):
                return "Pause requested: the calls already running finish first."
            case ev.ControlChanged(action="resume"):
                return "Resumed."
            case ev.ControlChanged():  # stop
                return "Stop requested: the debate stops at the next call boundary and stays resumable."
            case ev.DebateCompleted(status=status, totals=t):
                how = "completed" if status == "completed" else "stopped at its budget"
                cost = f", costing {t.cost_usd:.4f} dollars" if t.cost_usd > 0 else ""
                return (f"The debate {how}: {t.prompt_tokens:,} prompt tokens and "
                        f"{t.completion_tokens:,} completion tokens{cost}.")
            case ev.DebateInterrupted(status="stopped"):
                return "The debate was stopped."
            case ev.DebateInterrupted() | ev.DebateFailed():
                return None  # said once, with how to continue, when the run ends (`headless.ending_line`)
            case (ev.ConvergenceScored() | ev.Converged() | ev.AdaptiveDecided() | ev.WindowLearned()
                  | ev.BudgetReached()):
                line = describe(event)
                return line.text.lstrip("≈✓⚙$ ") if line is not None else None
            case ev.ToolCalled(agent_id=agent_id, tool=tool):
                return (f"{self.name(agent_id)} uses the tool {one_line_safe(tool.name, 64)} with "
                        f"{one_line_safe(tool.arguments, 160)}.")
            case ev.ToolReturned(name=name, ok=ok, summary=summary):
                how = "answered" if ok else "failed"
                return f"The tool {one_line_safe(name, 64)} {how}: {one_line_safe(summary, 200)}"
            case ev.IndexRebuilding(done=done, total=total, texts=texts):
                if done >= total:
                    return f"The search index is rebuilt: {texts:,} texts."
                return (f"The search index is being rebuilt from the log: {done * 100 // max(1, total)} percent; "
                        "until it is whole, recall finds only what it holds so far.")
            case ev.ToolsReady():
                line = describe(event)
                said = line.text.lstrip("⚒ ") if line is not None else ""
                return f"{said[:1].upper()}{said[1:]}." if said else None
            case ev.Token() | ev.CallStarted() | ev.PhaseCompleted() | ev.CallContinued():
                return None  # no streaming, no spinner: a contribution is read once, whole
            case _:
                assert_never(event)

    def _contribution(self, c: Contribution) -> str:
        what = TYPE_WORDS.get(c.type, c.type)
        to = f" of {self.name(c.target_agent_id)}'s proposal" if c.target_agent_id else ""
        step = f"turn {c.round}" if c.type == "message" else f"round {c.round}"
        label = f"{self.name(c.agent_id)}, {what}{to}, {step}"
        if c.carried_from:
            return f"{label}: the same as its last refinement (carried over, no new call).\n"
        cut = ""
        if c.metadata.clipped_at is not None:
            cut = "\n(The answer ran far past its limit; moot stopped reading it.)"
        elif c.metadata.server_truncated:
            cut = "\n(The server ended the answer early: the request filled its context window.)"
        elif c.metadata.finish_reason == "length":
            cut = "\n(The answer was cut at its length limit.)"
        body = c.content.strip() or "(no text)"
        return f"{label}:\n{body}{cut}\nEnd of {self.name(c.agent_id)}'s {what}.\n"

    def _summary(self, s: Summary, judge: bool) -> str:
        md = s.metadata
        who = ("the final round, for the judge" if judge
               else "the conversation" if s.scope == "conversation" else f"{self.name(s.agent_id)}'s context")
        why = TRIGGER_WORDS.get(s.trigger, s.trigger)
        focus = f" It focuses on: {one_line_safe(s.focus, 200)}." if s.focus else ""
        fallback = (f" The {s.method} summary failed ({one_line_safe(md.fallback_reason, 200)}); "
                    "a rule-based one was used." if md.fallback_reason else "")
        because = "" if judge else f", because {why}"
        return (f"Summary of {who}{because}: {md.before_tokens:,} tokens became {md.after_tokens:,}, "
                f"covering {s.covered_count} items.{focus}{fallback}")


async def print_plain(sub: Subscription, out: TextIO | None = None, narrator: PlainNarrator | None = None) -> None:
    """Each event's sentence on stdout, in order, flushed at once (a screen reader reads as it comes)."""
    narrator = narrator or PlainNarrator()
    async for event in sub:
        said = narrator.text(event)
        if said is not None:
            print(said, file=out or sys.stdout, flush=True)

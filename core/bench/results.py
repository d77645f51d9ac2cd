"""One question × protocol, read back from its saved debate: the result row.

Every field is derived from the debate's folder alone (its state and event log), so a row
always agrees with the debate `moot show ID` opens, and a rerun rebuilds the same row
without a request.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

from pydantic import Field

from ..models.base import Model
from ..models.config import AnswerFormat
from ..models.state import Contribution, DebateState, Round
from ..protocols.answers import expected_key, extract, extract_confidence, is_correct, majority, weighted_majority
from ..protocols.base import WEIGHED
from ..storage.files import open_regular
from ..storage.folder import DebateFolder

ANSWER_TYPES = ("answer", "refinement", "proposal", "message")
"""Contribution types that carry an agent's answer (a critique or a ranking does not)."""
JUDGE_DECIDES = ("rounds", "council", "conversation")


class AnswerChanges(Model):
    """How often agents changed their answer from one round to the next."""

    changed: int = 0
    right_to_wrong: int = 0
    wrong_to_right: int = 0


class ResultRow(Model):
    id: str
    protocol: str
    answer: str | None
    """The final answer, normalized; None: none in the asked form (counted as wrong)."""
    expected: str
    correct: bool
    debate_id: str
    status: str
    decided_by: str
    """`judge`, `majority` (vote, simultaneous), `weighted majority` (`debate.weight = "confidence"`) or `single`."""
    agent_answers: dict[str, str | None] = Field(default_factory=dict)
    """Each agent's last answer, normalized."""
    majority: str | None = None
    """The majority of the agents' last answers (for judge protocols: reported beside)."""
    majority_correct: bool = False
    tie: bool = False
    tied: list[str] = Field(default_factory=list)
    rule: str = ""
    changes: AnswerChanges = Field(default_factory=AnswerChanges)
    first_majority: str | None = None
    """The majority of the agents' first answers (before any agent read another's): what the
    question's answer was before the rounds; beside `correct` it says what the rounds did."""
    first_correct: bool = False
    by_model: dict[str, list[bool]] = Field(default_factory=dict)
    """Model → whether each agent on it had the right last answer (a mixed panel's models side by side)."""
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    """Wall time the debate ran (the sum over its runs when it was resumed)."""
    error: str | None = None
    repeat: int = 1
    """Which run of the question (`--repeat`), from 1."""

    @property
    def complete(self) -> bool:
        return self.status in ("completed", "stopped_budget")


def _position(contribs: Sequence[Contribution]) -> Contribution | None:
    """An agent's answer in one round: its refinement, else its proposal, else its answer/message."""
    order = {t: i for i, t in enumerate(ANSWER_TYPES)}
    found = sorted((c for c in contribs if c.type in order), key=lambda c: order[c.type])
    return found[0] if found else None


def answers_by_round(state: DebateState, steps: Iterable[Round] | None = None) -> dict[str, list[Contribution]]:
    """Agent id → its answer in each round it answered, oldest first (agents in config order).
    `steps`: every round (a long debate's state holds only its last ones: `DebateFolder.steps()`)."""
    out: dict[str, list[Contribution]] = {a.id: [] for a in state.agents}
    for rnd in state.rounds if steps is None else steps:
        for agent_id, seq in out.items():
            mine = [c for c in rnd.contributions if c.agent_id == agent_id and c.carried_from is None]
            c = _position(mine)
            if c is not None:
                seq.append(c)
    return out


def first_answers(state: DebateState, steps: Iterable[Round] | None = None) -> dict[str, Contribution]:
    """Agent id → its first answer: its proposal (or answer, message) in the first round it
    answered, before any critique it read (a refinement only when nothing came before it)."""
    out: dict[str, Contribution] = {}
    first_kind = {t: i for i, t in enumerate(("answer", "proposal", "message", "refinement"))}
    for rnd in state.rounds if steps is None else steps:
        for a in state.agents:
            if a.id in out:
                continue
            mine = sorted((c for c in rnd.contributions if c.agent_id == a.id and c.type in first_kind
                           and c.carried_from is None), key=lambda c: first_kind[c.type])
            if mine:
                out[a.id] = mine[0]
    return out


def answer_changes(seqs: dict[str, list[str | None]], expected: str, fmt: AnswerFormat) -> AnswerChanges:
    out = AnswerChanges()
    for seq in seqs.values():
        for before, after in zip(seq, seq[1:], strict=False):
            if before == after:
                continue
            out.changed += 1
            was, now = is_correct(before, expected, fmt), is_correct(after, expected, fmt)
            out.right_to_wrong += was and not now
            out.wrong_to_right += now and not was
    return out


def active_seconds(folder: DebateFolder) -> float:
    """Seconds between each start or resume and the last event of that run, summed."""
    total, start, last = 0.0, None, None
    try:
        with os.fdopen(open_regular(folder.events_path), "rb") as fh:
            for raw in fh:
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                ts = event.get("ts")
                if not isinstance(ts, (int, float)):
                    continue
                if event.get("type") in ("debate_started", "debate_resumed"):
                    if start is not None and last is not None:
                        total += last - start
                    start = ts
                last = ts
    except OSError:
        return 0.0
    if start is not None and last is not None:
        total += last - start
    return max(0.0, total)


def _by_model(state: DebateState, last: dict[str, str | None], expected: str,
              fmt: AnswerFormat) -> dict[str, list[bool]]:
    models = {a.id: a.model for a in state.agents}
    out: dict[str, list[bool]] = {}
    for agent_id, answer in last.items():
        out.setdefault(models.get(agent_id, "?"), []).append(is_correct(answer, expected, fmt))
    return out


def read_row(qid: str, expected: str, fmt: AnswerFormat, folder: DebateFolder, state: DebateState, *,
             repeat: int = 1) -> ResultRow:
    """The result row of one finished (or failed) debate (run `repeat` of its question)."""
    protocol = state.protocol
    per_round = answers_by_round(state, folder.steps())
    first = majority([extract(c.content, fmt) for c in first_answers(state, folder.steps()).values()]).winner
    seqs = {a: [extract(c.content, fmt) for c in cs] for a, cs in per_round.items()}
    # `adaptive` draws only the seats it needs: a seat never drawn is not an unparsed answer
    last = {a: s[-1] if s else None for a, s in seqs.items() if s or protocol != "adaptive"}
    vote = majority(list(last.values()))
    judge = protocol in JUDGE_DECIDES or (protocol == "simultaneous" and state.config.get("debate", {})
                                          .get("final", "judge") == "judge")
    if judge:
        answer = extract(state.final_solution.description, fmt) if state.final_solution else None
        decided = "judge"
    else:
        answer, decided = vote.winner, ("single" if protocol == "single" else "majority")
        if protocol in WEIGHED and state.config.get("debate", {}).get("weight") == "confidence":
            # the final answer is the confidence-weighted majority; the plain one stays in `majority`
            latest = [cs[-1].content for a, cs in per_round.items() if a in last and cs]
            answer = weighted_majority([extract(t, fmt) for t in latest],
                                       [extract_confidence(t) for t in latest]).winner
            decided = "weighted majority"
    t = state.totals
    return ResultRow(
        id=qid, protocol=protocol, answer=answer, expected=expected_key(expected, fmt),
        correct=is_correct(answer, expected, fmt), debate_id=state.id, status=state.status, decided_by=decided,
        agent_answers=last, majority=vote.winner, majority_correct=is_correct(vote.winner, expected, fmt),
        tie=bool(vote.tied), tied=vote.tied, rule=vote.rule, changes=answer_changes(seqs, expected, fmt),
        first_majority=first, first_correct=is_correct(first, expected, fmt), by_model=_by_model(state, last, expected, fmt),
        calls=t.calls, prompt_tokens=t.prompt_tokens, completion_tokens=t.completion_tokens,
        cost_usd=round(t.cost_usd, 8), seconds=round(active_seconds(folder), 3), error=state.error, repeat=repeat)

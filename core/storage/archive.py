"""Steps a debate no longer needs in memory: let go of them, and read them back from the log.

A conversation of 100,000 turns must run in the memory of one of 1,000. What the next calls
read is small and known: each reader's latest summary and the items after it (its verbatim
window), the current step and the one before it (a carried refinement, the previous answers).
Older steps — their contributions, summaries and the views their calls saw — stay in the event
log, which is the truth anyway; the state keeps only the steps after `archived_rounds`, and
the snapshot beside the log is that same bounded state (so a resume reads snapshot + tail).

Which steps are still needed depends on the protocol and the summarization settings, read
from the state (`needed_from`); a protocol or a setting this module does not know of keeps
every step, as before. Small debates are never touched: steps are let go only once more than
`HOLD` contributions are held, down to about `KEEP`.
(`steps.read_steps` gives them back from the log, one at a time.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pydantic import ValidationError

from ..models.state import DebateState, Round, Summary

if TYPE_CHECKING:
    from ..models.config import MootConfig

HOLD = 512
"""Contributions a state may hold before older steps are let go (a 3-round debate holds ~40)."""
KEEP = 128
"""Contributions a state keeps at least when it lets go (so a roll does not happen every step)."""


def _config(state: DebateState) -> MootConfig | None:
    from ..models.config import MootConfig  # (read only when a long debate lets go of steps; not at start-up)

    try:
        return MootConfig.model_validate(state.config)
    except ValidationError:
        return None


def _latest(summaries: Iterator[Summary]) -> dict[str, Summary]:
    """Each agent's latest summary, as the index picks it (by step, then time)."""
    out: dict[str, Summary] = {}
    for s in summaries:
        prev = out.get(s.agent_id)
        if prev is None or (s.round, s.ts) >= (prev.round, prev.ts):
            out[s.agent_id] = s
    return out


def needed_from(state: DebateState) -> int:
    """The first step whose items a later call may still read verbatim (1: every step)."""
    held = state.archived_rounds + 1
    last = max(held, state.current_round - 1)
    if state.protocol == "simultaneous":
        return last  # a view reads the previous round's answers, nothing older
    if state.protocol not in ("rounds", "conversation") or state.judge is None:
        return held if state.archived_rounds else 1
    cfg = _config(state)
    if cfg is None:
        return held if state.archived_rounds else 1
    if state.protocol == "conversation":
        shared = cfg.debate.conversation.summary_scope == "shared"
        readers = [state.judge.id] if shared else [*(a.id for a in state.agents), state.judge.id]
    else:
        from ..models.config import merge

        readers = [a.id for a in state.agents]
        people = {a.id: a for a in cfg.agents}
        for reader in readers:
            summ = merge(cfg.debate.summarization, people[reader].summarization if reader in people else None)
            if not summ.enabled or summ.strategy == "fresh":
                return held if state.archived_rounds else 1  # their views read the whole perspective
    latest = _latest(s for r in state.rounds for s in [*r.replaced_summaries, *r.summaries.values()])
    step_of = {c.id: c.round for r in state.rounds for c in r.contributions}
    floor = last
    for reader in readers:
        s = latest.get(reader)
        covered = step_of.get(s.covered_through) if s is not None and s.covered_through else None
        if covered is None:
            return held if state.archived_rounds else 1  # no summary yet: its view starts at the top
        floor = min(floor, covered)
    return floor


def archive_due(state: DebateState) -> int:
    """The step through which `state` can let go now (its `archived_rounds` when nothing is due)."""
    held = state.held_contributions
    if held <= HOLD:
        return state.archived_rounds
    limit = needed_from(state) - 1
    through, left = state.archived_rounds, held
    for r in state.rounds:
        if r.number > limit or left - len(r.contributions) < KEEP:
            break
        through, left = r.number, left - len(r.contributions)
    return through


def archive_steps(state: DebateState, through: int) -> list[Round]:
    """Let go of the steps up to `through` (they stay in the log); returns them."""
    n = through - state.archived_rounds
    if n <= 0:
        return []
    gone, state.rounds = state.rounds[:n], state.rounds[n:]
    state.archived_rounds = through
    state.count_held(-sum(len(r.contributions) for r in gone))
    return gone

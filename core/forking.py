"""`moot fork`: a new debate whose history up to a point is a saved debate's, then runs on with changes.

The fork is an ordinary debate folder: its log is the parent's up to the fork point (see
`storage.fork`), its first event carries the fork's configuration and where it came from, so a
plain `moot resume` continues it, reports read it, and deleting the parent breaks nothing.
Running it from the fork point is a resume: each protocol skips every call whose result the
state holds, so no request before the point is sent again.

Only changes that make sense mid-debate are taken: models, summaries, the number of rounds or
turns, budgets and the like. A different protocol, judge or set of agents would make the copied
history the record of another debate, and is refused in one line naming the key.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import Overrides, build_config, public_config, read_config_file
from .errors import ConfigError, InputError
from .events import DebateStarted, Event, NoteInjected
from .models.state import DebateState, ForkOrigin, ModeratorNote
from .safety.secrets import known_secrets, redact
from .search.index import INDEX_FILE, open_index
from .storage.folder import DebateFolder, writer_alive
from .storage.fork import Copied, ForkPoint, copy_history, find_cut
from .storage.state_dir import StateDir, new_debate_id
from .trace_ids import new_trace_id

STEP_KEYS = {"rounds": "rounds", "conversation": "turns", "simultaneous": "rounds", "council": "rounds"}
"""Which `debate` setting counts a protocol's steps (the others have a fixed number)."""


_POINT = re.compile(r"\s*(round|turn)[\s:]+([0-9]+)\b\s*(.*)", re.S)


def step_point(state: DebateState, line: str | None, usage: str) -> tuple[str, str | None]:
    """(`round:N` or `turn:N`, the note or None) from a line `[round N | turn N] [note…]`, the way
    `/fork`, `/rewind` and `moot ctl ID fork` take it: without a point, the current round or turn.
    InputError (one line, `usage` the command's own) for a point the debate has not reached."""
    unit = "turn" if state.protocol == "conversation" else "round"
    text = (line or "").strip()
    m = _POINT.match(text)
    if m is not None:
        if m.group(1) != unit:
            raise InputError(f"a {state.protocol} debate forks at a {unit}: {usage}")
        number, note = int(m.group(2)), m.group(3).strip()
    else:
        number, note = state.current_round, text
    if number < 1:
        raise InputError("no round has started yet: nothing to fork")
    if number > state.current_round:
        raise InputError(f"no {unit} {number} yet: this debate is at {unit} {state.current_round}")
    return f"{unit}:{number}", note or None


@dataclass
class ForkChanges:
    """What the fork does differently from the fork point on."""

    inject: str | None = None
    agent_models: dict[str, str] = field(default_factory=dict)
    summary_method: str | None = None
    rounds: int | None = None
    turns: int | None = None
    config_file: Path | None = None


@dataclass
class Forked:
    id: str
    origin: ForkOrigin
    copied: Copied


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _ids(agents: object) -> list[str]:
    if not isinstance(agents, list):
        return []
    return [str(a.get("id") or a.get("role")) for a in agents if isinstance(a, dict)]


def forked_config(parent: dict[str, Any], changes: ForkChanges, point: ForkPoint) -> dict[str, Any]:
    """The fork's configuration: the parent's with `changes`; ConfigError naming the key of a
    change that makes no sense mid-debate, InputError for a flag that names nothing."""
    data = json.loads(json.dumps(parent))
    if changes.config_file is not None:
        extra = read_config_file(changes.config_file)
        before = data.get("debate", {}) if isinstance(data.get("debate"), dict) else {}
        after = extra.get("debate", {}) if isinstance(extra.get("debate"), dict) else {}
        if "protocol" in after and after["protocol"] != before.get("protocol", "rounds"):
            raise ConfigError(f"{changes.config_file}: debate.protocol cannot change in a fork (the history "
                              f"before the fork point is a {before.get('protocol', 'rounds')} debate's)")
        if "agents" in extra:
            if _ids(extra["agents"]) != _ids(data.get("agents")):
                raise ConfigError(f"{changes.config_file}: agents: a fork keeps its parent's agents "
                                  f"({', '.join(_ids(data.get('agents')))}), in order; change their settings, "
                                  "not who they are")
            extra = dict(extra, agents=[_merge(a, b) for a, b in zip(data["agents"], extra["agents"], strict=True)])
        judge = extra.get("judge")
        if isinstance(judge, dict) and "id" in judge and judge["id"] != data.get("judge", {}).get("id"):
            raise ConfigError(f"{changes.config_file}: judge.id cannot change in a fork")
        data = _merge(data, extra)
    for agent_id, model in changes.agent_models.items():
        seats = [a for a in [*data.get("agents", []), data.get("judge", {})]
                 if isinstance(a, dict) and a.get("id") == agent_id]
        if not seats:
            known = ", ".join([*_ids(data.get("agents")), str(data.get("judge", {}).get("id", "judge"))])
            raise InputError(f"--agent-model {agent_id}={model}: no agent {agent_id!r} in the debate ({known})")
        seats[0]["model"] = model
    debate = data.setdefault("debate", {})
    if changes.summary_method is not None:
        debate.setdefault("summarization", {})["method"] = changes.summary_method
    protocol = debate.get("protocol", "rounds")
    for flag, value in (("rounds", changes.rounds), ("turns", changes.turns)):
        if value is None:
            continue
        if STEP_KEYS.get(protocol) != flag:
            raise InputError(f"--{flag}: a {protocol} debate has no {flag} to change")
        debate[flag] = value
    steps = debate.get(STEP_KEYS.get(protocol, ""), 0)
    if point.kind != "summary" and isinstance(steps, int) and steps and steps < point.number:
        raise InputError(f"--{STEP_KEYS[protocol]} {steps}: the fork starts at {point.shown}, after the last one")
    return public_config(build_config(data, Overrides(), source="the fork's configuration"))


def fork_debate(parent_id: str, point: ForkPoint, changes: ForkChanges, state_dir: Path | str | None,
                debate_id: str | None = None) -> Forked:
    """Make the fork's folder (atomically: a kill leaves no fork or a complete one) and return its id.
    The parent is read, never locked or written: a running parent is forked from what its log holds."""
    sd = StateDir(state_dir)
    parent = sd.open(parent_id)
    parent.check_files()
    cut = find_cut(parent.events_path, point)
    origin = ForkOrigin(debate=parent.id, at=point.label, seq=cut.seq, made_at=time.time())
    note_text = redact(changes.inject.strip(), known_secrets()) if changes.inject is not None else None
    if note_text is not None and not note_text:
        raise InputError("--inject: the note is empty")

    def start(event: DebateStarted) -> DebateStarted:
        config = forked_config(event.config, changes, point)
        debate = config.get("debate", {})
        total = debate.get(STEP_KEYS.get(event.protocol, ""), event.total_rounds)
        models = {a["id"]: a.get("model") for a in config.get("agents", []) if isinstance(a, dict)}
        agents = [a.model_copy(update={"model": models.get(a.id) or a.model}) for a in event.agents]
        judge_model = config.get("judge", {}).get("model") or event.judge.model
        # Its own trace id too: a fork's spans are its own trace, not more of its parent's.
        return event.model_copy(update={"config": config, "total_rounds": total, "forked_from": origin,
                                        "debate_id": fork.id, "agents": agents, "trace_id": new_trace_id(),
                                        "judge": event.judge.model_copy(update={"model": judge_model})})

    def tail(seq: int) -> list[Event]:
        if note_text is None:
            return []
        after = max(0, point.number - 1) if point.kind != "summary" else 0
        note = ModeratorNote(id=f"note-fork-{seq + 1}", text=note_text, after_round=after)
        return [NoteInjected(debate_id=fork.id, note=note)]

    fork = sd.create(debate_id or new_debate_id())
    lock = fork.lock()
    try:
        lock.acquire()
        copied = copy_history(parent.events_path, fork, cut, start, tail,
                              lambda: seed_index(parent, fork, cut.seq - 1))
    except BaseException:
        fork.discard()
        raise
    finally:
        lock.release()
    return Forked(fork.id, origin, copied)


def seed_index(parent: DebateFolder, fork: DebateFolder, through: int) -> None:
    """Start the fork's search index from a copy of its parent's, trimmed to the texts of the
    events before the fork point (the resume then indexes what else the fork's log holds): a
    long debate's fork is not indexed again from its first turn. Only from a parent at rest (no
    process writes it, no write-ahead log pending); the index is derived, so anything amiss just
    leaves the fork to build its own."""
    source = parent.path / INDEX_FILE
    if writer_alive(parent) or not source.is_file() or source.is_symlink() \
            or Path(f"{source}-wal").exists():
        return
    target = fork.path / INDEX_FILE
    try:
        shutil.copyfile(source, target)
        index = open_index(fork.path)
        try:
            index.trim_after(through)
        finally:
            index.close()
    except Exception:  # noqa: BLE001 - a cache: rebuilt from the log at the resume
        for suffix in ("", "-wal", "-shm"):
            Path(f"{target}{suffix}").unlink(missing_ok=True)

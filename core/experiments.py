"""`moot call`: send one recorded call again, as it was or edited, and keep what came back.

The call's messages are its recorded view rebuilt exactly as `moot context` shows it (the
same function the live call used), so "as it was" is byte for byte what was sent. The debate
itself never changes: each re-run is an experiment, one JSON file in `<debate>/experiments/`,
written atomically, holding the messages sent, the call's parameters (keys never: a base URL
loses any password in it), each reply with its usage and cost, and a word diff against the
reply the debate recorded.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from . import tokens
from .config import Overrides, ResolvedAgent, build_config, resolve_agent
from .context.inspect import calls_at_turn_in_log, calls_for
from .errors import InputError, StoreError
from .events import ContributionAdded, parse_event
from .models.base import Model
from .models.provider_kinds import kind_of
from .models.state import DebateState
from .pricing import call_cost
from .providers.base import CallHint, ChatRequest, Finished, Message, Restart, TextDelta
from .providers.pool import ProviderPool, default_provider_name
from .safety.secrets import redact, strip_userinfo
from .storage.files import open_regular, read_regular, write_atomic
from .storage.folder import DebateFolder

EXPERIMENTS = "experiments"
MAX_MESSAGES_BYTES = 16 << 20
ROLES = ("system", "user", "assistant")


class Reply(Model):
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    finish_reason: str | None = None
    seed: int | None = None
    diff: str = ""
    """Words of the recorded reply removed as `[-…-]`, words added as `{+…+}`, the rest as it was."""


class Experiment(Model):
    id: str
    created_at: float = Field(default_factory=time.time)
    call_id: str
    agent_id: str
    round: int
    step: str = "round"
    """`turn` in a conversation."""
    phase: str
    target_agent_id: str | None = None
    edited: bool = False
    """The messages were not the recorded ones (`--messages`)."""
    summary: str | None = None
    provider: str
    model: str
    base_url: str | None = None
    temperature: float
    max_tokens: int
    messages: list[dict[str, Any]]
    recorded_reply: str | None = None
    replies: list[Reply] = Field(default_factory=list)

    @property
    def where(self) -> str:
        target = f" → {self.target_agent_id}" if self.target_agent_id else ""
        return f"{self.step} {self.round} {self.agent_id} {self.phase}{target}"


@dataclass
class CallSpec:
    """Which recorded call: a round (with agent, phase, target) or a conversation's turn."""

    agent: str | None
    round: int | None = None
    turn: int | None = None
    phase: str | None = None
    target: str | None = None


def find_call(folder: DebateFolder, spec: CallSpec) -> tuple[DebateState, dict[str, Any]]:
    """The debate's state and the one recorded call `spec` names (its view as `moot context` gives it);
    InputError in one line when it names none, or several."""
    state = folder.load()  # what a long debate's later calls read; an older step is read from the log
    if spec.turn is not None:
        calls = calls_at_turn_in_log(folder, spec.turn, spec.agent, spec.phase)
        where = f"turn {spec.turn}"
    else:
        if spec.agent is None or spec.round is None:
            raise InputError("--round needs --agent (which agent's call)")
        full = folder.load(bounded=False) if spec.round - 1 <= state.archived_rounds else state
        calls = calls_for(full, spec.round, spec.agent, spec.phase)
        where = f"round {spec.round}"
    if spec.target is not None:
        calls = [c for c in calls if c["target_agent_id"] == spec.target]
    if not calls:
        raise InputError(f"no recorded call at {where} for those flags (`moot context` lists them)")
    # A call recorded twice (redone after a resume) is its last record; different calls need naming.
    slots = {(c["phase"], c["target_agent_id"]) for c in calls}
    if len(slots) > 1:
        shown = ", ".join(sorted(f"{p}" + (f" --target {t}" if t else "") for p, t in slots))
        raise InputError(f"{len(slots)} calls at {where}: name one with --phase or --target ({shown})")
    return state, calls[-1]


def recorded_reply(folder: DebateFolder, state: DebateState, call_id: str) -> str | None:
    """The reply the debate recorded for a call: from the state, else (a step it let go of) from
    the log, parsing only the lines that name the call."""
    for rnd in state.rounds:
        for c in rnd.contributions:
            if c.metadata.call_id == call_id:
                return c.content
    needle = json.dumps(call_id).encode("utf-8")
    try:
        with os.fdopen(open_regular(folder.events_path), "rb") as fh:
            for line in fh:
                if needle in line and b'"contribution_added"' in line and line.endswith(b"\n"):
                    event = parse_event(line)
                    if isinstance(event, ContributionAdded) and event.contribution.metadata.call_id == call_id:
                        return event.contribution.content
    except (OSError, StoreError, ValidationError, ValueError):
        return None
    return None


def read_messages(path: Path, model: str, budget: int) -> list[Message]:
    """An edited message list (`moot context --json`'s shape: a list of {role, content}, or one call
    of it holding `messages`); InputError in one line when it is not one or does not fit `budget`."""
    try:
        if os.lstat(path).st_size > MAX_MESSAGES_BYTES:
            raise InputError(f"--messages {path}: larger than {MAX_MESSAGES_BYTES >> 20} MiB")
        data = json.loads(read_regular(path))
    except (OSError, StoreError) as exc:
        raise InputError(f"--messages {path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    except (ValueError, RecursionError):
        raise InputError(f"--messages {path}: not valid JSON") from None
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict) and "messages" in data[0]:
        data = data[0]["messages"]  # `moot context --json` prints a list of calls
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list) or not data:
        raise InputError(f"--messages {path}: expected a list of {{role, content}} messages")
    out: list[Message] = []
    for i, m in enumerate(data, 1):
        if not (isinstance(m, dict) and m.get("role") in ROLES and isinstance(m.get("content"), str)):
            raise InputError(f"--messages {path}: message {i} is not a {{role, content}} message with role "
                             f"{', '.join(ROLES)}")
        out.append(Message(role=m["role"], content=m["content"]))
    need = tokens.count_messages(out, model)
    if need > budget:
        raise InputError(f"--messages {path}: {need:,} tokens, {need - budget:,} more than {model}'s window "
                         f"leaves for a view ({budget:,})")
    return out


def word_diff(old: str, new: str) -> str:
    """A word diff: removed words as `[-…-]`, added ones as `{+…+}`."""
    a, b = re.findall(r"\S+", old), re.findall(r"\S+", new)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.extend(a[i1:i2])
            continue
        if i2 > i1:
            out.append("[-" + " ".join(a[i1:i2]) + "-]")
        if j2 > j1:
            out.append("{+" + " ".join(b[j1:j2]) + "+}")
    return " ".join(out)


def the_agent(state: DebateState, agent_id: str, ov: Overrides) -> tuple[ResolvedAgent, dict[str, Any]]:
    """The call's agent as the debate's configuration (with `ov`) resolves it, and the debate's prices."""
    config = build_config(state.config, Overrides(provider=ov.provider, model=ov.model, base_url=ov.base_url))
    base_url = next((a.base_url for a in config.agents if a.base_url), None)
    seats = [a for a in [*config.agents, config.judge] if a.id == agent_id]
    if not seats:
        raise InputError(f"debate {state.id} has no agent {agent_id!r} in its configuration")
    return resolve_agent(seats[0], config, default_provider_name(base_url)), dict(config.debate.prices)


async def send(agent: ResolvedAgent, messages: list[Message], call: dict[str, Any], *, temperature: float,
               max_tokens: int, seeds: list[int | None], pool: ProviderPool, prices: dict[str, Any],
               on_text: Callable[[int, str], None], recorded: str | None) -> list[Reply]:
    """Send the messages once per seed, streaming each reply's text to `on_text(i, delta)`."""
    provider = pool.get(agent)
    replies: list[Reply] = []
    try:
        for i, seed in enumerate(seeds):
            hint = CallHint(phase=call["phase"], role=agent.role, agent_id=agent.id, round=call["round"],
                            target_agent_id=call["target_agent_id"])
            request = ChatRequest(messages=messages, model=agent.model, temperature=temperature,
                                  max_tokens=max_tokens, hint=hint, seed=seed)
            async for item in provider.stream(request):
                if isinstance(item, TextDelta):
                    on_text(i, item.text)
                elif isinstance(item, Restart):
                    on_text(i, "\n")
                elif isinstance(item, Finished):
                    c = item.completion
                    text = redact(c.content, pool.secrets)
                    cost = 0.0 if not kind_of(agent.provider).billable else call_cost(c.model or agent.model, c.prompt_tokens,
                                                                          c.completion_tokens, prices, c.cached_tokens)
                    replies.append(Reply(text=text, prompt_tokens=c.prompt_tokens,
                                         completion_tokens=c.completion_tokens, cost_usd=cost,
                                         finish_reason=c.finish_reason, seed=seed,
                                         diff=word_diff(recorded, text) if recorded is not None else ""))
    finally:
        await pool.aclose()
    return replies


def new_experiment(state: DebateState, call: dict[str, Any], agent: ResolvedAgent, **fields: Any) -> Experiment:
    now = time.time()
    n = time.strftime("%Y%m%d-%H%M%S", time.localtime(now)) + f"{int(now % 1 * 1000):03d}-{os.urandom(2).hex()}"
    return Experiment(id=f"exp-{n}", call_id=call["call_id"], agent_id=call["agent_id"], round=call["round"],
                      step="turn" if state.protocol == "conversation" else "round",
                      phase=call["phase"], target_agent_id=call["target_agent_id"], provider=agent.provider,
                      model=agent.model, base_url=strip_userinfo(agent.config.base_url), **fields)


def save(folder: DebateFolder, exp: Experiment) -> Path:
    """Write the experiment atomically beside the debate's log (which it never touches)."""
    where = folder.path / EXPERIMENTS
    where.mkdir(exist_ok=True)
    path = where / f"{exp.id}.json"
    write_atomic(path, exp.model_dump_json(indent=2).encode("utf-8"))
    return path


def experiments(folder: DebateFolder) -> list[Experiment]:
    """The debate's saved experiments, oldest first (an unreadable file is skipped)."""
    where = folder.path / EXPERIMENTS
    if not where.is_dir() or where.is_symlink():
        return []
    out: list[Experiment] = []
    for path in sorted(where.glob("exp-*.json")):
        try:
            out.append(Experiment.model_validate_json(read_regular(path)))
        except (OSError, StoreError, ValidationError, ValueError):
            continue
    return sorted(out, key=lambda e: (e.created_at, e.id))

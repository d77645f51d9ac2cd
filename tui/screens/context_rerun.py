"""The inspector's "what if": `r` sends the call shown again, `f` forks the debate at it.

A re-run is `moot call` from the inspector: the recorded messages, sent again with the call's
parameters, the reply streamed into a panel under the messages, then saved as an experiment
in the debate's folder (never in its log) with its tokens, cost and a word diff against the
recorded reply. A fork is `/fork` at this call's round and phase (a conversation: its turn). `x`
shows the experiments saved on the call (by `r` or `moot call`), replies and word diffs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...core.config import Overrides
from ...core.models.provider_kinds import kind_of
from ...core.models.state import DebateState, ViewRecord
from ...core.providers.base import Message
from ...core.safety.sanitize import terminal_safe
from ...core.storage.folder import DebateFolder


def debate_folder_of(app: Any, debate_id: str) -> tuple[DebateFolder | None, object | None]:
    """The folder of the debate a screen of `app` shows (by id), with the runtime showing it."""
    for screen in reversed(app.screen_stack):
        runtime = getattr(screen, "runtime", None)
        state = getattr(screen, "state", None)
        if runtime is not None and state is not None and getattr(state, "id", None) == debate_id:
            return runtime.debate_folder(), runtime
    return None, None


def fork_point_of(state: DebateState, record: ViewRecord) -> str:
    """Where a fork at this call starts: its turn in a conversation, else its round and phase."""
    if state.protocol == "conversation":
        return f"turn:{max(1, record.round)}"
    if record.phase in ("synthesis", "clarify") or record.round < 1:
        return f"round:{max(1, state.current_round)}"
    return f"round:{record.round}:{record.phase}"


async def rerun(state: DebateState, folder: DebateFolder, record: ViewRecord, view: dict[str, Any],
                on_text: Callable[[str], None], messages: list[Message] | None = None, *, edited: bool = False,
                summary: str | None = None) -> str:
    """Send the call again — as recorded, or `messages` (edited, `summary` naming the summary put in
    them) — streaming its reply to `on_text`; save the experiment and return the line that ends the
    panel (its id, tokens, cost) followed by the word diff."""
    from ...core.experiments import new_experiment, recorded_reply, save, send, the_agent
    from ...core.providers.pool import ProviderPool

    agent, prices = the_agent(state, record.agent_id, Overrides())
    if messages is None:
        messages = [Message(role=m["role"], content=m["content"]) for m in view["messages"]
                    if not (m.get("tool_calls") or m.get("tool_call_id"))]
    recorded = recorded_reply(folder, state, record.call_id)
    max_tokens = record.max_tokens or 1024
    pool = ProviderPool(demo_delay=0.0)
    replies = await send(agent, messages, view, temperature=agent.config.temperature, max_tokens=max_tokens,
                         seeds=[None], pool=pool, prices=prices, on_text=lambda _, text: on_text(text),
                         recorded=recorded)
    exp = new_experiment(state, view, agent, edited=edited, summary=summary, temperature=agent.config.temperature,
                         max_tokens=max_tokens,
                         messages=[dict(m) for m in messages], recorded_reply=recorded, replies=replies)
    save(folder, exp)
    reply = replies[0]
    demo = " · DEMO" if kind_of(agent.provider).scripted else ""
    head = (f"── experiment {exp.id} saved{demo} · {reply.prompt_tokens + reply.completion_tokens:,} tok · "
            f"${reply.cost_usd:.4f} ──")
    diff = f"\n\nword diff against the recorded reply ([-removed-] {{+added+}}):\n\n{reply.diff}" if reply.diff else ""
    return terminal_safe(head + diff)


def saved_experiments(folder: DebateFolder, call_id: str) -> str | None:
    """The experiments saved on this call, oldest first, as the panel shows them (None: none)."""
    from ...core.experiments import experiments
    from ...core.report.experiments import what_changed

    found = [e for e in experiments(folder) if e.call_id == call_id]
    if not found:
        return None
    out = [f"{len(found)} experiment{'s' if len(found) > 1 else ''} saved on this call"]
    for exp in found:
        out.append(f"\n── experiment {exp.id} · {what_changed(exp)} · {exp.provider} {exp.model} ──")
        for n, reply in enumerate(exp.replies, 1):
            seed = f" (seed {reply.seed})" if reply.seed is not None else ""
            out += [f"\nreply {n}{seed} · {reply.prompt_tokens + reply.completion_tokens:,} tok · "
                    f"${reply.cost_usd:.4f}\n", reply.text or "(empty)"]
            if reply.diff:
                out.append(f"\nword diff against the recorded reply ([-removed-] {{+added+}}):\n{reply.diff}")
    return terminal_safe("\n".join(out))

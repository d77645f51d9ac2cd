"""The HTML report's section per agent: what it saw in each call, message by message.

The messages are rebuilt by `core.context.inspect` from each call's record, with the same
function that built the request, so they are the ones `moot context` prints (and the server
received). A system prompt repeated in every call is shown once, at the top of the section.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..context.index import DebateIndex
from ..context.inspect import call_view, message_tiers
from ..context.view import system_text
from ..models.state import AgentInfo, DebateState, ViewRecord
from .experiments import html_block
from .html_parts import Html, anchor_id, collapsible, count

if TYPE_CHECKING:
    from ..experiments import Experiment

PHASE_WORDS = {"summarize": "summary", "turn": "turn", "synthesis": "synthesis", "score": "convergence score",
               "clarify": "clarifying questions", "rank": "ranking"}


def agent_anchor(agent_id: str) -> str:
    return anchor_id("saw", agent_id)


def people(state: DebateState) -> list[AgentInfo]:
    return [*state.agents, *([state.judge] if state.judge else [])]


class Calls:
    """Each agent's recorded calls as the steps go by: all of them, or its latest `max_calls`
    (then memory holds that many records an agent, however long the debate)."""

    def __init__(self, agent_ids: set[str], max_calls: int | None) -> None:
        self.max_calls = max_calls
        self.kept: dict[str, deque[ViewRecord]] = {a: deque(maxlen=max_calls) for a in agent_ids}
        self.counts: dict[str, int] = dict.fromkeys(agent_ids, 0)

    def add(self, records: Iterable[ViewRecord]) -> None:
        for r in records:
            if r.agent_id in self.kept:
                self.kept[r.agent_id].append(r)
                self.counts[r.agent_id] += 1

    def shown(self) -> list[ViewRecord]:
        return [r for kept in self.kept.values() for r in kept]


def agent_views(h: Html, state: DebateState, calls: Calls, index: DebateIndex,
                experiments: dict[str, list[Experiment]] | None = None) -> Iterator[str]:
    """Every agent's section (the judge's last), each call collapsible, a call at a time."""
    yield ('<section id="what-they-saw"><h2>What each agent saw</h2>'
           '<p class="muted">The exact messages of every call, rebuilt from its record '
           "(<code>moot context</code> prints the same), with the token count of each tier.</p>")
    for info in people(state):
        yield from _agent_section(h, state, index, info, list(calls.kept[info.id]), calls.counts[info.id],
                                  experiments or {})
    yield "</section>\n"


def _agent_section(h: Html, state: DebateState, index: DebateIndex, info: AgentInfo, shown: list[ViewRecord],
                   total: int, experiments: dict[str, list[Experiment]]) -> Iterator[str]:
    word = "judge" if state.judge is not None and info.id == state.judge.id else info.role
    out = [f'<section id="{agent_anchor(info.id)}"><h3>{h.text(info.name)} '
           f'<span class="tag">{h.text(info.id)} · {h.text(word)} · {h.text(info.model)}</span></h3>']
    if not shown:
        out.append('<p class="muted">No call recorded.</p></section>')
        yield "".join(out)
        return
    if len(shown) < total:
        step = "--turn" if state.protocol == "conversation" else "--round"
        out.append(f'<p class="note">{count(total)} calls; the first {count(total - len(shown))} are '
                   f"left out of this file (--max-calls). <code>moot context {h.text(state.id)} {step} N "
                   f"--agent {h.text(info.id)}</code> shows any of them.</p>")
    system = _shared_system([system_text(r, index) for r in shown])
    if system is not None:
        out.append(collapsible("System prompt (the same in every call below)", h.pre(system)))
    yield "".join(out)
    for record in shown:
        yield _call(h, state, call_view(record, index), system) + html_block(h, experiments.get(record.call_id, []))
    yield "</section>"


def _shared_system(systems: list[str]) -> str | None:
    """The system prompt when every call shown had the same one (each view opens with it)."""
    return systems[0] if len(set(systems)) == 1 and len(systems) > 1 else None


def _call(h: Html, state: DebateState, view: dict[str, Any], shared_system: str | None) -> str:
    step = "Turn" if state.protocol == "conversation" else "Round"
    phase = PHASE_WORDS.get(view["phase"], view["phase"])
    target = f" → {view['target_agent_id']}" if view["target_agent_id"] else ""
    t = view["tokens"]
    dropped = f" · {len(view['dropped_ids'])} items dropped" if view["dropped_ids"] else ""
    head = (f"{step} {view['round']} · {phase}{target} · {view['model']} · "
            f"{count(t['total'])} / {count(view['budget'])} tokens{dropped}")
    body: list[str] = []
    tools = view.get("tools") or []
    if tools:
        body.append(f'<p class="tool">Tools offered: {h.text(", ".join(tools))}</p>')
    for (tier, n), message in zip(message_tiers(view), view["messages"]):
        body.append(_message(h, message, tier, n, shared_system))
    return collapsible(h.text(head), "".join(body))


def _message(h: Html, message: dict[str, Any], tier: str, tokens: int, shared_system: str | None) -> str:
    about = f" · result of {message['tool_call_id']}" if message.get("tool_call_id") else ""
    head = (f'<div class="head">[{h.text(message["role"])}] {h.text(tier)} · {count(tokens)} tokens'
            f"{h.text(about)}</div>")
    content = message.get("content") or ""
    if message["role"] == "system" and shared_system is not None and content == shared_system:
        body = '<p class="muted">(the system prompt shown at the top of this section)</p>'
    else:
        body = h.pre(content) if content else ""
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {})
        body += (f'<p class="tool">→ tool call {h.text(call.get("id", ""))}: '
                 f'<code>{h.text(fn.get("name", ""))}({h.text(fn.get("arguments", ""))})</code></p>')
    return f'<div class="msg">{head}{body}</div>'

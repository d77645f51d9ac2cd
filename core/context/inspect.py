"""Rebuilding what an agent saw: the calls of one agent in one round, with their exact messages."""

from __future__ import annotations

from typing import Any, NamedTuple

from .. import tokens
from ..agents import require_agent
from ..errors import InspectError
from ..models.state import DebateState, Summary, ViewRecord
from ..storage.folder import DebateFolder
from .index import DebateIndex
from .tool_messages import tool_messages
from .view import history_ids, render_tiers


def resolve_agent_id(state: DebateState, name: str) -> str:
    """The id of the debater or judge `name` stands for (see `moot.core.agents`); InspectError if none."""
    return require_agent(name, state.agents, state.judge, where=f" in debate {state.id}").id


def records_for(state: DebateState, round_no: int, agent_id: str | None, phase: str | None = None) -> list[ViewRecord]:
    """The recorded calls of one step (every agent's when `agent_id` is None), oldest first."""
    word = "turns" if state.protocol == "conversation" else "rounds"
    if round_no < 1 or round_no > state.round_count:
        raise InspectError(f"debate {state.id} has {word} 1–{state.round_count}, not {round_no}")
    if round_no <= state.archived_rounds:
        raise InspectError(f"{word[:-1]} {round_no} of debate {state.id} is in its event log only; "
                           "load the state with every step (DebateFolder.load(bounded=False))")
    step = state.round(round_no)
    calls = [c for c in step.calls if agent_id is None or c.agent_id == agent_id]
    if phase:
        calls = [c for c in calls if c.phase == phase]
    if agent_id is not None and not calls and state.protocol == "conversation":
        raise InspectError.not_at_turn(agent_id, round_no, [(c.agent_id, c.phase) for c in step.calls])
    return calls


def summary_view(summary: Summary | None) -> dict[str, Any] | None:
    """The summary a view carries, with what its summarization lost (`moot.core.context.facts`)."""
    if summary is None:
        return None
    return {"id": summary.id, "round": summary.round, "covered_count": summary.covered_count,
            "blocks": len(summary.blocks) if summary.blocks is not None else None,
            "facts": summary.metadata.facts, "facts_kept": summary.metadata.facts_kept,
            "dropped_facts": [f.model_dump() for f in summary.dropped_facts or []]}


def summary_lines(summary: dict[str, Any] | None) -> list[str]:
    """What the summary a view carries lost when it was made: how many facts it kept, then each it did not."""
    if not summary or summary.get("facts") is None or summary.get("facts_kept") is None:
        return []
    lost = summary.get("dropped_facts") or []
    lines = [f"summary {summary['id']}: kept {summary['facts_kept']} of {summary['facts']} facts of what it covered"
             + (f"; lost {summary['facts'] - summary['facts_kept']}:" if lost else "")]
    lines += [f"  lost: {f['text']} ({f['source']})" for f in lost]
    return lines


def call_view(record: ViewRecord, index: DebateIndex) -> dict[str, Any]:
    tiers = render_tiers(record, index)
    return {
        "call_id": record.call_id,
        "agent_id": record.agent_id,
        "round": record.round,
        "phase": record.phase,
        "target_agent_id": record.target_agent_id,
        "model": record.model,
        "messages": [message for _, message in tiers] + tool_messages(record),
        "tiers": [tier for tier, _ in tiers],
        "tokens": record.tokens.model_dump(),
        "budget": record.budget,
        "max_tokens": record.max_tokens,
        "summary_id": record.summary_id,
        "contribution_ids": history_ids(record, index),
        "dropped_ids": record.dropped_ids,
        "tools": record.tools,
        "tool_steps": len(record.tool_steps),
        "recall": record.recall.model_dump() if record.recall is not None else None,
        "pinned": [{"key": k, "label": index.pins[k].label} for k in record.pinned if k in index.pins],
        "summary": summary_view(index.summaries.get(record.summary_id) if record.summary_id else None),
    }


def calls_for(state: DebateState, round_no: int, agent: str, phase: str | None = None) -> list[dict[str, Any]]:
    """Every call `agent` made in `round_no` (optionally one phase), oldest first."""
    agent_id = resolve_agent_id(state, agent)
    index = DebateIndex(state)
    return [call_view(r, index) for r in records_for(state, round_no, agent_id, phase)]


class Carried(NamedTuple):
    """A proposal carried from the agent's earlier refinement: where from, and the call that wrote it."""

    round: int
    type: str
    calls: list[dict[str, Any]]
    """The call that wrote the carried contribution (empty when its record is missing)."""


def carried_proposal(state: DebateState, round_no: int, agent: str) -> Carried | None:
    """Where `agent`'s proposal in `round_no` came from when it was carried (no call was made for
    it, so `calls_for` finds none), with the call that wrote it. None when it was not carried."""
    agent_id = resolve_agent_id(state, agent)
    if not state.archived_rounds < round_no <= state.round_count:
        return None
    carried = next((c for c in state.round(round_no).contributions
                    if c.agent_id == agent_id and c.type == "proposal" and c.carried_from), None)
    if carried is None:
        return None
    source = next((c for c in state.all_contributions() if c.id == carried.carried_from), None)
    if source is None:
        return Carried(round_no - 1, "refinement", [])
    call_id = source.metadata.call_id
    records = [r for rnd in state.rounds if rnd.number == source.round for r in rnd.calls if r.call_id == call_id]
    index = DebateIndex(state)
    return Carried(source.round, source.type, [call_view(r, index) for r in records] if call_id else [])


def first_view_holding(state: DebateState, index: DebateIndex, text_id: str,
                       steps: int = 400) -> ViewRecord | None:
    """The first recorded call whose view holds a contribution (verbatim, quoted or recalled) or a
    summary, looking at most `steps` rounds or turns past its own; else the call that wrote the
    contribution (None when neither is recorded)."""
    c = index.contributions.get(text_id)
    s = index.summaries.get(text_id)
    first = c.round if c is not None else s.round if s is not None else 1
    held = first - 1 - state.archived_rounds  # (a long debate's state holds its last steps only)
    for rnd in state.rounds[max(0, held): max(0, held + steps)]:
        for record in rnd.calls:
            held = (record.summary_id == text_id if s is not None else
                    text_id in record.task_contribution_ids or text_id in history_ids(record, index)
                    or (record.recall is not None and text_id in record.recall.ids))
            if held:
                return record
    call_id = c.metadata.call_id if c is not None else None
    return next((r for rnd in state.rounds for r in rnd.calls if call_id and r.call_id == call_id), None)


def calls_at_turn_in_log(folder: DebateFolder, turn: int, agent: str | None = None,
                         phase: str | None = None) -> list[dict[str, Any]]:
    """`calls_at_turn`, reading only what the turn's views need from the event log (fast on a
    10,000-turn debate); the whole state is folded only when the log cannot answer alone."""
    from .turn_reader import TurnReader

    found = TurnReader(folder).read(turn, agent, phase)
    if found is None:
        return calls_at_turn(folder.load(bounded=False), turn, agent, phase)
    records, index = found
    return [call_view(r, index) for r in records]


def calls_at_turn(state: DebateState, turn: int, agent: str | None = None,
                  phase: str | None = None) -> list[dict[str, Any]]:
    """Every call made at a conversation's turn (the summarizer's, then the speaker's), or one agent's."""
    if state.protocol != "conversation":
        raise InspectError(f"debate {state.id} is a {state.protocol} debate: use --round, not --turn")
    agent_id = resolve_agent_id(state, agent) if agent else None
    index = DebateIndex(state)
    return [call_view(r, index) for r in records_for(state, turn, agent_id, phase)]


def format_calls(calls: list[dict[str, Any]]) -> str:
    """A readable view: each call, each message with its tier and token count."""
    if not calls:
        return "no calls recorded for that agent, round and phase"
    out: list[str] = []
    for c in calls:
        t = c["tokens"]
        target = f" → {c['target_agent_id']}" if c["target_agent_id"] else ""
        out.append(f"═══ {c['agent_id']} {c['phase']}{target} · {c['model']} · {t['total']} / {c['budget']} tokens"
                   + (f" · {len(c['dropped_ids'])} items dropped" if c["dropped_ids"] else ""))
        out += recall_lines(c.get("recall"))
        out += summary_lines(c.get("summary"))
        if c.get("pinned"):
            out.append("pinned: " + ", ".join(p["label"] for p in c["pinned"]))
        tiers = message_tiers(c)
        if c.get("tools"):
            out.append(f"tools offered: {', '.join(c['tools'])} · {c.get('tool_steps', 0)} tool steps")
        for (tier, n), m in zip(tiers, c["messages"]):
            about = f" · result of {m['tool_call_id']}" if m.get("tool_call_id") else ""
            out.append(f"─── [{m['role']}] {tier} · {n} tokens{about}")
            if m["content"]:
                out.append(m["content"])
            for call in m.get("tool_calls") or []:
                fn = call.get("function", {})
                out.append(f"→ {call.get('id')}: {fn.get('name')}({fn.get('arguments')})")
        out.append("")
    return "\n".join(out)


def recall_lines(recall: dict[str, Any] | None) -> list[str]:
    """Why each item of a view's recall tier is there: the words searched, each item's score and words."""
    if not recall:
        return []
    lines: list[str] = []
    if recall.get("items"):
        lines.append(f"recall: searched {', '.join(recall['query'])} (rare words of the latest messages and the "
                     f"task); {len(recall['items'])} recalled within {recall['cap']} tokens"
                     + (f", {recall['dropped']} gave way to fit" if recall.get("dropped") else ""))
        for item in recall["items"]:
            part = " (passage)" if item.get("span") else ""
            lines.append(f"  {item['id']}{part} · score {item['score']:.2f} · {', '.join(item['terms'])}")
    held = recall.get("held") or []
    if held:  # view layout 3: the speaker's earlier blocks, where they were sent (see that turn's call for why)
        lines.append(f"recall: {len(held)} earlier block{'s' if len(held) != 1 else ''} of this speaker held where "
                     "it was sent")
        for block in held:
            ids = ", ".join(it["id"] + (" (passage)" if it.get("span") else "") for it in block["items"])
            lines.append(f"  recalled at turn {block['turn']}: {ids}")
    return lines


def message_tiers(view: dict[str, Any]) -> list[tuple[str, int]]:
    """(tier, tokens) for each message of a call view, in the order it was sent (the view's
    layout decides where recall goes; see `moot.core.context.view`)."""
    t = view["tokens"]
    names = view.get("tiers")
    if names is None:  # a view dumped before views named their tiers: the layout-1 order
        names = ["system", *(n for n in ("summary", "recall", "history", "references") if t.get(n)), "task"]
    if len(set(names)) < len(names):  # a tier in more than one message (layout 3's held recall blocks)
        tiers = [(name, tokens.count_message(m, view.get("model"))) for name, m in zip(names, view["messages"])]
    else:
        tiers = [(name, t.get(name, 0)) for name in names]
    loop = view["messages"][len(tiers):]  # the tool loop's messages, after the task
    tiers += [("tools", tokens.count_message(m, view.get("model"))) for m in loop]
    if len(tiers) != len(view["messages"]):  # a view that was shrunk differently: label by position
        tiers = [(f"message {i + 1}", 0) for i in range(len(view["messages"]))]
    return tiers

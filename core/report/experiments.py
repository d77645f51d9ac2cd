"""A debate's experiments (`moot call`, the inspector's `r` and `e`) in its reports, each under
the call it varies: in the markdown report under the contribution that call wrote (those on a
call with no contribution of its own — a summary, the synthesis — in a section of their own at
the end), in the HTML report under the call's messages in "What each agent saw".

Each shows what was changed (edited messages, a summary swapped, another model), and per reply
its tokens, cost, the reply and its word diff against the recorded reply. The text is a
model's: the markdown report makes it terminal-safe, the HTML report escapes it (`Html.text`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .html_parts import Html, collapsible, count

if TYPE_CHECKING:
    from ..experiments import Experiment


def by_call(experiments: Iterable[Experiment]) -> dict[str, list[Experiment]]:
    """The experiments keyed by the call they vary, oldest first."""
    out: dict[str, list[Experiment]] = {}
    for exp in experiments:
        out.setdefault(exp.call_id, []).append(exp)
    return out


def what_changed(exp: Experiment) -> str:
    """`as recorded`, or what differs: `messages edited`, `summary replaced by hybrid`, …"""
    changes = []
    if exp.edited:
        changes.append("messages edited")
    if exp.summary is not None:
        changes.append("no summary (the full history)" if exp.summary == "none"
                       else f"summary replaced by a {exp.summary} one")
    return ", ".join(changes) or "as recorded"


def _head(exp: Experiment) -> str:
    asks = f" · asked {len(exp.replies)} times" if len(exp.replies) > 1 else ""
    return f"Experiment {exp.id}: {what_changed(exp)} · {exp.provider} {exp.model}{asks}"


def _spend(prompt: int, completion: int, cost: float) -> str:
    return f"{prompt:,} in + {completion:,} out tokens · ${cost:.4f}"


def markdown_lines(exps: Iterable[Experiment], where: str = "") -> list[str]:
    """Each experiment as a quoted block: its head, then each reply with its spend and word diff."""
    out: list[str] = []
    for exp in exps:
        out += [f"> **{_head(exp)}**{where}", ">"]
        for n, reply in enumerate(exp.replies, 1):
            seed = f" (seed {reply.seed})" if reply.seed is not None else ""
            out += [f"> _Reply {n}{seed}: {_spend(reply.prompt_tokens, reply.completion_tokens, reply.cost_usd)}_",
                    ">", *(f"> {line}" for line in (reply.text or "(empty)").splitlines()), ">"]
            if reply.diff:
                out += ["> _Word diff against the recorded reply:_", ">", f"> {' '.join(reply.diff.split())}", ">"]
        out[-1:] = [""]
    return out


def leftover_markdown(exps: dict[str, list[Experiment]], placed: set[str], step: str) -> list[str]:
    """The experiments not placed under a contribution, in a section of their own (or nothing)."""
    rest = [e for call_id, group in exps.items() if call_id not in placed for e in group]
    if not rest:
        return []
    out = ["## Experiments on other calls", ""]
    for exp in rest:
        out += markdown_lines([exp], f" — {step} {exp.round} · {exp.agent_id} · {exp.phase}")
    return out


def html_block(h: Html, exps: Iterable[Experiment]) -> str:
    """The experiments on one call, each collapsible, under the call's messages."""
    parts = []
    for exp in exps:
        body = []
        for n, reply in enumerate(exp.replies, 1):
            seed = f" (seed {reply.seed})" if reply.seed is not None else ""
            body.append(f'<div class="msg"><div class="head">Reply {n}{h.text(seed)} · '
                        f"{count(reply.prompt_tokens)} in + {count(reply.completion_tokens)} out tokens · "
                        f"${reply.cost_usd:.4f}</div>{h.pre(reply.text or '(empty)')}")
            if reply.diff:
                body.append(f'<p class="muted">Word diff against the recorded reply:</p>{h.pre(reply.diff)}')
            body.append("</div>")
        parts.append(collapsible(h.text(_head(exp)), "".join(body)))
    return f'<div class="experiments">{"".join(parts)}</div>' if parts else ""

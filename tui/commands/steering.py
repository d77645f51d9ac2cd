"""Commands that steer the debate through the runtime: /summarize, /pause, /resume, /stop, /inject,
/pin, /unpin.

Each acts at the engine's next call boundary; the feedback line says so at once and a
`Followup` replaces it when the events show the command took effect (or was refused).
"""

from __future__ import annotations

from ...core.agents import find_agent
from ...core.context.outlook import summary_owner
from ...core.models.terms import MAX_FOCUS
from ...core.safety.sanitize import one_line_safe
from ..followups import after_inject, after_pause, after_pin, after_resume, after_stop, after_summarize
from .base import CommandContext, CommandError, UsageError, no_agent, require_engine, require_running

FROM_USAGE = "e.g. /summarize all --from turn 12 (or --from round 2): fold what came before, keep the rest"


def split_from(target: str | None, rest: str | None) -> tuple[str | None, int | None, str | None]:
    """(target, from step, focus) of `/summarize [agent|all] [--from turn N] [focus]`."""
    if target is not None and target.startswith("--from"):
        target, rest = None, f"{target} {rest or ''}"
    words = (rest or "").split()
    if not words or words[0] != "--from":
        return target, None, rest
    words = words[1:]
    if words and words[0].lower() in ("turn", "round"):
        words = words[1:]
    if not words or not words[0].isdigit() or int(words[0]) < 1:
        raise UsageError(FROM_USAGE)
    return target, int(words[0]), " ".join(words[1:]) or None


def summarize(ctx: CommandContext, target: str | None = None, focus: str | None = None) -> None:
    """`/summarize [agent|all] [--from turn N] [focus]`: a summary at the agent's next call, even below
    the threshold; with `--from`, of everything before that turn (or round), the rest kept verbatim."""
    require_engine(ctx, "summarize")
    state, runtime = ctx.state, ctx.runtime
    target, from_step, focus = split_from(target, focus)
    if target is None or target.lower() == "all":
        ids = [a.id for a in state.agents]
    else:
        agent = find_agent(target, state.agents, state.judge)
        if agent is None:
            raise no_agent(ctx, target, " (or all), then the focus: /summarize kiss keep the costs")
        if agent is state.judge:
            raise CommandError("the judge summarizes the final round by itself; /summarize takes a debater")
        ids = [agent.id]
    focus = " ".join(focus.split()) if focus else None
    if focus and len(focus) > MAX_FOCUS:
        raise CommandError(f"the focus is {len(focus)} characters; at most {MAX_FOCUS}")
    command_id: str | None = None
    for agent_id in ids if runtime.mode != "watch" else ids[:1]:
        # An attached watch sends one command (`all` or the agent) that the writer expands.
        target_id = agent_id if len(ids) == 1 or runtime.mode != "watch" else "all"
        try:
            command_id = runtime.request_summary(target_id, focus, from_step)
        except (KeyError, ValueError) as exc:
            raise CommandError(str(exc).strip("'\"")) from None
    who = "every agent" if len(ids) > 1 else ids[0]
    about = f" (focus: {focus})" if focus else ""
    since = f" of everything before {'turn' if state.protocol == 'conversation' else 'round'} {from_step}" \
        if from_step else ""
    ctx.feedback(f"summary{since} of {who} requested{about}: made at the next call boundary…")
    ctx.followups.add(*after_summarize(sorted({summary_owner(state, a) for a in ids}), command_id))


def pause(ctx: CommandContext) -> None:
    """`/pause`: hold new calls (a replay: hold the playback)."""
    require_running(ctx, "pause")
    runtime = ctx.runtime
    if runtime.paused:
        raise CommandError("already paused — /resume to continue")
    command_id = runtime.pause()
    if runtime.mode == "replay":
        ctx.feedback("replay paused — /resume (or p) continues")
    else:
        ctx.feedback("pause sent to the debate's process…" if command_id
                     else "pausing: the calls in flight finish first…")
        ctx.followups.add(*after_pause(command_id))
    ctx.controls_changed()


def resume(ctx: CommandContext) -> None:
    """`/resume`: let a paused debate (or replay) go on."""
    require_running(ctx, "resume")
    runtime = ctx.runtime
    if not runtime.paused:
        raise CommandError("not paused")
    command_id = runtime.resume()
    ctx.feedback("resume sent to the debate's process…" if command_id else "resumed")
    ctx.followups.add(*after_resume(command_id))
    ctx.controls_changed()


def stop(ctx: CommandContext) -> None:
    """`/stop`: end the debate at the next call boundary (saved, resumable)."""
    require_engine(ctx, "stop")
    command_id = ctx.runtime.stop()
    ctx.feedback("stopping at the next call boundary…")
    ctx.followups.add(*after_stop(ctx.state.id, command_id))


def inject(ctx: CommandContext, text: str | None = None) -> None:
    """`/inject TEXT`: a moderator note every agent sees verbatim from its next call on."""
    if not text or not text.strip():
        raise UsageError("e.g. /inject Keep it simple")
    require_engine(ctx, "inject")
    try:
        command_id = ctx.runtime.inject(text.strip())
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if command_id:
        ctx.feedback("note sent to the debate's process…")
        ctx.followups.add(*after_inject(command_id))
    else:
        ctx.feedback("moderator note added: every agent sees it from its next call on")


def pin(ctx: CommandContext, item: str | None = None) -> None:
    """`/pin ITEM`: keep an item (`turn 12`, `round 2 AGENT [proposal|critique|refinement|answer]`)
    verbatim in every later view of the agents that saw it."""
    _pin(ctx, item, unpin=False)


def unpin(ctx: CommandContext, item: str | None = None) -> None:
    """`/unpin ITEM`: later views carry it no more."""
    _pin(ctx, item, unpin=True)


def _pin(ctx: CommandContext, item: str | None, *, unpin: bool) -> None:
    name = "unpin" if unpin else "pin"
    if not item or not item.strip():
        raise UsageError(f"e.g. /{name} turn 12, /{name} round 2 architect proposal, /{name} constraint 1")
    require_engine(ctx, name)
    runtime = ctx.runtime
    try:
        command_id = runtime.unpin(item) if unpin else runtime.pin(item)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if command_id:
        ctx.feedback(f"{name} sent to the debate's process…")
        ctx.followups.add(*after_pin(command_id))
    else:
        what = one_line_safe(item, 80)
        ctx.feedback(f"unpinned {what}: later views may summarize it" if unpin
                     else f"pinned {what}: kept verbatim in every later view")

"""`moot context`: exactly what an agent saw in a round or a turn, rebuilt from the debate's provenance."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from moot.core.errors import ExitCode, InputError

from .flags import PHASES, add_debate_id, add_state_dir, open_debate, positive_int

if TYPE_CHECKING:
    from .flags import Subcommands


def register(sub: Subcommands) -> None:
    ctx = sub.add_parser("context", help="show exactly what an agent saw in a round")
    add_debate_id(ctx)
    which = ctx.add_mutually_exclusive_group(required=True)
    which.add_argument("--round", type=positive_int, help="a round (rounds, simultaneous)")
    which.add_argument("--turn", type=positive_int, help="a turn (conversation)")
    ctx.add_argument("--agent", help="agent id, name or role (or the judge: its id or `judge`); with --turn, "
                                     "default: every call of that turn (the speaker's, the summarizer's)")
    ctx.add_argument("--phase", choices=PHASES)
    ctx.add_argument("--json", action="store_true")
    add_state_dir(ctx)
    ctx.set_defaults(handler=cmd_context)


def cmd_context(args: argparse.Namespace) -> int:
    from moot.core.context.inspect import calls_at_turn_in_log, calls_for, carried_proposal, format_calls, resolve_agent_id
    from moot.core.safety.sanitize import json_safe, terminal_safe

    note = None
    if args.turn is not None:
        calls = calls_at_turn_in_log(open_debate(args), args.turn, args.agent, args.phase)
    elif args.agent is None:
        raise InputError("--round needs --agent (which agent's calls)")
    else:
        folder = open_debate(args)
        state = folder.load()
        if args.round - 1 <= state.archived_rounds:  # a step a long debate keeps in its log only
            state = folder.load(bounded=False)
        calls = calls_for(state, args.round, args.agent, args.phase)
        carried = carried_proposal(state, args.round, args.agent) if args.phase in (None, "proposal") else None
        if carried is not None:
            agent_id = resolve_agent_id(state, args.agent)
            note = (f"{agent_id}'s round {args.round} proposal was carried from its round {carried.round} "
                    f"{carried.type}: no call was made for it")
            if args.phase == "proposal":  # show the call that wrote it
                calls = [{**c, "carried_as": f"round {args.round} proposal"} for c in carried.calls]
                note += "; the call that wrote it:" if calls else " (that call's record is missing)"
            else:
                note += f" (`--round {carried.round} --phase {carried.type}` shows the call that wrote it)"
    if args.json:
        print(json_safe(json.dumps(calls, indent=2, ensure_ascii=False)))
        return ExitCode.OK
    if note is not None:
        print(terminal_safe(note))
    if calls or note is None:
        print(terminal_safe(format_calls(calls)))
    return ExitCode.OK

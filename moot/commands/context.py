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
    from moot.core.context.inspect import calls_at_turn_in_log, calls_for, format_calls
    from moot.core.safety.sanitize import json_safe, terminal_safe

    if args.turn is not None:
        calls = calls_at_turn_in_log(open_debate(args), args.turn, args.agent, args.phase)
    elif args.agent is None:
        raise InputError("--round needs --agent (which agent's calls)")
    else:
        calls = calls_for(open_debate(args).load(), args.round, args.agent, args.phase)
    if args.json:
        print(json_safe(json.dumps(calls, indent=2, ensure_ascii=False)))
    else:
        print(terminal_safe(format_calls(calls)))
    return ExitCode.OK

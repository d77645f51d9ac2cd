"""`moot list` and `moot show`: the saved debates, and one of them in brief."""

from __future__ import annotations

import argparse
import collections
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, cast

from moot.core.errors import ExitCode

from .flags import add_debate_id, add_state_dir, open_debate

if TYPE_CHECKING:
    from moot.core.models.state import DebateState, Round, Summary

    from .flags import Subcommands


def register(sub: Subcommands) -> None:
    ls = sub.add_parser("list", help="list saved debates")
    add_state_dir(ls)
    ls.set_defaults(handler=cmd_list)

    show = sub.add_parser("show", help="show a saved debate")
    add_debate_id(show)
    show.add_argument("--json", action="store_true", help="print the whole state as JSON")
    add_state_dir(show)
    show.set_defaults(handler=cmd_show)


def cmd_list(args: argparse.Namespace) -> int:
    import shutil

    from moot.core.safety.sanitize import one_line_safe
    from moot.core.storage.state_dir import StateDir, summarize_folder

    sd = StateDir(args.state_dir)
    sd.clean_pending()  # debates whose start was cut short: published if resumable, else removed
    rows = [summarize_folder(f) for f in sd.debates()]
    if not rows:
        where = sd.root.absolute()  # "no debates in debates" does not say which folder was read
        print(f"no debates in {where} (--state-dir or MOOT_STATE_DIR name another folder)", file=sys.stderr)
        return ExitCode.OK
    rows.sort(key=lambda r: (cast(float, r["created_at"]), str(r["id"])), reverse=True)  # newest first
    # No CREATED column: an id is its creation time (YYYYMMDD-HHMMSS-xxxx), and the problem needs the room.
    table = [["ID", "STATUS", "PROGRESS", "PROVIDER"]]
    problems = ["PROBLEM"]
    for r in rows:
        providers = [str(p) for p in cast("list[object]", r["providers"])]
        progress = f"{r['rounds']} {r['steps']}" if r.get("steps") else ""
        table.append([one_line_safe(str(r["id"]), 40), str(r["status"]), progress,
                      "+".join("DEMO" if p == "demo" else one_line_safe(p, 12) for p in providers)])
        problems.append(str(r["problem"]))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    used = sum(widths) + 2 * len(widths)
    room = max(16, shutil.get_terminal_size((120, 24)).columns - used)  # the problem is cut, not wrapped
    for row, problem in zip(table, problems, strict=True):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        print("  ".join([*cells, one_line_safe(problem, room)]).rstrip())
    return ExitCode.OK


def state_json(state: DebateState, steps: Iterable[Round]) -> Iterator[str]:
    """`state` as indented JSON with every step in `rounds`, the steps given one at a time (read
    from the log: a long debate's state is never whole in memory); the text pydantic would write."""
    head = state.model_copy(update={"rounds": [], "archived_rounds": 0}).model_dump_json(indent=2, warnings=False)
    at = head.index('\n  "rounds": []') + len('\n  "rounds": ')
    yield head[:at] + "["
    sep = "\n"
    for rnd in steps:
        yield sep + "    " + rnd.model_dump_json(indent=2, warnings=False).replace("\n", "\n    ")
        sep = ",\n"
    yield ("\n  ]" if sep != "\n" else "]") + head[at + 2:]


def cmd_show(args: argparse.Namespace) -> int:
    from moot.core.inputs import truncation_note
    from moot.core.observe.describe import adaptive_line
    from moot.core.observe.printer import solution_text
    from moot.core.safety.sanitize import json_safe, one_line_safe, terminal_safe
    from moot.core.storage.state_dir import shown_status

    folder = open_debate(args)
    state = folder.load()
    status = shown_status(folder, state.status)  # as `moot list` says it: a killed debate is not running
    if args.json:
        for piece in state_json(state.model_copy(update={"status": status}), folder.steps()):
            sys.stdout.write(json_safe(piece))
        sys.stdout.write("\n")
        return ExitCode.OK

    def say(line: str) -> None:
        """One line of text from the debate's files, made safe for the terminal."""
        sys.stdout.write(terminal_safe(line) + "\n")

    steps = "turns" if state.protocol == "conversation" else "rounds"
    say(f"debate {state.id} · {state.protocol} · {status} · {state.round_count}/{state.total_rounds} {steps}")
    if status == "unfinished":
        flag = f" --state-dir {args.state_dir}" if args.state_dir else ""
        say(f"  (its process ended before the debate did; continue with `moot resume {state.id}{flag}`)")
    say(f"problem: {one_line_safe(state.problem.splitlines()[0] if state.problem else '', 200)}")
    truncated = truncation_note(state.problem)
    if truncated is not None:
        say(f"  ({truncated}; it was run with --allow-truncate)")
    say("agents: " + ", ".join(f"{a.id} ({a.role}, {a.provider}:{one_line_safe(a.model, 80)})" for a in state.agents))
    if any(a.provider == "demo" for a in [*state.agents, *([state.judge] if state.judge else [])]):
        say("provider: DEMO (offline, scripted answers, not a real model)")
    from moot.core.report.grounding import summary_lines

    for line in summary_lines(state):  # references, MCP servers and their tools
        say(line)
    if state.protocol == "conversation":
        messages, rolls = 0, 0
        last: collections.deque[Summary] = collections.deque(maxlen=5)
        for rnd in folder.steps():  # read from the log a turn at a time: a long debate is never whole in memory
            messages += len(rnd.contributions)
            for s in [*rnd.replaced_summaries, *rnd.summaries.values()]:
                rolls += 1
                last.append(s)
        say(f"turns: {messages} messages; rolling summaries: {rolls}")
        for s in last:
            say(f"  turn {s.round}: {s.agent_id} {s.trigger}, turns 1–{s.covered_count}, "
                f"{s.metadata.before_tokens}→{s.metadata.after_tokens} tok, {s.written_by}")
    for rnd in folder.steps() if state.protocol != "conversation" else []:
        kinds: dict[str, int] = {}
        for c in rnd.contributions:
            kinds[c.type] = kinds.get(c.type, 0) + 1
        replaced = {s.id for s in rnd.replaced_summaries}
        summ = ", ".join(f"{s.agent_id} {s.metadata.before_tokens}→{s.metadata.after_tokens} tok {s.written_by}"
                         + (" (replaced)" if s.id in replaced else "")
                         for s in [*rnd.replaced_summaries, *rnd.summaries.values()])
        say(f"round {rnd.number}: " + ", ".join(f"{v} {k}s" for k, v in kinds.items())
            + (f"; summaries: {summ}" if summ else ""))
        for d in (d for d in state.adaptive if d.round == rnd.number):
            say("  " + adaptive_line(d))
        for c in rnd.contributions:
            if c.metadata.clipped_at is not None:
                say(f"  clipped: {c.agent_id} {c.type} ran far past its token limit; moot stopped reading it "
                    f"at {c.metadata.clipped_at:,} bytes")
    t = state.totals
    cached = (f" ({t.cached_tokens} from the provider's prompt cache, {t.cached_tokens / t.prompt_tokens:.0%})"
              if t.cached_tokens and t.prompt_tokens else "")
    say(f"tokens: {t.prompt_tokens} prompt{cached}, {t.completion_tokens} completion")
    if state.error:
        label = "interrupted by" if state.status == "interrupted" else "error"
        say(f"{label}: {one_line_safe(state.error, 600)}")
    if state.final_solution:
        say("\n" + solution_text(state))
    return ExitCode.OK

"""`moot list` and `moot show`: the saved debates, and one of them in brief."""

from __future__ import annotations

import argparse
import collections
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, cast

from moot.core.errors import ExitCode

from .flags import add_debate_id, add_state_dir, open_debate, positive_int

if TYPE_CHECKING:
    from moot.core.models.state import DebateState, Round, Summary

    from .flags import Subcommands


STATUSES = ["running", "completed", "failed", "interrupted", "stopped", "stopped_budget", "unfinished", "unreadable"]
"""What `moot list` shows in STATUS (`unfinished`: its process ended mid-way)."""


def register(sub: Subcommands) -> None:
    from moot.core.models.terms import PROTOCOL_NAMES

    ls = sub.add_parser("list", help="list saved debates (a bench's debates as one entry)")
    ls.add_argument("--limit", type=positive_int, metavar="N", help="only the N newest entries")
    ls.add_argument("--status", choices=STATUSES, help="only debates with this status")
    ls.add_argument("--protocol", choices=list(PROTOCOL_NAMES), help="only debates of this protocol")
    ls.add_argument("--bench", metavar="ID", help="the debates of one bench (its entry's id, b-…), one a line")
    add_state_dir(ls)
    ls.set_defaults(handler=cmd_list)

    show = sub.add_parser("show", help="show a saved debate")
    add_debate_id(show)
    show.add_argument("--json", action="store_true", help="print the whole state as JSON")
    add_state_dir(show)
    show.set_defaults(handler=cmd_show)


def cmd_list(args: argparse.Namespace) -> int:
    import shutil

    from moot.core.models.provider_kinds import kind_of
    from moot.core.safety.sanitize import one_line_safe
    from moot.core.storage.state_dir import StateDir, summarize_folder
    from moot.core.storage.tidy import bench_group

    sd = StateDir(args.state_dir)
    sd.clean_pending()  # debates whose start was cut short: published if resumable, else removed
    folders = sd.debates()
    if args.bench:
        folders = [f for f in folders if bench_group(f.id) == args.bench]
        if not folders:
            print(f"moot: no bench {one_line_safe(args.bench, 40)!r} in {sd.root.absolute()}; its id is the b-… "
                  "entry of `moot list`", file=sys.stderr)
            return ExitCode.INPUT
    rows = [r for r in (summarize_folder(f) for f in folders)
            if (args.status is None or r["status"] == args.status)
            and (args.protocol is None or r.get("protocol") == args.protocol)]
    if not rows:
        where = sd.root.absolute()  # "no debates in debates" does not say which folder was read
        which = " that match" if args.status or args.protocol else ""
        print(f"no debates{which} in {where} (--state-dir or MOOT_STATE_DIR name another folder)", file=sys.stderr)
        return ExitCode.OK
    if not args.bench:
        rows = group_benches(rows)
    rows.sort(key=lambda r: (cast(float, r["created_at"]), str(r["id"])), reverse=True)  # newest first
    if args.limit is not None:
        rows = rows[:args.limit]
    # No CREATED column: an id is its creation time (YYYYMMDD-HHMMSS-xxxx), and the problem needs the room.
    table = [["ID", "STATUS", "PROGRESS", "PROVIDER"]]
    problems = ["PROBLEM"]
    for r in rows:
        providers = [str(p) for p in cast("list[object]", r["providers"])]
        progress = f"{r['rounds']} {r['steps']}" if r.get("steps") else str(r["rounds"])
        table.append([one_line_safe(str(r["id"]), 40), str(r["status"]), progress,
                      "+".join(one_line_safe(kind_of(p).show(), 12) for p in providers)])
        fork = str(r.get("forked_from") or "")  # a fork says where its history came from
        problems.append(f"{fork} · {r['problem']}" if fork else str(r["problem"]))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    used = sum(widths) + 2 * len(widths)
    room = max(16, shutil.get_terminal_size((120, 24)).columns - used)  # the problem is cut, not wrapped
    for row, problem in zip(table, problems, strict=True):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        print("  ".join([*cells, one_line_safe(problem, room)]).rstrip())
    return ExitCode.OK


def group_benches(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """A bench's debates (one per question and protocol: hundreds) folded into one row that says
    how many, in which protocols and statuses; `moot list --bench ID` lists them."""
    from moot.core.storage.tidy import bench_group

    alone: list[dict[str, object]] = []
    benches: dict[str, list[dict[str, object]]] = {}
    for r in rows:
        group = bench_group(str(r["id"]))
        if group is None:
            alone.append(r)
        else:
            benches.setdefault(group, []).append(r)
    for group, members in benches.items():
        statuses = collections.Counter(str(m["status"]) for m in members)
        protocols = collections.Counter(str(m.get("protocol", "")) for m in members)
        alone.append({
            "id": group,
            "status": ", ".join(f"{n} {s}" for s, n in statuses.most_common()),
            "rounds": f"{len(members)} debates",
            "created_at": max(cast(float, m["created_at"]) for m in members),
            "providers": sorted({str(p) for m in members for p in cast("list[object]", m["providers"])}),
            "problem": "bench: " + ", ".join(f"{p} ×{n}" for p, n in protocols.items())
                       + f" (moot list --bench {group})",
        })
    return alone


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
    from moot.core.models.provider_kinds import any_scripted
    from moot.core.observe.describe import adaptive_line
    from moot.core.observe.printer import solution_text
    from moot.core.safety.sanitize import json_safe, one_line_safe, terminal_safe
    from moot.core.storage.state_dir import fork_label, shown_status

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
    if state.forked_from is not None:
        say(f"{fork_label(state)}: a fork; its history before that point is that debate's")
    if status == "unfinished":
        flag = f" --state-dir {args.state_dir}" if args.state_dir else ""
        say(f"  (its process ended before the debate did; continue with `moot resume {state.id}{flag}`)")
    say(f"problem: {one_line_safe(state.problem.splitlines()[0] if state.problem else '', 200)}")
    truncated = truncation_note(state.problem)
    if truncated is not None:
        say(f"  ({truncated}; it was run with --allow-truncate)")
    say("agents: " + ", ".join(f"{a.id} ({a.role}, {a.provider}:{one_line_safe(a.model, 80)})" for a in state.agents))
    if any_scripted(a.provider for a in [*state.agents, *([state.judge] if state.judge else [])]):
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
    from moot.core.experiments import experiments

    for exp in experiments(folder):  # `moot call` re-runs, kept beside the log (which they never change)
        spent = sum(r.prompt_tokens + r.completion_tokens for r in exp.replies)
        say(f"experiment {exp.id}: {exp.where}, {'edited' if exp.edited else 'as recorded'}"
            + (f", summary {exp.summary}" if exp.summary else "")
            + f" · {exp.provider}:{one_line_safe(exp.model, 80)} · {len(exp.replies)} repl"
            + ("y" if len(exp.replies) == 1 else "ies") + f" · {spent} tok · ${sum(r.cost_usd for r in exp.replies):.4f}")
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

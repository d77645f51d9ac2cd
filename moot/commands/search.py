"""`moot search QUERY`: find words in saved debates (each debate's own full-text index)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from moot.core.errors import ExitCode, InputError

from .flags import add_state_dir, completes, positive_int

if TYPE_CHECKING:
    from moot.core.search.debates import DebateHit

    from .flags import Subcommands

MAX_QUERY_CHARS = 10_000
"""A longer query is cut (its first words are what is searched anyway)."""


def register(sub: Subcommands) -> None:
    p = sub.add_parser("search", help="search the messages, contributions, summaries and notes of saved debates")
    p.add_argument("query", nargs="+", help="words to find (any text: quotes and operators are taken as words)")
    completes(p.add_argument("--debate", metavar="ID", help="search this debate only (default: every saved one)"),
              "debate")
    p.add_argument("--limit", type=positive_int, default=20, help="at most this many hits (default 20)")
    p.add_argument("--json", action="store_true", help="the hits as JSON")
    add_state_dir(p)
    p.set_defaults(handler=cmd_search)


def cmd_search(args: argparse.Namespace) -> int:
    from pathlib import Path

    from moot.core.safety.sanitize import one_line_safe
    from moot.core.search.debates import find_debate, saved_debates, search_debates
    from moot.core.search.index import match_expression

    query = " ".join(args.query)[:MAX_QUERY_CHARS]
    if match_expression(query) is None:
        raise InputError("the query has no word to search for")
    root = Path(args.state_dir or os.environ.get("MOOT_STATE_DIR") or "debates")
    folders = [find_debate(root, args.debate)] if args.debate else saved_debates(root)
    if not folders:
        print(f"no debates in {root.absolute()} (--state-dir or MOOT_STATE_DIR name another folder)", file=sys.stderr)
        return ExitCode.OK
    results = search_debates(folders, query, limit=args.limit)
    for note in results.notes:  # a note names a folder of the state dir: untrusted text
        print(f"moot: {one_line_safe(note, 600)}", file=sys.stderr)
    if args.json:
        print(_json(results.hits))
    else:
        for dh in results.hits:
            print(_line(dh))
            print(f"  {_excerpt(dh)}")
    if not results.hits:
        n = results.searched
        print(f"no match in {n} debate{'s' if n != 1 else ''}", file=sys.stderr)
    return ExitCode.OK


def _line(dh: DebateHit) -> str:
    from moot.core.safety.sanitize import one_line_safe

    h, d = dh.hit, dh.debate
    kind = "" if h.kind == "message" else f" · {h.kind}"
    return one_line_safe(f"{d.id} · {d.step_word} {h.step} · {d.speaker(h.agent_id)}{kind} · score {h.score:.1f}")


def _excerpt(dh: DebateHit) -> str:
    """The excerpt on one line, matched words bold on a terminal (NO_COLOR: in brackets)."""
    from moot.core.safety.sanitize import one_line_safe
    from moot.core.search.debates import CLOSE, OPEN

    text = one_line_safe(dh.hit.excerpt)  # the marks are private-use characters: kept, everything unsafe goes
    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        return text.replace(OPEN, "\x1b[1;7m").replace(CLOSE, "\x1b[0m")
    return text.replace(OPEN, "[").replace(CLOSE, "]")


def _json(hits: list[DebateHit]) -> str:
    import json

    from moot.core.safety.sanitize import json_safe
    from moot.core.search.debates import CLOSE, OPEN, strip_marks

    rows = []
    for dh in hits:
        h, d = dh.hit, dh.debate
        rows.append({"debate_id": d.id, "problem": d.problem.strip().splitlines()[0] if d.problem.strip() else "",
                     "protocol": d.protocol, d.step_word: h.step, "kind": h.kind, "agent_id": h.agent_id,
                     "speaker": d.speaker(h.agent_id), "id": h.doc_id, "score": round(h.score, 4),
                     "excerpt": h.excerpt.replace(OPEN, "[").replace(CLOSE, "]"),
                     "matches": _matches(h.excerpt), "text": strip_marks(h.excerpt)})
    return json_safe(json.dumps(rows, ensure_ascii=False, indent=2))


def _matches(excerpt: str) -> list[str]:
    from moot.core.search.debates import CLOSE, OPEN

    out = []
    for part in excerpt.split(OPEN)[1:]:
        word = part.split(CLOSE, 1)[0]
        if word and word not in out:
            out.append(word)
    return out

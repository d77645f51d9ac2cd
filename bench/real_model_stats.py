"""Statistics of one debate run against a real model, read from its `events.jsonl`.

Usage: python bench/real_model_stats.py <debate folder | state dir | events.jsonl> [--n-ctx N]

Given a state dir (a folder of debates), the newest debate in it is used. Only the
standard library is used and every field is optional, so the printer keeps working
while the event schema changes.

--n-ctx N: the server's window per slot. While contributions carry no `finish_reason`,
a reply is then reported as "probably cut" when prompt + completion tokens reached N
(the server stopped it at the window) or when its completion tokens equal the
configured `reserve_output_tokens` (the max_tokens moot asked for).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

# Server refusals for a prompt larger than the window: llama.cpp ("exceeds the available
# context size"), OpenAI ("context_length_exceeded"), vLLM ("maximum context length") ...
LENGTH_REFUSAL = re.compile(
    r"context[ _-]?(?:size|length|window)|context_length_exceeded|too (?:long|many tokens)|n_ctx",
    re.I,
)
DEGENERATE = re.compile(r"degenerate|repetit", re.I)


def find_events(arg: str) -> Path:
    p = Path(arg)
    if p.is_file():
        return p
    if (p / "events.jsonl").is_file():
        return p / "events.jsonl"
    logs = sorted(p.glob("*/events.jsonl"), key=lambda f: f.stat().st_mtime)
    if not logs:
        sys.exit(f"no events.jsonl in {p} or its subfolders")
    return logs[-1]


def load(path: Path) -> list[dict[str, Any]]:
    events = []
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            print(f"  (line {n} of {path.name} is not JSON: skipped)", file=sys.stderr)
            continue
        if isinstance(ev, dict):
            events.append(ev)
    return events


def get(d: Any, *keys: str, default: Any = None) -> Any:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d


def num(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else 0.0


def main(argv: list[str]) -> int:
    args = argv[1:]
    n_ctx = 0
    if "--n-ctx" in args:
        i = args.index("--n-ctx")
        try:
            n_ctx = int(args[i + 1])
        except (IndexError, ValueError):
            n_ctx = 0
        del args[i:i + 2]
    if len(args) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path = find_events(args[0])
    events = load(path)
    types = Counter(str(e.get("type", "?")) for e in events)

    # status: the terminal event, if any
    status = "incomplete (no debate_completed / debate_failed event)"
    for e in events:
        t = e.get("type")
        if t == "debate_completed":
            status = f"completed ({e.get('status', 'completed')})"
        elif t == "debate_failed":
            status = f"FAILED: {str(e.get('error', ''))[:300]}"
        elif t == "debate_interrupted":
            status = f"interrupted ({e.get('status', '')}: {e.get('reason', '')})"

    # refusals for length: failed requests whose error mentions the context window (one
    # call_failed per refused request); warnings about them (e.g. "... failed and was
    # skipped") are counted apart so that one refusal is not counted twice
    refusals: list[str] = []
    for e in events:
        text = e.get("error")
        if e.get("type") == "call_failed" and isinstance(text, str) and LENGTH_REFUSAL.search(text):
            retry = " (will retry)" if e.get("will_retry") else ""
            refusals.append(f"{e.get('agent_id') or '-'}{retry}: {text[:200]}")
    length_warnings = [
        str(e.get("message", "")) for e in events
        if e.get("type") == "warning" and LENGTH_REFUSAL.search(str(e.get("message", "")))
    ]
    other_failures = [
        e for e in events
        if e.get("type") == "call_failed" and not LENGTH_REFUSAL.search(str(e.get("error", "")))
    ]

    # contributions: tokens, latency, replies cut for length
    contribs = [get(e, "contribution", default={}) for e in events if e.get("type") == "contribution_added"]
    calls = [c for c in contribs if not c.get("carried_from")]
    finish_known = [c for c in calls if get(c, "metadata", "finish_reason") is not None]
    cut = [c for c in calls if get(c, "metadata", "finish_reason") == "length"]
    prompt_toks = sum(num(get(c, "metadata", "prompt_tokens")) for c in calls)
    compl_toks = sum(num(get(c, "metadata", "completion_tokens")) for c in calls)
    latency_ms = sum(num(get(c, "metadata", "latency_ms")) for c in calls)
    max_prompt = max((num(get(c, "metadata", "prompt_tokens")) for c in calls), default=0)
    started = next((e for e in events if e.get("type") == "debate_started"), {})
    reserve = num(get(started, "config", "debate", "context", "reserve_output_tokens"))
    max_ctx_cfg = get(started, "config", "debate", "context", "max_context_tokens")
    at_window = [c for c in calls if n_ctx and num(get(c, "metadata", "prompt_tokens"))
                 + num(get(c, "metadata", "completion_tokens")) >= n_ctx]
    at_cap = [c for c in calls if reserve and num(get(c, "metadata", "completion_tokens")) == reserve]
    probably_cut = {id(c) for c in at_window + at_cap}

    # judge
    synth = [get(e, "solution", default={}) for e in events if e.get("type") == "synthesis_completed"]
    sol = synth[-1] if synth else None

    # summaries
    summaries = [e for e in events if e.get("type") == "summary_added"]
    methods = Counter(str(get(e, "summary", "method", default="?")) for e in summaries)
    warnings = [str(e.get("message", "")) for e in events if e.get("type") == "warning"]
    degenerate = [w for w in warnings if DEGENERATE.search(w)]

    ts = [num(e.get("ts")) for e in events if num(e.get("ts")) > 0]
    wall = (max(ts) - min(ts)) if ts else 0.0

    print(f"debate:                         {path.parent}")
    print(f"status:                         {status}")
    print(f"requests refused for length:    {len(refusals)}  (target 0)")
    for r in refusals[:10]:
        print(f"    {r}")
    if len(refusals) > 10:
        print(f"    ... {len(refusals) - 10} more")
    if length_warnings:
        print(f"  warnings about them:          {len(length_warnings)} (e.g. {length_warnings[0][:90]!r})")
    if other_failures:
        print(f"other failed calls:             {len(other_failures)}")
        for e in other_failures[:5]:
            print(f"    {e.get('agent_id', '-')}: {str(e.get('error', ''))[:200]}")
    if finish_known:
        print(f"replies cut for length:         {len(cut)} of {len(calls)} contributions")
    else:
        print(f"replies cut for length:         unknown (no finish_reason in contribution metadata;"
              f" {len(calls)} contributions)")
        if n_ctx or reserve:
            print(f"  probably cut (inferred):      {len(probably_cut)} of {len(calls)}:"
                  f" {len(at_window)} reached the {n_ctx or '?'}-token window (prompt + completion),"
                  f" {len(at_cap)} hit max_tokens = reserve_output_tokens ({int(reserve) or '?'})")
    if max_ctx_cfg is not None or n_ctx:
        print(f"window:                         moot max_context_tokens={max_ctx_cfg},"
              f" reserve_output_tokens={int(reserve) or '?'}; server n_ctx per slot={n_ctx or '?'}")
    if sol is None:
        print("judge's confidence:             no synthesis")
    else:
        parsed = sol.get("parsed")
        print(f"judge's confidence:             {'parsed' if parsed else 'NOT parsed' if parsed is False else 'parsed=?'}"
              f", confidence={sol.get('confidence')}")
    rejected = f", {len(degenerate)} rejected as degenerate" if degenerate else ", 0 rejected as degenerate"
    by_method = ", ".join(f"{k}: {v}" for k, v in sorted(methods.items())) or "-"
    print(f"summaries made:                 {len(summaries)} ({by_method}){rejected}")
    for w in degenerate[:5]:
        print(f"    {w[:200]}")
    other_warnings = [w for w in warnings if not DEGENERATE.search(w) and not LENGTH_REFUSAL.search(w)]
    if other_warnings:
        print(f"other warnings:                 {len(other_warnings)}")
        for w in other_warnings[:5]:
            print(f"    {w[:200]}")
    if latency_ms > 0:
        print(f"completion tokens/s:            {compl_toks / (latency_ms / 1000):.1f} per call"
              f" ({int(compl_toks)} completion tokens / {latency_ms / 1000:.1f} s summed call latency,"
              f" prompt processing included)")
    else:
        print("completion tokens/s:            n/a (no contribution latency recorded)")
    if wall > 0:
        print(f"  aggregate:                    {compl_toks / wall:.1f} completion tokens/s of wall time"
              f" (calls run in parallel); {int(prompt_toks)} prompt tokens, largest prompt {int(max_prompt)}")
    print(f"wall time:                      {wall:.1f} s (first to last event)")
    print(f"events:                         {dict(sorted(types.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Prompt cache: how much of what moot sends a provider can serve from its prefix cache.

Run: .venv/bin/python bench/cache.py [--turns 60] [--rounds 3] [--chars 2000]

Three debates of 3 agents (architect, performance, kiss) against the loopback
OpenAI-compatible server, with 2,000-character technical prose replies (`tests/prose.py`,
seeded by the request itself) and moot's defaults otherwise:
- rounds, 3 rounds;
- conversation, 60 turns, at the seed's 8,000-token view;
- conversation, 60 turns, at a 32,000-token view (`max_context_tokens = 32000`, and the
  verbatim window's cap scaled with it: `recent_tokens = 20000`, `summary_tokens = 4000`).

With `--base-url URL --model NAME` it runs the rounds debate against that server instead
(llama.cpp's `llama-server`, say; `--rounds 2 --max-tokens 200` keeps a CPU run short) and
prints the share by the server's own count: the `cached_tokens` (or llama.cpp `timings.cache_n`)
it reported, as moot recorded them, over the prompt tokens it reported.

With `--explain` it also prints, for each request, where it first differs from the same
speaker's previous one (the message, its first line, the character, the text on both sides),
and a tally of those places: what breaks the prefix a provider could have served; and the
ceiling: the share if every paragraph a request repeats from the same speaker's previous
request were served from cache wherever it stands (what no layout can beat: each request
still reads its new messages, the new summary block and its task for the first time).

With `--layout N` new debates take view layout N instead of the newest (to measure a change
of layout against the one before it in one sitting). With `--window N` the real-server
conversation's view is N tokens (`max_context_tokens`) instead of moot's 8,000, so that a small
model's short replies still make the summary roll within a few dozen turns.

For each it prints the share of the prompt tokens that repeat the start of the same
speaker's previous request (`tests/prefix_cache.py`: a speaker is a llama.cpp slot when the
request names one, else its system message; tokens as a chat template lays them out),
summed over all requests, and the tokens left to compute (a larger view can raise the share
while costing more); the mean of the per-request shares; what the server reported as
cached (`usage.prompt_tokens_details.cached_tokens`) and what moot recorded (`moot show`'s
cached tokens), when they exist.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moot.core.config import Overrides, build_config  # noqa: E402
from moot.core.session import SessionOptions, new_session  # noqa: E402
from moot.core.tokens import encoding_for_model  # noqa: E402
from tests.loopback import LoopbackServer  # noqa: E402
from tests.prefix_cache import PrefixCache, speaker_of  # noqa: E402
from tests.prose import loopback_reply  # noqa: E402

PROBLEM = "Design a rate limiter for a public HTTP API serving 50k requests per second"
ROLES = ["architect", "performance", "kiss"]


def body_seed(body: dict[str, Any]) -> int:
    """A reply's seed from the request itself, so the same request gets the same reply."""
    digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _head(message: dict[str, Any]) -> str:
    """A message's first line, shortened: what part of the view it is."""
    content = message.get("content")
    first = (content if isinstance(content, str) else "").split("\n", 1)[0]
    return f"{message.get('role')}: {first[:60]}"


def _where(text: str) -> str:
    """What a message's first line says it is, without its numbers (for the tally)."""
    return "".join("#" if ch.isdigit() else ch for ch in text.split(":", 1)[-1].strip())[:50]


def explain(bodies: list[dict[str, Any]], fresh: list[int]) -> list[str]:
    """For each request, where it first differs from the same speaker's previous one; then a tally
    of those places with the tokens computed afresh (`fresh`: per request, not from the cache)."""
    last: dict[str, list[dict[str, Any]]] = {}
    lines: list[str] = []
    tally: dict[str, list[int]] = {}
    for n, body in enumerate(bodies):
        messages = list(body.get("messages") or [])
        key = speaker_of(body)
        previous = last.get(key)
        last[key] = messages
        task = _head(messages[-1]) if messages else ""
        if previous is None:
            continue
        i = 0
        while i < min(len(previous), len(messages)) and previous[i] == messages[i]:
            i += 1
        if i == len(messages):
            lines.append(f"{n:4d} {task[:50]} · whole request repeated")
            continue
        old = str(previous[i].get("content") or "") if i < len(previous) else ""
        new = str(messages[i].get("content") or "")
        c = next((j for j, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
        head = _head(messages[i])
        place = "system" if i == 0 else _where(head)
        tally.setdefault(place, []).append(fresh[n])
        lines.append(f"{n:4d} {task[:50]} · message {i} of {len(messages)} ({head}) differs at char {c} of "
                     f"{len(new)}: {old[max(0, c - 30):c + 40]!r} → {new[max(0, c - 30):c + 40]!r}")
    lines.append(ceiling(bodies))
    lines.append("where a request first differs from its speaker's previous one · requests · tokens not cached")
    for place, after in sorted(tally.items(), key=lambda kv: -sum(kv[1])):
        lines.append(f"  {place:52s} {len(after):4d} {sum(after):9,}")
    return lines


def ceiling(bodies: list[dict[str, Any]]) -> str:
    """The share a prefix cache could serve at best: every paragraph of a request that its
    speaker's previous request held (anywhere) counts as cached, the rest as new."""
    last: dict[str, set[str]] = {}
    new = total = 0
    for body in bodies:
        messages = list(body.get("messages") or [])
        encoding = encoding_for_model(str(body.get("model") or ""))
        paragraphs = [p for m in messages for p in str(m.get("content") or "").split("\n\n")]
        key = speaker_of(body)
        seen = last.get(key, set())
        last[key] = set(paragraphs)
        counts = [(p in seen, len(encoding.encode(p, disallowed_special=()))) for p in paragraphs]
        total += sum(n for _, n in counts)
        new += sum(n for old, n in counts if not old)
    return (f"ceiling: {1 - new / max(1, total):.1%} of the prompt tokens repeat, paragraph by paragraph, what the "
            f"speaker's previous request held ({new:,} of {total:,} tokens are new to it)")


async def run_case(name: str, debate: dict[str, Any], rounds: int, chars: int, tmp: Path,
                   why: bool = False) -> str:
    def answer(body: dict[str, Any], n: int) -> str:
        return loopback_reply(body, body_seed(body), chars)

    with LoopbackServer(reply=answer) as srv:
        cfg = build_config({"debate": debate}, Overrides(rounds=rounds, provider="openai", base_url=srv.base_url,
                                                         roles=ROLES))
        session = new_session(PROBLEM, cfg, SessionOptions(state_dir=tmp, backoff_base_s=0.01))
        state = await session.run()
        bodies = srv.requests
    cache = PrefixCache()
    shares: list[float] = []
    fresh: list[int] = []
    cached = total = 0
    for body in bodies:
        c, t = cache.lookup(body)
        cached, total = cached + c, total + t
        shares.append(c / t if t else 0.0)
        fresh.append(t - c)
    recorded = getattr(state.totals, "cached_tokens", None)
    moot = f" · moot recorded {recorded / state.totals.prompt_tokens:.1%}" if recorded is not None else ""
    reported = getattr(srv, "cached_reported", None)
    server = f" · server reported {reported / total:.1%}" if reported is not None else ""
    notes = "".join(f"\n    {line}" for line in explain(bodies, fresh)) if why else ""
    views = [v for r in state.rounds for v in r.calls]
    recalled = [v.tokens.recall for v in views if v.tokens.recall]
    recall = (f" · recall tier in {len(recalled)} of {len(views)} views, {sum(recalled):,} tokens (held blocks included)"
              if recalled else "")
    return (f"| {name} | {state.status} | {len(bodies)} | {total:,} | {total - cached:,} | {cached / total:.1%} | "
            f"{statistics.mean(shares):.1%} |{server}{moot}{recall}{notes}")


async def real_server(args: argparse.Namespace) -> None:
    """The rounds debate (or, with `--conversation N`, a conversation of N turns) against a real
    server; the share by its own count."""
    with tempfile.TemporaryDirectory() as tmp:
        # A small model on a loaded CPU takes minutes a request: the deadlines of bench/real_model.toml.
        config: dict[str, Any] = {"debate": {"context": {"reserve_output_tokens": args.max_tokens},
                                             "timeout_s": 900, "max_retries": 1}}
        what = f"rounds, {args.rounds} rounds"
        if args.conversation:
            conversation: dict[str, Any] = {"reserve_output_tokens": args.max_tokens}
            if args.window:
                conversation["max_context_tokens"] = args.window
            config["debate"].update(protocol="conversation", turns=args.conversation, conversation=conversation)
            what = f"conversation, {args.conversation} turns" + (f", {args.window:,}-token view" if args.window else "")
        cfg = build_config(config, Overrides(rounds=args.rounds, provider="openai", base_url=args.base_url,
                                             model=args.model, roles=ROLES))
        session = new_session(PROBLEM, cfg, SessionOptions(state_dir=Path(tmp), backoff_base_s=0.5))
        started = time.perf_counter()
        state = await session.run()
        wall = time.perf_counter() - started
    t = state.totals
    rolls = sum(len(r.summaries) + len(r.replaced_summaries) for r in state.rounds)
    calls = [c.metadata for r in state.rounds for c in r.contributions if not c.carried_from]
    print(f"{args.base_url} · {args.model} · layout {state.view_layout} · {what} × 3 agents: {state.status}, "
          f"{t.calls} calls; the server counted {t.prompt_tokens:,} prompt tokens, {t.cached_tokens:,} of them "
          f"from its cache: {t.cached_tokens / max(1, t.prompt_tokens):.1%} "
          f"(contributions: {sum(m.cached_tokens for m in calls):,} of {sum(m.prompt_tokens for m in calls):,}); "
          f"{rolls} summary rolls; wall {wall:.0f} s")


async def main_async(args: argparse.Namespace) -> None:
    if args.layout is not None:
        from moot.core import orchestrator

        orchestrator.LAYOUT = args.layout  # new debates begin in it, as they would have
    if args.base_url:
        await real_server(args)
        return
    conversation: dict[str, Any] = {"recall": False} if args.no_recall else {}
    cases = [
        (f"rounds, {args.rounds} rounds", {}),
        (f"conversation, {args.turns} turns, 8,000-token view", {"protocol": "conversation", "turns": args.turns,
                                                                "conversation": dict(conversation)}),
        (f"conversation, {args.turns} turns, 32,000-token view",
         {"protocol": "conversation", "turns": args.turns,
          "conversation": {**conversation, "max_context_tokens": 32000, "recent_tokens": 20000,
                           "summary_tokens": 4000}}),
    ]
    print("| debate | status | requests | prompt tokens | not cached | cached (of all prompt tokens) | mean per request |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, debate) in enumerate(cases):
            print(await run_case(name, debate, args.rounds, args.chars, Path(tmp) / str(i), args.explain),
                  flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--turns", type=int, default=60)
    ap.add_argument("--chars", type=int, default=2000)
    ap.add_argument("--base-url", help="run the rounds debate against this server instead (its own count)")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--no-recall", action="store_true", help="the conversations without their recall tier")
    ap.add_argument("--max-tokens", type=int, default=1000, help="each reply's limit against a real server")
    ap.add_argument("--conversation", type=int, metavar="TURNS",
                    help="against a real server: a conversation of this many turns instead of the rounds debate")
    ap.add_argument("--explain", action="store_true",
                    help="print where each request first differs from its speaker's previous one, and a tally")
    ap.add_argument("--layout", type=int, help="begin the debates in this view layout (default: the newest)")
    ap.add_argument("--window", type=int, metavar="TOKENS",
                    help="against a real server: the conversation's view size (max_context_tokens; default 8000)")
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()

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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moot.core.config import Overrides, build_config  # noqa: E402
from moot.core.session import SessionOptions, new_session  # noqa: E402
from tests.loopback import LoopbackServer  # noqa: E402
from tests.prefix_cache import PrefixCache  # noqa: E402
from tests.prose import loopback_reply  # noqa: E402

PROBLEM = "Design a rate limiter for a public HTTP API serving 50k requests per second"
ROLES = ["architect", "performance", "kiss"]


def body_seed(body: dict[str, Any]) -> int:
    """A reply's seed from the request itself, so the same request gets the same reply."""
    digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).digest()
    return int.from_bytes(digest[:4], "big")


async def run_case(name: str, debate: dict[str, Any], rounds: int, chars: int, tmp: Path) -> str:
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
    cached = total = 0
    for body in bodies:
        c, t = cache.lookup(body)
        cached, total = cached + c, total + t
        shares.append(c / t if t else 0.0)
    recorded = getattr(state.totals, "cached_tokens", None)
    moot = f" · moot recorded {recorded / state.totals.prompt_tokens:.1%}" if recorded is not None else ""
    reported = getattr(srv, "cached_reported", None)
    server = f" · server reported {reported / total:.1%}" if reported is not None else ""
    views = [v for r in state.rounds for v in r.calls]
    recalled = [v.tokens.recall for v in views if v.tokens.recall]
    recall = (f" · recall tier in {len(recalled)} of {len(views)} views, {sum(recalled):,} tokens (held blocks included)"
              if recalled else "")
    return (f"| {name} | {state.status} | {len(bodies)} | {total:,} | {total - cached:,} | {cached / total:.1%} | "
            f"{statistics.mean(shares):.1%} |{server}{moot}{recall}")


async def real_server(args: argparse.Namespace) -> None:
    """The rounds debate against a real server; the share by its own count."""
    with tempfile.TemporaryDirectory() as tmp:
        config: dict[str, Any] = {"debate": {"context": {"reserve_output_tokens": args.max_tokens}}}
        cfg = build_config(config, Overrides(rounds=args.rounds, provider="openai", base_url=args.base_url,
                                             model=args.model, roles=ROLES))
        session = new_session(PROBLEM, cfg, SessionOptions(state_dir=Path(tmp), backoff_base_s=0.5))
        state = await session.run()
    t = state.totals
    calls = [c.metadata for r in state.rounds for c in r.contributions if not c.carried_from]
    print(f"{args.base_url} · {args.model} · rounds, {args.rounds} rounds × 3 agents: {state.status}, "
          f"{t.calls} calls; the server counted {t.prompt_tokens:,} prompt tokens, {t.cached_tokens:,} of them "
          f"from its cache: {t.cached_tokens / max(1, t.prompt_tokens):.1%} "
          f"(contributions: {sum(m.cached_tokens for m in calls):,} of {sum(m.prompt_tokens for m in calls):,})")


async def main_async(args: argparse.Namespace) -> None:
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
            print(await run_case(name, debate, args.rounds, args.chars, Path(tmp) / str(i)), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--turns", type=int, default=60)
    ap.add_argument("--chars", type=int, default=2000)
    ap.add_argument("--base-url", help="run the rounds debate against this server instead (its own count)")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--no-recall", action="store_true", help="the conversations without their recall tier")
    ap.add_argument("--max-tokens", type=int, default=1000, help="each reply's limit against a real server")
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()

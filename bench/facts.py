"""How many of the facts a later round needs survive an agent's first rule-based summary.

Run: .venv/bin/python bench/facts.py [--debates 10] [--rounds 2] [--window 8000] [--method rule-based]

Debates of 3 agents (`rounds` protocol) against the loopback OpenAI-compatible server, whose
replies are 2,500 characters of technical prose (`tests/prose.py`): each carries a decision,
a measured number (value, unit, subject) and an open question among ordinary sentences that
also hold numbers. For each agent's first summary, every fact of every item it covers (as
far as that item's text still holds it: a reply cut at its token limit loses its tail) is
looked for in the summary text: a fact is kept when all its keys are there (for a number:
the value with its unit, and its subject). Prints the share kept per kind and overall.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moot.core.config import Overrides, build_config  # noqa: E402
from moot.core.models.state import DebateState  # noqa: E402
from moot.core.session import SessionOptions, new_session  # noqa: E402
from tests.loopback import LoopbackServer, ModelServer  # noqa: E402
from tests.prose import Fact, kept, loopback_reply, reply  # noqa: E402

MISSING: list[str] | None = None
PROBLEM = "Design a rate limiter for a public HTTP API serving 50k requests per second"


def facts_of(content: str, offset: int, calls: int) -> list[Fact]:
    """The facts of the reply a contribution came from (found by its first line), as far as
    the contribution still holds their sentences."""
    for n in range(1, calls + 1):
        r = reply(n + offset)
        if r.text[:120] == content[:120]:
            return [f for f in r.facts if f.sentence in content]
    return []


async def one(seed: int, rounds: int, window: int, method: str, tmp: Path) -> tuple[Counter[str], Counter[str]]:
    offset = seed * 1000

    def answer(body: dict[str, Any], n: int) -> str:
        return loopback_reply(body, n + offset)

    with LoopbackServer(reply=answer, model=ModelServer(window=window)) as srv:
        cfg = build_config({"debate": {"summarization": {"method": method}}},
                           Overrides(rounds=rounds, provider="openai", base_url=srv.base_url,
                                     roles=["architect", "performance", "kiss"]))
        session = new_session(PROBLEM, cfg, SessionOptions(state_dir=tmp / str(seed), backoff_base_s=0.01))
        state: DebateState = await session.run()
        calls = srv.calls
    assert state.status == "completed", state.error
    total: Counter[str] = Counter()
    hit: Counter[str] = Counter()
    by_id = {c.id: c for r in state.rounds for c in r.contributions}
    seen: set[str] = set()
    for rnd in state.rounds:
        for s in rnd.summaries.values():
            if s.agent_id in seen:
                continue
            seen.add(s.agent_id)
            # the items the first summary covers: the agent's perspective up to covered_through
            covered: list[Any] = []
            for r in state.rounds:
                for c in r.contributions:
                    mine = c.agent_id == s.agent_id and c.type in ("proposal", "refinement")
                    aimed = c.type == "critique" and c.target_agent_id == s.agent_id
                    if (mine or aimed) and not c.carried_from:
                        covered.append(c)
            stop = [c.id for c in covered].index(s.covered_through) + 1 if s.covered_through in by_id else 0
            for c in covered[:stop]:
                for f in facts_of(c.content, offset, calls):
                    total[f.kind] += 1
                    hit[f.kind] += kept(s.summary, f)
                    if MISSING is not None and not kept(s.summary, f):
                        MISSING.append(f"{s.agent_id} ({c.type} by {c.agent_id}): {f.sentence}")
    return hit, total


async def main_async(args: argparse.Namespace) -> None:
    hit: Counter[str] = Counter()
    total: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.debates):
            h, t = await one(seed, args.rounds, args.window, args.method, Path(tmp))
            hit.update(h)
            total.update(t)
    print(f"{args.debates} debates × 3 agents, {args.rounds} rounds, window {args.window}, {args.method}")
    for kind in ("decision", "number", "question"):
        print(f"  {kind:<9} {hit[kind]:>4} / {total[kind]:<4} kept  {100 * hit[kind] / max(1, total[kind]):5.1f} %")
    for line in MISSING or []:
        print(f"  missing: {line}")
    all_hit, all_total = sum(hit.values()), sum(total.values())
    print(f"  {'all':<9} {all_hit:>4} / {all_total:<4} kept  {100 * all_hit / max(1, all_total):5.1f} %")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--debates", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--window", type=int, default=8000, help="the server's window (tokens)")
    ap.add_argument("--method", default="rule-based")
    ap.add_argument("--show-missing", action="store_true", help="print each fact a summary lost")
    args = ap.parse_args()
    global MISSING
    MISSING = [] if args.show_missing else None
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()

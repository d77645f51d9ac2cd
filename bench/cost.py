"""Cost benchmark: requests and prompt tokens of a 3-agent `rounds` debate with 2,500-character replies.

Run: .venv/bin/python bench/cost.py [--rounds 2 6 12] [--config FILE]

Against the loopback OpenAI-compatible server (the real SDK, server-side token counts),
default settings. The anchor (dialectic) sends 146 requests and 331k (0.1.0) or 378k
(0.7.0) prompt tokens for the 12-round debate; moot's target is no more than 378k with
every request under its budget.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moot.core.config import Overrides, load_config  # noqa: E402
from moot.core.session import SessionOptions, new_session  # noqa: E402
from moot.core.tokens import count_messages  # noqa: E402
from tests.loopback import LoopbackServer  # noqa: E402

PROBLEM = "Design a rate limiter for a public HTTP API serving 50k requests per second"


async def run(rounds: int, config: str | None, base_url: str, state_dir: Path) -> tuple[str, object]:
    cfg = load_config(config, Overrides(rounds=rounds, provider="openai", base_url=base_url,
                                        roles=["architect", "performance", "kiss"]))
    session = new_session(PROBLEM, cfg, SessionOptions(state_dir=state_dir, backoff_base_s=0.01))
    state = await session.run()
    return session.folder.id, state


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, nargs="+", default=[2, 6, 12])
    ap.add_argument("--config", help="a moot config (default: moot's defaults)")
    args = ap.parse_args()
    print(f"{'rounds':>6} {'requests':>9} {'prompt tokens':>14} {'largest request':>16}  per phase (requests: prompt tokens)")
    with tempfile.TemporaryDirectory() as tmp:
        for rounds in args.rounds:
            with LoopbackServer(reply_chars=2500) as srv:
                _, state = asyncio.run(run(rounds, args.config, srv.base_url, Path(tmp) / str(rounds)))
                bodies = srv.requests
            prompt = sum(count_messages(b["messages"], b["model"]) for b in bodies)
            largest = max(count_messages(b["messages"], b["model"]) + b["max_tokens"] for b in bodies)
            phases: Counter[str] = Counter()
            tokens: Counter[str] = Counter()
            for rnd in state.rounds:  # type: ignore[attr-defined]
                for call in rnd.calls:
                    phases[call.phase] += 1
                    tokens[call.phase] += call.tokens.total
            detail = ", ".join(f"{p} {phases[p]}: {tokens[p] / 1000:.0f}k" for p in phases)
            print(f"{rounds:>6} {len(bodies):>9} {prompt:>14,} {largest:>16,}  {detail}")


if __name__ == "__main__":
    main()

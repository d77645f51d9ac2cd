"""Small windows: does a debate complete, and how close does its largest request come to the window?

Run: .venv/bin/python bench/windows.py [--windows 1024 2048 4096] [--ratios 1.0 1.3 1.5]
                                        [--protocols rounds simultaneous conversation] [--rounds 2] [--turns 40]

Each cell is one debate of 3 agents against the loopback OpenAI-compatible server behaving
like llama.cpp: it states its window per slot in `GET /props`, counts the prompt with a
tokenizer of its own (`ratio` × moot's tiktoken count) and refuses a request that reaches
the window with llama.cpp's own 400 body. Replies are 2,500 characters of technical prose
(`tests/prose.py`), cut at the request's max_tokens as a real server does. moot runs with
its defaults (`max_context_tokens = 8000`, so the server's window is what binds).

Printed per cell: completed or the error; requests (refused for length); the largest request
after the first answer by the server's own count, prompt and prompt + max_tokens, against
the window (the first wave is built before moot has seen the server count anything).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moot.core.config import Overrides, build_config  # noqa: E402
from moot.core.session import SessionOptions, new_session  # noqa: E402
from tests.loopback import LoopbackServer, ModelServer  # noqa: E402
from tests.prose import loopback_reply  # noqa: E402

PROBLEM = "Design a rate limiter for a public HTTP API serving 50k requests per second"


@dataclass
class Cell:
    status: str
    error: str
    requests: int
    refused: int
    largest_prompt: int
    largest_need: int
    seconds: float


async def run_cell(window: int, ratio: float, protocol: str, rounds: int, turns: int, tmp: Path,
                   config: dict[str, Any] | None = None, reply_chars: int = 2500) -> Cell:
    served = ModelServer(window=window, count_scale=ratio)

    def answer(body: dict[str, Any], n: int) -> str:
        return loopback_reply(body, n, reply_chars)

    started = time.perf_counter()
    with LoopbackServer(reply=answer, model=served) as srv:
        cfg = build_config({"debate": {"protocol": protocol, "turns": turns, **(config or {})}},
                           Overrides(rounds=rounds, provider="openai", base_url=srv.base_url,
                                     roles=["architect", "performance", "kiss"]))
        session = new_session(PROBLEM, cfg, SessionOptions(state_dir=tmp, backoff_base_s=0.01))
        state = await session.run()
        bodies, before = srv.requests, srv.answered_before
    later = [b for b, n in zip(bodies, before) if n >= 1]
    prompts = [served.prompt_tokens(b) for b in later]
    needs = [p + int(b.get("max_tokens") or 0) for p, b in zip(prompts, later)]
    refused = sum(served.refusal(b) is not None for b in bodies)
    return Cell(state.status, state.error or "", len(bodies), refused, max(prompts, default=0),
                max(needs, default=0), time.perf_counter() - started)


async def main_async(args: argparse.Namespace) -> int:
    print("| window | ratio | protocol | completed | requests (refused) | largest prompt | prompt + max_tokens | s |")
    print("|---|---|---|---|---|---|---|---|")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        i = 0
        for window in args.windows:
            for ratio in args.ratios:
                for protocol in args.protocols:
                    i += 1
                    cell = await run_cell(window, ratio, protocol, args.rounds, args.turns, Path(tmp) / str(i))
                    done = "yes" if cell.status == "completed" else f"**no**: {cell.error[:160]}"
                    failed += cell.status != "completed" or cell.largest_need > window
                    print(f"| {window:,} | {ratio:.2f} | {protocol} | {done} | {cell.requests} ({cell.refused}) | "
                          f"{cell.largest_prompt:,} | {cell.largest_need:,} | {cell.seconds:.1f} |", flush=True)
    return 1 if failed else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, nargs="+", default=[1024, 1536, 2048, 4096, 8192])
    ap.add_argument("--ratios", type=float, nargs="+", default=[1.0, 1.3, 1.5])
    ap.add_argument("--protocols", nargs="+", default=["rounds", "simultaneous", "conversation"])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--turns", type=int, default=40)
    sys.exit(asyncio.run(main_async(ap.parse_args())))


if __name__ == "__main__":
    main()

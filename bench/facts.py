"""How many of the facts a later round needs survive an agent's first rule-based summary.

Run: .venv/bin/python bench/facts.py [--debates 10] [--rounds 2] [--window 8000] [--method rule-based]
     .venv/bin/python bench/facts.py --conversation [--turns 1000] [--seed 0] [--agents 4]
                                     [--checkpoints 100,300,600] [--layouts 3,4]

Debates of 3 agents (`rounds` protocol) against the loopback OpenAI-compatible server, whose
replies are 2,500 characters of technical prose (`tests/prose.py`): each carries a decision,
a measured number (value, unit, subject) and an open question among ordinary sentences that
also hold numbers. For each agent's first summary, every fact of every item it covers (as
far as that item's text still holds it: a reply cut at its token limit loses its tail) is
looked for in the summary text: a fact is kept when all its keys are there (for a number:
the value with its unit, and its subject). Prints the share kept per kind and overall.

`--conversation`: the summary tier of a long conversation instead (4 agents, `moot run`'s
conversation defaults, rule-based summaries, in this process with scripted prose replies of
2,500 characters): of the decisions, numbers and open questions the replies of turns 1–40 hold,
the share the last summary's text still holds after `--turns` turns (recall not counted), for
view layout 3 (a rolling summary rewritten at each roll) and layout 4 (append-only blocks, the
oldest consolidated when they outgrow the tier). A fact counts when the summary holds each of its
keys anywhere (the replies reuse a small vocabulary of components and stores, so a full tier
holds some by chance); `on one line` counts it only when one line holds them all, which chance
rarely does. `--seed` draws other replies, `--agents` seats 2 to 6 agents.
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


class ScriptedProvider:
    """An in-process provider answering each turn with the prose reply of its turn (no HTTP)."""

    name = "demo"
    label = "DEMO (scripted bench replies)"
    slots: int | None = None
    llama_cpp = False

    def __init__(self, chars: int, seed: int = 0) -> None:
        self.chars = chars
        self.seed = seed

    async def stream(self, request: Any) -> Any:
        from moot.core.providers.base import Completion, Finished, TextDelta
        from moot.core.tokens import count_messages, count_text
        from tests.prose import turn_of

        turn = turn_of({"messages": request.messages})
        text = reply(reply_seed(turn or 0, self.seed), self.chars).text
        yield TextDelta(text)
        yield Finished(Completion(content=text, prompt_tokens=count_messages(request.messages, request.model),
                                  completion_tokens=count_text(text, request.model), model=request.model,
                                  finish_reason="stop"))

    async def discover_window(self, model: str) -> int | None:
        return None

    def keep_slots(self, speakers: Any) -> dict[str, int]:
        return {}

    async def aclose(self) -> None:
        return None


CHECKPOINTS = (100, 300, 600, 1000, 2000, 5000)
ROLES = ["architect", "performance", "security", "kiss", "testing", "generalist"]


def reply_seed(turn: int, seed: int) -> int:
    """The `reply` seed of a turn's message (seed 0: the replies this bench has always used)."""
    return turn * 31 + 7 + seed * 100_003


def on_one_line(summary: str, fact: Fact) -> bool:
    """Whether one line of `summary` holds every key of `fact` (chance seldom puts them together)."""
    return any(kept(line, fact) for line in summary.splitlines())


async def conversation(turns: int, layout: int, tmp: Path, chars: int = 2500, seed: int = 0, agents: int = 4,
                       checkpoints: tuple[int, ...] = CHECKPOINTS) -> dict[int, tuple[Counter[str], Counter[str]]]:
    """At each checkpoint up to `turns` (and at `turns`): (kept, planted) per kind, the facts of
    turns 1–40 that the last rolling summary made by then holds (not the judge's, made for the
    synthesis; `line` counts those one line holds whole). One run; a consolidation's timing moves
    the share from one checkpoint to the next, so several are read."""
    from moot.core import orchestrator

    cfg = build_config({"debate": {"protocol": "conversation", "turns": turns,
                                   "summarization": {"method": "rule-based"}}},
                       Overrides(provider="demo", roles=ROLES[:agents]))
    session = new_session(PROBLEM, cfg, SessionOptions(state_dir=tmp / f"layout{layout}", demo_delay=0))
    session.providers._providers[("demo", None)] = ScriptedProvider(chars, seed)  # type: ignore[assignment]
    was, orchestrator.LAYOUT = orchestrator.LAYOUT, layout
    try:
        await session.run()
    finally:
        orchestrator.LAYOUT = was
    state = session.folder.load(bounded=False)
    assert state.view_layout == layout, state.view_layout
    messages = {c.round: c.content for c in state.all_contributions() if c.type == "message"}
    made = sorted((s for r in state.rounds for s in [*r.replaced_summaries, *r.summaries.values()]
                   if s.scope == "conversation" and s.trigger != "judge"), key=lambda s: (s.round, s.ts))
    planted = [f for t in range(1, 41) for f in reply(reply_seed(t, seed), chars).facts
               if f.sentence in messages.get(t, "")]
    out: dict[int, tuple[Counter[str], Counter[str]]] = {}
    for at in sorted({c for c in checkpoints if c < turns} | {turns}):
        last = [s for s in made if s.round <= at][-1]
        hit: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for f in planted:
            total[f.kind] += 1
            hit[f.kind] += kept(last.summary, f)
            hit["line"] += on_one_line(last.summary, f)
        out[at] = (hit, total)
    return out


def conversation_main(args: argparse.Namespace) -> None:
    checkpoints = tuple(int(c) for c in args.checkpoints.split(",")) if args.checkpoints else CHECKPOINTS
    with tempfile.TemporaryDirectory() as tmp:
        for layout in (int(x) for x in args.layouts.split(",")):
            runs = conversation(args.turns, layout, Path(tmp), seed=args.seed, agents=args.agents,
                                checkpoints=checkpoints)
            for at, (hit, total) in asyncio.run(runs).items():
                kinds = ("decision", "number", "question")
                parts = "  ".join(f"{kind} {hit[kind]}/{total[kind]}" for kind in kinds)
                print(f"layout {layout}: after {at} turns the summary tier holds {sum(hit[k] for k in kinds)}/"
                      f"{sum(total.values())} of the facts of turns 1-40 ({parts}; on one line {hit['line']})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--debates", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--window", type=int, default=8000, help="the server's window (tokens)")
    ap.add_argument("--method", default="rule-based")
    ap.add_argument("--show-missing", action="store_true", help="print each fact a summary lost")
    ap.add_argument("--conversation", action="store_true", help="the summary tier of a long conversation")
    ap.add_argument("--turns", type=int, default=1000, help="--conversation: its length")
    ap.add_argument("--seed", type=int, default=0, help="--conversation: which replies (0: as always)")
    ap.add_argument("--agents", type=int, default=4, choices=range(2, len(ROLES) + 1),
                    help="--conversation: how many agents")
    ap.add_argument("--checkpoints", default="", help="--conversation: the turns to read, e.g. 100,200,450")
    ap.add_argument("--layouts", default="3,4", help="--conversation: the view layouts to compare")
    args = ap.parse_args()
    if args.conversation:
        conversation_main(args)
        return
    global MISSING
    MISSING = [] if args.show_missing else None
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()

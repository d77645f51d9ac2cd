"""Recall benchmark: does a long conversation get back what its rolling summary dropped?

Run: .venv/bin/python bench/recall.py [--full] [--turns N]
     .venv/bin/python bench/recall.py --engineer [--turns 300]

A 2,000-turn conversation (10,000 with --full) of 4 agents at the seed's defaults (8,000-token
views, the last 50 messages verbatim, a summary every 50), in this process, with a scripted
provider (`tests.prose.FactScript`: ordinary technical prose each turn; early turns plant a
fact under a made-up name; later turns name one again, at least 300 turns after it was
planted). Summaries are rule-based (offline). It reports, each figure measured within one run:

- recall: the share of mentions whose next request holds the planted message verbatim (whole),
  and the share holding the planted sentence at all, with the recall tier on and off
  (goal: ≥ 90 % on, whatever off is);
- the per-turn view-build cost (the overflow check, choosing the recall tier, building the
  view; medians) at the last 41 turns over turns 80–120 (goal ≤ 1.2), with recall on and off;
- the index's size over the event log's, and the cost of indexing one message (its own
  transaction, as the debate's process does) at turns 80–120 and at the last 41 (goal: flat);
- `moot search` on the finished debate: the command's wall time from process start (median of
  5; goal < 0.3 s), and the search alone in this process;
- the requests of the recall-on run that differ from those of the same conversation held whole in
  memory (nothing let go of; goal: none, whatever the log's writer's pace).

`--engineer`: the planted-fact check of a 300-turn conversation instead (`tests.engineer_facts`):
a fact as an engineer writes it (a decision, a number with its unit, a constraint; no made-up
name) in each of the first 40 turns, each brought up again in other words after turn 200; a case
counts when the fact's sentence and the 150 characters after it in its message are verbatim in
the next request (goal ≥ 90 %), with the recall tier on and off.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from moot.core.config import Overrides, build_config  # noqa: E402
from moot.core.context.view import ViewBuilder  # noqa: E402
from moot.core.engine.calls import CallEngine  # noqa: E402
from moot.core.protocols.conversation import ConversationProtocol  # noqa: E402
from moot.core.providers.base import ChatRequest, Completion, Finished, StreamItem, TextDelta  # noqa: E402
from moot.core.search.index import INDEX_FILE, SearchIndex  # noqa: E402
from moot.core.session import SessionOptions, new_session  # noqa: E402
from moot.core.storage import archive  # noqa: E402
from moot.core.tokens import count_messages, count_text  # noqa: E402
from tests.engineer_facts import EngineerScript, engineer_fact  # noqa: E402
from tests.prose import FactScript, planted, turn_of  # noqa: E402

PROBLEM = "Design a rate limiter for a public API"
AGENTS = ["architect", "performance", "security", "kiss"]
MOOT = [sys.executable, "-m", "moot"]


class ScriptedProvider:
    """An in-process provider that answers with the fact script (no HTTP: the bench times moot)."""

    name = "demo"
    label = "DEMO (scripted bench replies)"
    slots: int | None = None
    llama_cpp = False
    """Not a llama.cpp server: no slots to keep (see `moot.core.engine.calls`)."""

    def __init__(self, script: FactScript, watch: set[int]) -> None:
        self.script = script
        self.watch = watch
        self.sent: dict[int, str] = {}
        """turn → the whole request text, for the turns right after a mention."""
        self.digests: list[str] = []
        """Every request's digest, in order."""

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamItem]:
        body: dict[str, Any] = {"messages": request.messages}
        turn = turn_of(body)
        self.digests.append(hashlib.sha256(repr(request.messages).encode()).hexdigest())
        if turn in self.watch:
            self.sent[turn] = "\n".join(m["content"] for m in request.messages)
        text = self.script(body, 0)
        yield TextDelta(text)
        yield Finished(Completion(content=text, prompt_tokens=count_messages(request.messages, request.model),
                                  completion_tokens=count_text(text, request.model), model=request.model,
                                  finish_reason="stop"))

    async def discover_window(self, model: str) -> int | None:
        return None

    def keep_slots(self, speakers: Any) -> dict[str, int]:
        return {}  # no server slots to keep

    async def aclose(self) -> None:
        return None


def schedule(turns: int) -> tuple[dict[int, int], dict[int, int]]:
    """Plants every 4 turns in the first tenth; a mention every 20 turns from 40 % on, each of a fact
    planted at least 300 turns before (cycling through them)."""
    plants = {t: i for i, t in enumerate(range(5, max(6, turns // 10), 4))}
    by_fact = sorted(plants.items())
    mentions: dict[int, int] = {}
    k = 0
    for t in range(int(turns * 0.4), turns - 1, 20):
        eligible = [(pt, f) for pt, f in by_fact if pt <= t - 300]
        if eligible:
            mentions[t] = eligible[k % len(eligible)][1]
            k += 1
    return plants, mentions


def engineer_schedule(turns: int) -> tuple[dict[int, int], dict[int, int]]:
    """A fact in each of turns 1–40; each named again once, every other turn from turn 201 on."""
    plants = {t: t - 1 for t in range(1, 41)}
    mentions = {201 + 2 * k: k for k in range(40) if 201 + 2 * k < turns}
    return plants, mentions


def verbatim(fact: int, plant: str, sent: str) -> bool:
    """Whether `sent` holds the engineer fact's sentence and the 150 characters after it in `plant`."""
    sentence = engineer_fact(fact).sentence
    at = plant.find(sentence)
    return at >= 0 and plant[at:at + len(sentence) + 150] in sent


async def run(turns: int, state_dir: Path, recall: bool, engineer: bool = False) -> dict[str, Any]:
    plants, mentions = (engineer_schedule if engineer else schedule)(turns)
    cfg = build_config({"debate": {"protocol": "conversation", "turns": turns,
                                   "summarization": {"method": "rule-based"},
                                   "conversation": {"recall": recall}}},
                       Overrides(provider="demo", roles=AGENTS))
    session = new_session(PROBLEM, cfg, SessionOptions(state_dir=state_dir, demo_delay=0))
    script = EngineerScript(plants, mentions) if engineer else FactScript(plants, mentions)
    provider = ScriptedProvider(script, {t + 1 for t in mentions})
    session.providers._providers[("demo", None)] = provider  # the bench's replies, in place of the demo's
    per_turn: dict[int, float] = {}
    depth = [0]

    def timed(cls: Any, name: str, step_of: Any) -> None:
        """Time `cls.name` into its turn (only the outermost of nested timed calls counts)."""
        fn = getattr(cls, name)

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            depth[0] += 1
            try:
                return fn(self, *args, **kwargs)
            finally:
                depth[0] -= 1
                step = step_of(*args)
                if step is not None and depth[0] == 0:
                    per_turn[step] = per_turn.get(step, 0.0) + time.perf_counter() - t

        setattr(cls, name, wrapper)
        patched.append((cls, name, fn))

    patched: list[tuple[Any, str, Any]] = []
    timed(ViewBuilder, "build", lambda record, *a: record.round if record.phase == "turn" else None)
    timed(CallEngine, "recall", lambda spec: spec.record.round)
    timed(ConversationProtocol, "_overflow", lambda record, window, *rest: record.round)
    try:
        t0 = time.perf_counter()
        await session.run()
        wall = time.perf_counter() - t0
    finally:
        for cls, name, fn in patched:
            setattr(cls, name, fn)
    # The state holds the last steps only (a long debate lets older ones go): read them all back.
    messages = {c.round: c.content.strip() for c in session.folder.load(bounded=False).all_contributions()
                if c.type == "message"}
    whole = sentence = 0
    for t, fact in mentions.items():
        plant = next(pt for pt, f in plants.items() if f == fact)
        sent = provider.sent.get(t + 1, "")
        if engineer:
            whole += verbatim(fact, messages[plant], sent)
            sentence += engineer_fact(fact).sentence in sent
            continue
        whole += messages[plant] in sent
        sentence += planted(fact).sentence in sent
    folder = session.folder.path
    return {"wall": wall, "per_turn": per_turn, "mentions": len(mentions), "whole": whole, "sentence": sentence,
            "folder": folder, "index": sum(p.stat().st_size for p in folder.glob(f"{INDEX_FILE}*")),
            "log": (folder / "events.jsonl").stat().st_size, "plants": plants, "digests": provider.digests}


def differing(turns: int, state_dir: Path, bounded: list[str]) -> int:
    """Requests of a bounded run unlike those of the same conversation with nothing let go of."""
    hold = archive.HOLD
    archive.HOLD = 10**9
    try:
        whole = asyncio.run(run(turns, state_dir, recall=True))["digests"]
    finally:
        archive.HOLD = hold
    return sum(a != b for a, b in zip(bounded, whole)) + abs(len(bounded) - len(whole))


def cost_ratio(per_turn: dict[int, float], turns: int) -> tuple[float, float, float]:
    """Median per-turn cost at turns 80–120 and at the last 41 turns (a roll of the summary, every
    50 turns, makes one turn dearer: the medians of 41 turns see the usual turn)."""
    early = statistics.median(per_turn[t] for t in range(80, 121) if t in per_turn)
    late = statistics.median(per_turn[t] for t in range(turns - 40, turns + 1) if t in per_turn)
    return early * 1e3, late * 1e3, late / early


def append_cost(turns: int, tmp: Path) -> tuple[float, float, float]:
    """Indexing one message (its own SQLite transaction, as the debate's process does) at turns
    80–120 and at the last 41 of a `turns`-message index built here: medians in ms, and the ratio."""
    from moot.core.events import ContributionAdded
    from moot.core.models.state import Contribution
    from tests.prose import reply

    index = SearchIndex(tmp / "append.sqlite")
    cost: dict[int, float] = {}
    for t in range(1, turns + 1):
        event = ContributionAdded(contribution=Contribution(id=f"c-{t}", agent_id=AGENTS[t % 4], role=AGENTS[t % 4],
                                                            type="message", round=t, content=reply(t, 700).text))
        event.seq = t
        t0 = time.perf_counter()
        index.add_event(event)
        cost[t] = time.perf_counter() - t0
    index.close()
    early = statistics.median(cost[t] for t in range(80, 121))
    late = statistics.median(cost[t] for t in range(turns - 40, turns + 1))
    return early * 1e3, late * 1e3, late / early


def search_latency(folder: Path, word: str) -> tuple[float, float, float, int]:
    """Median seconds of `moot search` from process start, of `moot search --help` (start-up alone),
    of the search in this process; and the hits."""
    walls = []
    for _ in range(5):
        t0 = time.perf_counter()
        r = subprocess.run([*MOOT, "search", word, "--debate", folder.name, "--state-dir", str(folder.parent)],
                           capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
        walls.append(time.perf_counter() - t0)
        assert r.returncode == 0, r.stderr
    bare = []
    for _ in range(5):  # the same process doing nothing but parse its arguments: what start-up costs here
        t0 = time.perf_counter()
        subprocess.run([*MOOT, "search", "--help"], capture_output=True, text=True)
        bare.append(time.perf_counter() - t0)
    index = SearchIndex(folder / INDEX_FILE)
    inner = []
    for _ in range(20):
        t0 = time.perf_counter()
        hits = index.search(word, limit=20)
        inner.append(time.perf_counter() - t0)
    index.close()
    return statistics.median(walls), statistics.median(bare), statistics.median(inner), len(hits)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="10,000 turns")
    ap.add_argument("--turns", type=int, default=None)
    ap.add_argument("--engineer", action="store_true", help="the planted-fact check of a 300-turn conversation")
    args = ap.parse_args()
    if args.engineer:
        engineer_main(args.turns or 300)
        return
    turns = args.turns or (10_000 if args.full else 2_000)
    with tempfile.TemporaryDirectory() as tmp:
        on = asyncio.run(run(turns, Path(tmp) / "on", recall=True))
        off = asyncio.run(run(turns, Path(tmp) / "off", recall=False))
        n = on["mentions"]
        print(f"{turns} turns, 4 agents, {len(on['plants'])} facts planted, {n} later turns name one again")
        for name, r in (("on", on), ("off", off)):
            print(f"recall {name:3}: next view holds the planted message verbatim {r['whole']}/{n} = "
                  f"{100 * r['whole'] / n:.1f} %, its fact sentence {r['sentence']}/{n} = "
                  f"{100 * r['sentence'] / n:.1f} %  (wall {r['wall']:.0f} s)")
        for name, r in (("on", on), ("off", off)):
            early, late, ratio = cost_ratio(r["per_turn"], turns)
            print(f"view build, recall {name:3}: turns 80-120 {early:.2f} ms, last 41 turns {late:.2f} ms, "
                  f"ratio {ratio:.2f}")
        print(f"index {on['index'] / 1e6:.1f} MB / log {on['log'] / 1e6:.1f} MB = {on['index'] / on['log']:.2f}")
        early, late, ratio = append_cost(turns, Path(tmp))
        print(f"indexing a message: turns 80-120 {early:.3f} ms, last 41 of {turns} {late:.3f} ms, ratio {ratio:.2f}")
        n_diff = differing(turns, Path(tmp) / "whole", on["digests"])
        print(f"requests unlike those of the conversation held whole: {n_diff}/{len(on['digests'])}")
        word = planted(next(iter(on["plants"].values()))).name
        wall, bare, inner, hits = search_latency(on["folder"], word)
        print(f"moot search {word} on the {turns}-turn debate: {wall:.3f} s from process start (median of 5; "
              f"`moot search --help` {bare:.3f} s), {inner * 1e3:.2f} ms the search itself, {hits} hits")


def engineer_main(turns: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, on in (("on", True), ("off", False)):
            r = asyncio.run(run(turns, Path(tmp) / name, recall=on, engineer=True))
            n = r["mentions"]
            print(f"recall {name:3}: {turns} turns, {len(r['plants'])} facts planted in turns 1-40, {n} brought up "
                  f"after turn 200: the next request holds the fact's sentence and the 150 characters after it "
                  f"{r['whole']}/{n} = {100 * r['whole'] / n:.1f} %, the sentence {r['sentence']}/{n} "
                  f"(wall {r['wall']:.0f} s)")


if __name__ == "__main__":
    main()

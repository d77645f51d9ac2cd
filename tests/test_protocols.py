"""The three protocols through the CLI and the real SDK: what every request holds, and nothing else."""

from __future__ import annotations

import asyncio
import json
import random
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from moot.core import tokens
from moot.core.config import Overrides, build_config
from moot.core.context.index import DebateIndex
from moot.core.context.view import history_ids, render_messages
from moot.core.models.state import DebateState
from moot.core.session import SessionOptions, new_session
from moot.core.storage.folder import DebateFolder
from moot.core.storage.state_dir import StateDir
from tests.conftest import cli, read_jsonl
from tests.loopback import LoopbackServer
from tests.test_resume import check_complete, cli_env, resume_hint, spawn, start_loopback, wait_for_events

PROBLEM = "Design a rate limiter for a public API"
TURN_TASK = re.compile(r"^# Turn (\d+) of (\d+)", re.M)
TURN_HEAD = re.compile(r"^### Turn (\d+) · ", re.M)


def _write_config(path: Path, debate: dict[str, Any]) -> Path:
    path.write_text(tomli_w.dumps({"debate": debate}))
    return path


def _load(state_dir: Path) -> DebateState:
    (folder,) = StateDir(state_dir).debates()
    return folder.load()


def _kind(body: dict[str, Any]) -> str:
    task = body["messages"][-1]["content"]
    if TURN_TASK.match(task):
        return "turn"
    if task.startswith(("# Summarize the conversation", "# Summarize turns")):
        return "summarize"
    if task.startswith("# Final synthesis"):
        return "synthesis"
    return "other"


# ----------------------------------------------------------------- conversation


def test_conversation_120_turns_window_summary_and_exact_context(tmp_path: Path) -> None:
    """recent_messages = 10, summary_every = 10: every turn's request holds the previous ten
    replies verbatim and in order, every older reply is covered by the summary it carries,
    every summarization request holds only the previous summary and the replies that aged
    out, no request passes its budget, and `moot context --turn` is the received body."""
    cfg = _write_config(tmp_path / "conv.toml", {"protocol": "conversation", "turns": 120, "conversation": {
        "recent_messages": 10, "summary_every": 10}})
    sd = tmp_path / "debates"
    with LoopbackServer(reply_chars=400) as srv:
        r = cli("run", PROBLEM, "--headless", "-c", str(cfg), "--provider", "openai", "--base-url", srv.base_url,
                "--state-dir", str(sd))
        bodies = srv.requests
    assert r.returncode == 0, r.stderr
    state = _load(sd)
    assert state.protocol == "conversation" and state.status == "completed"
    messages = {c.round: c for rnd in state.rounds for c in rnd.contributions if c.type == "message"}
    assert sorted(messages) == list(range(1, 121))
    assert [messages[t].agent_id for t in (1, 2, 3, 4)] == ["architect", "performance", "kiss", "architect"]
    index = DebateIndex(state)

    turns = [b for b in bodies if _kind(b) == "turn"]
    summaries = [b for b in bodies if _kind(b) == "summarize"]
    # a roll every 10 turns from turn 21 on, and one more for the judge's synthesis window
    assert len(turns) == 120 and len(summaries) == 11
    for body in bodies:  # never over budget: input + the reserved output within 8,000 tokens
        assert tokens.count_messages(body["messages"], body["model"]) + body["max_tokens"] <= 8000

    covered_before = 0
    for body in turns:
        t = int(TURN_TASK.search(body["messages"][-1]["content"]).group(1))
        recent = next((m["content"] for m in body["messages"] if m["content"].startswith("## The latest messages")), "")
        shown = [int(k) for k in TURN_HEAD.findall(recent)]
        assert shown == list(range(shown[0], t)) if shown else t == 1  # contiguous, in order, up to t-1
        assert shown[-10:] == list(range(max(1, t - 10), t)) if t > 1 else True
        for k in shown:  # verbatim: the reply exactly as recorded
            assert messages[k].content.strip() in recent
        summary = next((m["content"] for m in body["messages"] if m["content"].startswith("## Summary of the conv")),
                       None)
        first_shown = shown[0] if shown else t
        if first_shown > 1:  # everything older is covered by the summary this request carries
            assert summary is not None
            assert f"(turns 1–{first_shown - 1};" in summary
        else:
            assert summary is None
        assert first_shown - 1 >= covered_before  # coverage never goes back
        covered_before = first_shown - 1

    previous_end = 0
    for body in summaries:
        # As the speakers' views lay them out: the earlier summary, then the messages to fold in.
        history = next(m["content"] for m in body["messages"] if m["content"].startswith("## The latest messages"))
        folded = [int(k) for k in TURN_HEAD.findall(history)]
        if asked := re.match(r"# Summarize turns (\d+)–(\d+)", body["messages"][-1]["content"]):
            # Asked of a debater (a roll before a turn): its whole window, the task names what aged out.
            assert folded[:10] == list(range(int(asked.group(1)), int(asked.group(2)) + 1))
            folded = folded[:10]
        assert folded == list(range(previous_end + 1, previous_end + 11))  # the ten that aged out, nothing more
        earlier = [m for m in body["messages"] if m["content"].startswith("## Summary of the conversation so far")]
        assert len(earlier) == (previous_end > 0)
        previous_end = folded[-1]

    # `moot context --turn T --json` is byte for byte what the server received.
    by_turn = {int(TURN_TASK.search(b["messages"][-1]["content"]).group(1)): b for b in turns}
    for t in (1, 11, 21, 57, 120):
        out = cli("context", state.id, "--turn", str(t), "--agent", messages[t].agent_id, "--phase", "turn", "--json",
                  "--state-dir", str(sd))
        assert out.returncode == 0, out.stderr
        (call,) = json.loads(out.stdout)
        assert call["messages"] == by_turn[t]["messages"]
    everything = json.loads(cli("context", state.id, "--turn", "21", "--json", "--state-dir", str(sd)).stdout)
    assert [c["phase"] for c in everything] == ["summarize", "turn"]  # the summarizer's call, then the speaker's
    assert everything[0]["messages"] == summaries[0]["messages"]
    text = cli("context", state.id, "--turn", "21", "--state-dir", str(sd)).stdout
    assert f"{messages[20].agent_id} summarize" in text and "turn ·" in text  # the latest author wrote it
    r = cli("context", state.id, "--round", "1", "--agent", messages[1].agent_id, "--state-dir", str(sd))
    assert r.returncode == 0  # --round works too (a turn is the conversation's step)
    # An agent that did not speak at that turn: said, with whose calls are there (never another's view).
    silent = next(a.id for a in state.agents if a.id != messages[57].agent_id)
    r = cli("context", state.id, "--turn", "57", "--agent", silent, "--state-dir", str(sd))
    assert r.returncode == 2 and r.stdout == ""
    assert f"{silent} made no call at turn 57; calls at that turn: {messages[57].agent_id} (turn)" in r.stderr
    assert index.message_count == 120


def test_conversation_per_agent_scope_and_manual_roll(tmp_path: Path) -> None:
    """per-agent: each agent reads its own rolling summary; `request_summary` rolls it now, with a focus."""
    async def main() -> DebateState:
        cfg = build_config({"debate": {"protocol": "conversation", "turns": 30, "conversation": {
            "summary_scope": "per-agent", "recent_messages": 4, "summary_every": 4}}},
            Overrides(provider="demo"))
        session = new_session(PROBLEM, cfg, SessionOptions(state_dir=tmp_path, demo_delay=0))
        asked = False

        def listen(event: Any) -> None:
            nonlocal asked
            if event.type == "round_started" and event.round == 9 and not asked:
                asked = True
                asyncio.get_running_loop().call_soon(session.orchestrator.request_summary, "kiss", "the cost figures")
        session.bus.listen(listen)
        return await session.run()

    state = asyncio.run(main())
    assert state.status == "completed"
    summaries = [s for rnd in state.rounds for s in [*rnd.replaced_summaries, *rnd.summaries.values()]]
    owners = {s.agent_id for s in summaries}
    assert {"architect", "performance", "kiss", "judge"} <= owners
    manual = [s for s in summaries if s.trigger == "manual"]
    # asked during turn 9: rolled at the next turn boundary
    assert [(s.agent_id, s.round, s.focus) for s in manual] == [("kiss", 10, "the cost figures")]
    index = DebateIndex(state)
    for rnd in state.rounds:
        for call in rnd.calls:
            if call.phase == "turn":
                s = index.summaries.get(call.summary_id or "")
                assert s is None or s.agent_id == call.agent_id  # its own summary
                # nothing falls out uncovered: summary coverage + the window = every earlier turn
                covered = s.covered_count if s else 0
                shown = [index.contributions[i].round for i in history_ids(call, index)]
                assert shown == list(range(covered + 1, call.round)) and not call.dropped_ids
            if call.phase == "summarize" and call.agent_id == "kiss" and call.round == 10:
                task = render_messages(call, index)[-1]["content"]
                assert "the cost figures" in task and "point of view of Kiss" in task


@pytest.mark.slow
def test_conversation_kill_and_resume(tmp_path: Path) -> None:
    proc, url = start_loopback("--delay", "0.05", "--chunk-delay", "0.005")
    try:
        cfg = _write_config(tmp_path / "c.toml", {"protocol": "conversation", "turns": 24, "conversation": {
            "recent_messages": 3, "summary_every": 3}})
        sd = tmp_path / "D"
        args = ("run", PROBLEM, "--headless", "-c", str(cfg), "--provider", "openai", "--base-url", url,
                "--state-dir", str(sd))
        p = spawn(*args, log=tmp_path / "run", env=cli_env())
        folder = wait_for_events(sd, 40, timeout=60)
        time.sleep(random.uniform(0.0, 0.3))
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        with LoopbackServer() as fast:  # the kill is what needs pacing; the resume runs at full speed
            r = cli("resume", folder.name, "--headless", "--base-url", fast.base_url, "--state-dir", str(sd))
        assert r.returncode == 0, r.stderr
        state = check_complete(folder, 24, ["architect", "performance", "kiss"])
        turns = sorted(c.round for rnd in state.rounds for c in rnd.contributions if c.type == "message")
        assert turns == list(range(1, 25))
        assert state.final_solution is not None
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_conversation_200_turns_demo_headless(tmp_path: Path) -> None:
    r = cli("run", PROBLEM, "--protocol", "conversation", "--turns", "200", "--provider", "demo", "--headless",
            "--state-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    state = _load(tmp_path)
    assert state.total_rounds == 200 and state.final_solution is not None
    assert "turn 200" in r.stderr and "DEMO" in r.stderr


# ----------------------------------------------------------------- simultaneous


def test_simultaneous_views_hold_the_previous_round_and_nothing_of_their_own(tmp_path: Path) -> None:
    sd = tmp_path / "debates"
    with LoopbackServer(reply_chars=300) as srv:
        r = cli("run", PROBLEM, "--headless", "--protocol", "simultaneous", "-r", "3", "--provider", "openai",
                "--base-url", srv.base_url, "--state-dir", str(sd))
        bodies = srv.requests
    assert r.returncode == 0, r.stderr
    state = _load(sd)
    answers = {(c.round, c.agent_id): c for rnd in state.rounds for c in rnd.contributions}
    assert {c.type for c in answers.values()} == {"answer"} and len(answers) == 9
    seen = 0
    for body in bodies:
        task = body["messages"][-1]["content"]
        m = re.match(r"# Round (\d+) of 3", task)
        if not m:
            continue
        r_no = int(m.group(1))
        role = next(a.id for a in state.agents if f"as the {a.role}." in task)
        for (rr, agent), c in answers.items():
            inside = c.content.strip() in task
            if rr == r_no - 1:
                assert inside, (r_no, role, agent)  # every previous-round answer, its own included
            else:
                assert not inside, (r_no, role, rr, agent)  # nothing of this round, nothing older
        seen += 1
    assert seen == 9


# ----------------------------------------------------------------- rounds: views do not depend on timing


async def _views_with_jitter(tmp_path: Path, seed: int, delay: float) -> tuple[dict[tuple, str], int | None]:
    """Run a demo debate whose calls finish in a random order; every call's messages by slot."""
    cfg = build_config({"debate": {"summarization": {"threshold": 1500}}}, Overrides(rounds=3, provider="demo"))
    session = new_session(PROBLEM, cfg, SessionOptions(state_dir=tmp_path / f"s{seed}", demo_delay=delay))
    rng = random.Random(seed)
    pool = session.providers
    original = pool.get

    def jittered(agent):  # type: ignore[no-untyped-def]
        provider = original(agent)
        if getattr(provider, "_jitter", False):
            return provider
        inner = provider.stream

        async def stream(request):  # type: ignore[no-untyped-def]
            await asyncio.sleep(rng.uniform(0, 0.02))  # completion order shuffled
            async for item in inner(request):
                yield item

        provider.stream = stream  # type: ignore[method-assign]
        provider._jitter = True  # type: ignore[attr-defined]
        return provider

    pool.get = jittered  # type: ignore[method-assign]
    state = await session.run()
    index = DebateIndex(state)
    views: dict[tuple, str] = {}
    for rnd in state.rounds:
        for call in rnd.calls:
            key = (call.round, call.phase, call.agent_id, call.target_agent_id, len([k for k in views if k[:4] == (
                call.round, call.phase, call.agent_id, call.target_agent_id)]))
            views[key] = json.dumps(render_messages(call, index))
    return views, state.final_solution.confidence if state.final_solution else None


def test_rounds_views_are_identical_whatever_the_timing(tmp_path: Path) -> None:
    first, conf1 = asyncio.run(_views_with_jitter(tmp_path, 1, 0.0))
    second, conf2 = asyncio.run(_views_with_jitter(tmp_path, 2, 0.002))
    assert first.keys() == second.keys() and len(first) > 30
    assert [k for k in first if first[k] != second[k]] == []
    assert conf1 == conf2
    # Inside a phase nothing of the same phase is visible: no critique view holds a round's critiques.
    folder = DebateFolder(next((tmp_path / "s1").iterdir()))
    state = folder.load()
    index = DebateIndex(state)
    for rnd in state.rounds:
        same_round_critiques = {c.id for c in rnd.contributions if c.type == "critique"}
        for call in rnd.calls:
            if call.phase == "critique":
                assert not same_round_critiques & set(call.contribution_ids)
                assert "critique from" not in render_messages(call, index)[-2]["content"].split("Round " +
                                                                                               str(rnd.number))[-1]


def test_every_protocol_is_in_the_event_log_and_the_report(tmp_path: Path) -> None:
    for protocol, flags in (("rounds", ["-r", "1"]), ("simultaneous", ["-r", "2"]),
                            ("conversation", ["--turns", "7"])):
        sd = tmp_path / protocol
        r = cli("run", PROBLEM, "--headless", "--protocol", protocol, *flags, "--provider", "demo",
                "--state-dir", str(sd))
        assert r.returncode == 0, r.stderr
        (folder,) = StateDir(sd).debates()
        events = read_jsonl(folder.events_path)
        assert events[0]["protocol"] == protocol
        report = cli("report", folder.id, "--state-dir", str(sd))
        assert report.returncode == 0 and "## Final synthesis" in report.stdout, report.stderr
        if protocol == "conversation":
            assert "### Turn 7 · " in report.stdout
        if protocol == "simultaneous":
            assert "### Answer: kiss" in report.stdout
        show = cli("show", folder.id, "--state-dir", str(sd))
        assert show.returncode == 0 and protocol in show.stdout


@pytest.mark.parametrize("protocol", ["conversation", "simultaneous"])
def test_resume_hint_in_each_protocol(tmp_path: Path, protocol: str) -> None:
    """A failed call stops any protocol resumably (exit 3); resume finishes it."""
    sd = tmp_path / "D"
    with LoopbackServer(reply_chars=200) as srv:
        srv.faults.fail_models = frozenset({"bad"})
        flags = ["--turns", "6"] if protocol == "conversation" else ["-r", "2"]
        r = cli("run", PROBLEM, "--headless", "--protocol", protocol, *flags, "--provider", "openai", "--model", "bad",
                "--base-url", srv.base_url, "--state-dir", str(sd))
        assert r.returncode == 3 and "continue with `moot resume" in r.stderr, r.stderr
        r2 = cli(*resume_hint(r.stderr), "--headless", "--base-url", srv.base_url, "--model", "good")
        assert r2.returncode == 0, r2.stderr

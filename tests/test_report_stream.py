"""A long debate read back from disk a step at a time, through the CLI: `moot report --html` and
`moot context --turn` never fold the whole debate into memory, and say what the whole state says.

The archive thresholds are lowered (as in `test_bounded_memory`) so that a debate of a few dozen
steps keeps most of them in its log only, as one of 100,000 turns does with the defaults.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from moot.core.config import Overrides, build_config
from moot.core.context.inspect import calls_at_turn, calls_at_turn_in_log
from moot.core.models.state import DebateState
from moot.core.report.html import html_chunks, render_html
from moot.core.report.html_parts import anchor_id
from moot.core.report.markdown import render_report, report_chunks
from moot.core.safety.sanitize import UNSAFE
from moot.core.session import SessionOptions, new_session
from moot.core.storage.folder import DebateFolder
from tests.conftest import cli
from tests.loopback import LoopbackServer
from tests.test_report_html import HOSTILE, KEY, Page, hostile_server_reply, self_contained

PROBLEM = "Design a rate limiter for a public API that thousands of tenants share"
AGENTS = ["architect", "performance", "kiss"]


def _run(state_dir: Path, debate: dict[str, Any], *, debate_id: str, base_url: str | None = None,
         problem: str = PROBLEM, rounds: int | None = None) -> tuple[DebateState, DebateFolder]:
    provider = "openai" if base_url else "demo"
    cfg = build_config({"debate": debate}, Overrides(provider=provider, base_url=base_url, roles=AGENTS, rounds=rounds))
    session = new_session(problem, cfg, SessionOptions(state_dir=state_dir, demo_delay=0, deterministic_ids=True,
                                                       debate_id=debate_id))
    return asyncio.run(session.run()), session.folder


def _conversation(state_dir: Path, turns: int = 48, **conv: Any) -> tuple[DebateState, DebateFolder]:
    debate = {"protocol": "conversation", "turns": turns,
              "conversation": {"recent_messages": 6, "summary_every": 6, **conv}}
    return _run(state_dir, debate, debate_id="conv")


def _never_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, loading every step of a debate (`load(bounded=False)`) fails the test."""
    load = DebateFolder.load

    def bounded_only(self: DebateFolder, *, bounded: bool = True) -> DebateState:
        assert bounded, "the whole debate was folded into memory"
        return load(self, bounded=True)

    monkeypatch.setattr(DebateFolder, "load", bounded_only)


@pytest.mark.parametrize("protocol", ["conversation", "rounds"])
def test_html_report_streams_from_the_log_and_is_the_page_of_the_whole_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_memory: None, protocol: str) -> None:
    if protocol == "conversation":
        state, folder = _conversation(tmp_path)
    else:  # rounds: summaries that say which items of a perspective they cover
        state, folder = _run(tmp_path, {"summarization": {"threshold": 1500}}, debate_id="conv", rounds=8)
    assert state.status == "completed" and folder.load().archived_rounds >= 3
    whole = folder.load(bounded=False)
    sd = str(folder.path.parent)
    _never_whole(monkeypatch)
    for flags in ((), ("--max-calls", "3")):
        want = render_html(whole, max_calls=int(flags[1]) if flags else None)
        got = cli("report", "conv", "--html", *flags, "--state-dir", sd)
        assert got.returncode == 0, got.stderr
        assert got.stdout == want
    out = tmp_path / "page.html"
    written = cli("report", "conv", "--html", "--max-calls", "3", "-o", str(out), "--state-dir", sd)
    assert written.returncode == 0 and written.stdout == "" and str(out) in written.stderr
    page = Page(out.read_text(encoding="utf-8"))
    assert page.errors == [] and page.stack == []
    word = "turn" if protocol == "conversation" else "round"
    assert "calls; the first" in page.text and f"--{word} N --agent architect" in page.text
    if protocol == "rounds":
        assert "Covers 4 items: r1 proposal" in page.text  # a summary of a step the state let go of
    else:
        assert "Covers turns 1–6." in page.text


def test_hostile_replies_in_a_long_conversation_stay_escaped_in_the_streamed_page(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_memory: None) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with LoopbackServer(reply=hostile_server_reply) as srv:
        debate = {"protocol": "conversation", "turns": 36, "conversation": {"recent_messages": 6, "summary_every": 6}}
        state, folder = _run(tmp_path, debate, debate_id="conv", base_url=srv.base_url,
                             problem=f"Design a URL shortener {HOSTILE.replace('{key}', KEY)}")
    assert state.status == "completed" and folder.load().archived_rounds > 0
    _never_whole(monkeypatch)
    out = tmp_path / "page.html"
    got = cli("report", "conv", "--html", "-o", str(out), "--state-dir", str(folder.path.parent))
    assert got.returncode == 0, got.stderr
    text = out.read_text(encoding="utf-8")
    page = Page(text)
    assert page.errors == [] and page.stack == []
    self_contained(page)
    assert KEY not in text and KEY[3:] not in text and UNSAFE.findall(text) == []
    # Every turn's reply, those the state let go of too, is in the page as text, never as markup.
    assert text.count("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;") > 36
    assert "&lt;/details&gt;&lt;/summary&gt;" in text and "<script>" in page.text


@pytest.mark.parametrize("conv", [{}, {"summary_scope": "per-agent"}, {"clarify": True}])
def test_context_turn_reads_the_log_alone_and_shows_what_the_whole_state_shows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_memory: None, conv: dict[str, Any]) -> None:
    """Every turn of a conversation whose state let go of most of its turns, by the log reader
    (the fold forbidden), equals what the whole state shows; with `--clarify`, turn 1 holds the
    clarifying questions asked before it, as the state files them."""
    clarify = conv.pop("clarify", False)
    debate = {"protocol": "conversation", "turns": 30, "clarify": clarify,
              "conversation": {"recent_messages": 6, "summary_every": 6, **conv}}
    state, folder = _run(tmp_path, debate, debate_id="conv")
    assert state.status == "completed" and folder.load().archived_rounds > 0
    whole = folder.load(bounded=False)
    want = {t: calls_at_turn(whole, t) for t in range(1, whole.round_count + 1)}
    _never_whole(monkeypatch)
    assert {t: calls_at_turn_in_log(folder, t) for t in want} == want
    phases = [c["phase"] for c in want[1]]
    assert ("clarify" in phases) == clarify and "turn" in phases
    got = cli("context", "conv", "--turn", "1", "--agent", "architect", "--state-dir", str(folder.path.parent))
    assert got.returncode == 0, got.stderr
    assert ("═══ architect clarify" in got.stdout) == clarify and "═══ architect turn" in got.stdout


def test_watch_headless_reads_the_log_a_block_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`moot watch --headless` on a finished debate prints every event line; read in blocks far
    smaller than a line, lines cut across blocks come out whole and the same."""
    from moot.core.observe import headless

    _, folder = _conversation(tmp_path, turns=12)
    sd = str(folder.path.parent)
    whole = cli("watch", "conv", "--headless", "--state-dir", sd)
    assert whole.returncode == 0, whole.stderr
    assert [f"✎ turn {t} " in whole.stdout for t in range(1, 13)] == [True] * 12
    monkeypatch.setattr(headless, "READ_BLOCK", 97)
    small = cli("watch", "conv", "--headless", "--state-dir", sd)
    assert small.returncode == 0 and small.stdout == whole.stdout


def test_both_reports_write_each_step_as_they_read_it(tmp_path: Path) -> None:
    """The text of turn t is given out before turn t + 2 is read from the log: neither report
    holds the steps (nor their text) to write them later."""
    _, folder = _conversation(tmp_path, turns=16)
    state, whole = folder.load(), folder.load(bounded=False)
    messages = [c for r in whole.rounds for c in r.contributions]
    assert [c.round for c in messages] == list(range(1, 17))
    md = [f"### Turn {c.round} · " for c in messages]
    page = [f'id="{anchor_id("c", c.id)}"' for c in messages]
    for make, markers, want in ((report_chunks, md, render_report(whole)), (html_chunks, page, render_html(whole))):
        read: list[int] = []

        def steps(read: list[int] = read) -> Any:
            for step in folder.steps():
                read.append(step.number)
                yield step

        pieces = [(piece, len(read)) for piece in make(state, steps=steps())]
        assert "".join(piece for piece, _ in pieces) == want
        for turn, marker in enumerate(markers, 1):
            (at,) = [n for piece, n in pieces if marker in piece]
            assert at <= turn + 1, (make.__name__, turn, at)

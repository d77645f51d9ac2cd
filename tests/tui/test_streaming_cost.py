"""What keeps the TUI fast under many streams must not change what it shows.

A streamed reply is rendered as frozen blocks (tui/widgets/markdown_blocks.py): the lines
must be those of the whole text rendered at once, while streaming and once finished. The
hidden roster skips its redraws and must catch up when it is shown. The garbage collector
is tuned only while the app runs.
"""

from __future__ import annotations

import gc
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from moot.core.events import CallStarted, ContributionAdded, Event, PhaseStarted, Token
from moot.core.models.state import CallMetadata, Contribution
from moot.tui.app import create_app
from moot.tui.collector import GEN0_THRESHOLD
from moot.tui.screens.debate import DebateScreen
from moot.tui.widgets import transcript_lines
from moot.tui.widgets.agent_roster import AgentRoster
from moot.tui.widgets.markdown_blocks import cuts, first_cut
from moot.tui.widgets.transcript import Entry, Transcript
from tests.tui.scripted import ScriptedRuntime

from .conftest import fixed_clock, settle, upto

BLOCKS = [
    "## Trade-offs of the token bucket",
    "A token bucket per API key keeps bursts short while the average rate stays fair; the "
    "bucket lives in Redis so that every edge node sees the same count.",
    "- Refill happens lazily on read\n- Keys expire after an hour of silence\n- Limits come from the plan",
    "1. Measure the p99 under load\n2. Pick the bucket size from it",
    "1. Measure first",
    "2. Then decide",
    "- a loose item",
    "  continued under the loose item, indented",
    "```python\ndef allow(key):\n\n    return bucket(key).take(1)\n```",
    "~~~\nraw block\n\nwith a blank line\n~~~",
    "> The fastest request is the one you never make.",
    "| limit | window |\n|---|---|\n| 100 | 1 s |",
    "---",
    "    an indented code block\n\n    that goes on",
    "**Decision:** use the sliding window only where the product asks for exact limits.",
    "12 monkeys are not a list, nor is +1 an item.",
    "* * *",
    "Links such as [the RFC](https://example.org/rfc6585) keep their address.",
    "The limiter sits in front of the API gateway, so a burst from one tenant never reaches the "
    "database; in 2024. 1. It was tried twice (once per region) and the p99 stayed under 40 ms, "
    "which is why the team kept it: 100% of the keys now go through it.",
    "Plain prose that grows word by word is rendered by the lines it added, not again from its "
    "first word, while nothing in it is markup; a supercalifragilisticexpialidociouslylongidentifier "
    "wraps like any other word.",
]


def document(rng: random.Random) -> str:
    return "\n\n".join(rng.choice(BLOCKS) for _ in range(rng.randint(1, 9))) + rng.choice(["", "\n", "\n\n"])


def chunks(text: str, rng: random.Random) -> list[str]:
    out, at = [], 0
    while at < len(text):
        n = rng.choice([1, 2, 3, 5, 8, 40])
        out.append(text[at:at + n])
        at += n
    return out


def lines(strips: list) -> list[list[tuple[str, object]]]:  # type: ignore[type-arg]
    return [[(seg.text, seg.style) for seg in strip] for strip in strips]


@asynccontextmanager
async def mounted_transcript() -> AsyncIterator[Transcript]:
    """A transcript mounted in a running app of 100×30, for the rendering tests below."""
    app = create_app(ScriptedRuntime(clock=fixed_clock), cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        transcript = Transcript()
        await app.screen.mount(transcript)
        await pilot.pause()
        yield transcript


def test_cuts_wait_for_the_line_after_a_break_and_never_split_a_list_or_fence() -> None:
    assert first_cut("One paragraph.\n\n") == 0  # what comes next may continue a list
    assert first_cut("One paragraph.\n\nTwo") == len("One paragraph.\n\n")
    assert first_cut("- item\n\n- item") == 0
    assert first_cut("1. item\n\n2") == 0  # "2" may become "2."
    assert first_cut("- item\n\n  more of the item") == 0
    assert first_cut("```\ncode\n\nmore\n```\n\nAfter") == len("```\ncode\n\nmore\n```\n\n")
    assert cuts("A\n\nB\n\nC") == ["A\n\n", "B\n\n", "C"]
    assert cuts("See [x][1].\n\nMore\n\n[1]: https://example.org") == ["See [x][1].\n\nMore\n\n[1]: https://example.org"]


async def test_streamed_blocks_render_as_the_whole_text() -> None:
    """Random replies streamed in random chunks: the same lines as the whole text rendered at
    once, after every chunk and when the finished reply arrives."""
    rng = random.Random(23)
    await stream_and_compare([document(rng) for _ in range(60)], rng)


async def test_streamed_edge_blocks_render_as_the_whole_text() -> None:
    """The same with images, empty quotes, inline markup, lists that begin on the line after
    a paragraph, and blocks joined by one line break as well as by a blank line."""
    rng = random.Random(5)
    texts = ["\n\n".join(rng.choice(BLOCKS + EDGE_BLOCKS) for _ in range(rng.randint(1, 6)))
             .replace("\n\n", rng.choice(["\n\n", "\n"]), 1) + rng.choice(["", "\n\n"]) for _ in range(40)]
    await stream_and_compare(texts, rng)


async def stream_and_compare(texts: list[str], rng: random.Random) -> None:
    async with mounted_transcript() as transcript:
        width = transcript._width()
        for n, text in enumerate(texts):
            entry = transcript.add(Entry(f"call-{n}", "proposal · …"))
            streamed = ""
            for piece in chunks(text, rng):
                transcript.append_text(entry.key, piece)
                streamed += piece
                body = transcript._entry_strips(entry, width)[1:]  # below the title
                assert lines(body) == lines(transcript._markdown_strips(streamed, width)), (n, streamed)
            frozen = list(entry.segments)
            transcript.set_text(entry.key, text, title="proposal", state="done")
            assert entry.segments[:len(frozen)] == frozen  # the finished reply keeps its blocks
            body = transcript._entry_strips(entry, width)[1:]
            assert lines(body) == lines(transcript._markdown_strips(text, width)), text
            transcript.remove_entry(entry.key)


async def test_a_growing_paragraph_renders_as_the_whole_text_at_any_width() -> None:
    """A plain paragraph keeps the lines it had and renders only from its last line on: after
    every piece, at widths where words fold, the lines of the whole text rendered at once."""
    async with mounted_transcript() as transcript:
        rng = random.Random(7)
        prose = [block for block in BLOCKS if block[0].isalpha() and "[" not in block and "*" not in block]
        kept = 0
        for width in (12, 23, 40, 97):
            for n in range(12):
                text = rng.choice(["", " ", "   "]) + " ".join(rng.choice(prose) for _ in range(rng.randint(1, 3)))
                entry = transcript.add(Entry(f"w{width}-{n}", "proposal · …"))
                streamed = ""
                for piece in chunks(text, rng):
                    transcript.append_text(entry.key, piece)
                    streamed += piece
                    kept += bool(entry.grown and entry.grown.kept)
                    body = transcript._entry_strips(entry, width)[1:]
                    assert lines(body) == lines(transcript._markdown_strips(streamed, width)), (width, streamed)
                transcript.remove_entry(entry.key)
        assert kept > 100  # the lines were kept, not only rendered again


async def test_a_growing_reply_keeps_the_line_objects_it_already_wrapped() -> None:
    """A paragraph and a bullet point that grow word by word hand back the very strips of the
    lines that did not change (the style cache then reuses what it made of them): only the
    lines from the last one the new words reached are new."""
    async with mounted_transcript() as transcript:
        width = 40
        words = ("Refill happens lazily on read, so an idle key costs nothing until its next request "
                 "arrives and the bucket is topped up from the elapsed time alone").split()
        for lead in ("The plan has three parts:\n- ", ""):
            entry = transcript.add(Entry(f"grow-{len(lead)}", "proposal · …"))
            transcript.append_text(entry.key, lead + words[0])
            before = transcript._entry_strips(entry, width)[1:]  # below the title
            reused = 0
            for word in words[1:]:
                transcript.append_text(entry.key, " " + word)
                after = transcript._entry_strips(entry, width)[1:]
                settled = len(before) - 1  # the lines above the last one the new word could reach
                assert all(a is b for a, b in zip(after[:settled], before[:settled])), word
                reused += settled
                before = after
            assert reused > len(words), reused
            transcript.remove_entry(entry.key)


async def test_a_growing_bullet_renders_as_the_whole_text_without_parsing_it(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A bullet point that grows below a paragraph (a reply's list as it streams) is drawn
    without parsing the text again for every chunk: after every piece, at widths where words
    fold, its lines are those of the whole text rendered at once by Rich."""
    parsed: list[str] = []
    real = transcript_lines.markdown
    monkeypatch.setattr(transcript_lines, "markdown", lambda text, theme: parsed.append(text) or real(text, theme))
    async with mounted_transcript() as transcript:
        rng = random.Random(11)
        prose = [block for block in BLOCKS if block[0].isalpha() and "[" not in block and "*" not in block]
        unparsed = 0
        for width in (12, 23, 40, 97):
            for n in range(6):
                intro = rng.choice(["The plan has three parts:", "Two things follow from the numbers above"])
                text = f"{intro}\n{rng.choice('-*+')} " + " ".join(rng.choice(prose) for _ in range(rng.randint(1, 2)))
                text += rng.choice(["", "\n", "\n\n"])
                entry = transcript.add(Entry(f"w{width}-{n}", "proposal · …"))
                streamed = ""
                for piece in chunks(text, rng):
                    transcript.append_text(entry.key, piece)
                    streamed += piece
                    parsed.clear()
                    body = transcript._entry_strips(entry, width)[1:]
                    unparsed += not parsed and streamed.partition("\n")[2][2:3].isalpha()  # in the item
                    assert lines(body) == lines(transcript._markdown_strips(streamed, width)), (width, streamed)
                transcript.remove_entry(entry.key)
        assert unparsed > 400  # the item's lines were made here, the text not parsed again


EDGE_BLOCKS = [
    "The plan has three parts:\n- measure the p99\n- pick the bucket size\n- roll it out per region",
    "An image ends this paragraph ![the graph](graph.png)",
    "![alone](a.png)",
    ">",
    "> quoted\n>\n> - a list in a quote",
    "Some `inline code`, *emphasis* and **strong** text, ~~struck~~ too, <kbd>Ctrl</kbd> and a <b>tag</b>.",
    "# A title\n## A subtitle",
    "Setext title\n---",
    "1. first\n   - nested\n2. second",
    "Escapes such as \\*not emphasis\\* and &amp; or &copy; stay  one run of text, as does caf\u00e9 \u4e2d\u6587.",
    "A line\nthat goes on below, and a hard break  \nafter two spaces.",
]


async def test_blocks_rendered_apart_join_to_the_whole_text_at_any_width() -> None:
    """A text's top-level blocks rendered one by one (those rendered before taken from the
    entry's kept blocks) and joined give the lines of the whole text rendered at once."""
    async with mounted_transcript() as transcript:
        rng = random.Random(41)
        kept: dict = {}  # type: ignore[type-arg]
        reused = 0
        for width in (12, 23, 40, 97):
            kept.clear()
            for _ in range(40):
                blocks = [rng.choice(BLOCKS + EDGE_BLOCKS) for _ in range(rng.randint(1, 6))]
                text = rng.choice(["\n\n", "\n"]).join(blocks) + rng.choice(["", "\n\n"])
                before = len(kept)
                strips, gap = transcript._markdown_block(text, width, kept)
                reused += len(kept) <= before
                whole, whole_gap = transcript._markdown_block(text, width)
                assert (lines(strips), gap) == (lines(whole), whole_gap), (width, text)
        assert reused > 10  # blocks were taken from those kept, not only rendered again


def streaming(recorded: list[Event]) -> list[Event]:
    """Round 1's proposals started and half streamed (no call finished yet)."""
    before = upto(recorded, lambda e: e.type == "phase_started" and e.round == 1 and e.phase == "proposal")
    rest = recorded[len(before):]
    started = [e for e in rest if isinstance(e, CallStarted) and e.view.phase == "proposal"]
    # The log keeps no token deltas: the first two calls stream a few words.
    tokens = [Token(call_id=e.view.call_id, agent_id=e.view.agent_id, delta=word)
              for e in started[:2] for word in ("A token bucket ", "per API key ", "keeps bursts short.")]
    return before + started + tokens


async def test_hidden_roster_catches_up_when_shown(recorded4) -> None:  # type: ignore[no-untyped-def]
    events = streaming(recorded4)
    runtime = ScriptedRuntime(events=events, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:  # the grid: every pane shown, the roster hidden
        await settle(pilot, runtime)
        screen = app.screen
        assert isinstance(screen, DebateScreen) and not screen.compact
        roster = screen.query_one(AgentRoster)
        assert not roster.display
        streaming_ids = {e.agent_id for e in events if isinstance(e, Token)}
        row = roster.rows[next(iter(sorted(streaming_ids)))]
        assert row.activity.status == "streaming" and row.stale  # noted, not drawn
        await pilot.resize_terminal(80, 24)  # the focus layout shows the roster
        await settle(pilot)
        assert roster.display and not row.stale
        name = row.query_one(".row-name")
        assert str(name.render()).startswith("●") and name.has_class("-streaming")
        # A call that ends while the roster is shown updates it at once.
        call = next(e for e in events if isinstance(e, CallStarted) and e.view.agent_id == row.info.id)
        c = Contribution(id="c-1", agent_id=row.info.id, role=row.info.role, type="proposal", round=1,
                         content="A finished proposal about the rate limiter's buckets.",
                         metadata=CallMetadata(call_id=call.view.call_id))
        runtime.push(ContributionAdded(contribution=c), PhaseStarted(round=1, phase="critique"))
        await settle(pilot, runtime)
        assert str(name.render()).startswith("○") and name.has_class("-waiting")


async def test_collector_is_tuned_only_while_the_app_runs() -> None:
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    runtime = ScriptedRuntime(clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert app.collector.active
        assert gc.get_threshold()[0] == max(GEN0_THRESHOLD, before[0])
        assert gc.get_freeze_count() > frozen_before
    assert not app.collector.active
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0

"""A transcript's scroll range and what it shows: the newest line stays on screen while text
streams in, and growing text costs no layout of the whole screen."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.geometry import Region

from moot.tui.widgets.transcript import Entry, Transcript

REPLY = [
    "A token bucket per API key keeps bursts short while the average rate stays fair. ",
    "The bucket lives in Redis so that every edge node sees the same count, ",
    "and a refill happens lazily on read instead of on a timer.\n\n",
    "- Keys expire after an hour of silence\n",
    "- Limits come from the customer's plan, not from the code\n\n",
    "Measure the p99 under load before picking the bucket size; ",
    "a sliding window only pays for itself where the product promises exact limits.",
]


class OnePane(App[None]):
    CSS = "Transcript { width: 40; height: 8; }"

    def compose(self) -> ComposeResult:
        yield Transcript()


def shown(transcript: Transcript) -> list[str]:
    width, height = transcript.scrollable_content_region.size
    strips = transcript.render_lines(Region(0, 0, width, height))
    return ["".join(segment.text for segment in strip).rstrip() for strip in strips]


async def test_the_newest_line_stays_on_screen_without_a_layout_per_append() -> None:
    app = OnePane()
    async with app.run_test(size=(60, 20)) as pilot:
        transcript = app.query_one(Transcript)
        transcript.add(Entry("call-1", "proposal · …"))
        await pilot.pause()
        screen = app.screen
        layouts: list[int] = []
        refresh_layout = screen._refresh_layout

        def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
            layouts.append(1)
            refresh_layout(*args, **kwargs)

        screen._refresh_layout = counted  # type: ignore[method-assign]
        streamed = ""
        for piece in REPLY:
            transcript.append_text("call-1", piece)
            streamed += piece
            await pilot.pause()
            last_words = " ".join(streamed.split()[-2:])
            text = [line for line in shown(transcript) if line]
            assert last_words in " ".join(" ".join(text[-2:]).split()), (streamed, text)
        assert transcript.show_vertical_scrollbar
        # The scrollbar appearing lays the screen out (it takes a column); nothing else does.
        assert len(layouts) <= 2, len(layouts)
        assert transcript.scroll_y == transcript.max_scroll_y


async def test_the_scroll_range_follows_the_narrower_text_once_the_scrollbar_shows() -> None:
    """Text that brings the scrollbar in one go (nothing streams after it) wraps at the
    narrower width, and the scroll range counts those lines: the last one is shown."""
    app = OnePane()
    async with app.run_test(size=(60, 20)) as pilot:
        transcript = app.query_one(Transcript)
        transcript.add(Entry("c-1", "proposal", text="".join(REPLY), state="done"))
        await pilot.pause()
        await pilot.pause()
        assert transcript.show_vertical_scrollbar
        assert transcript.virtual_size.width == transcript.scrollable_content_region.width
        assert "exact limits." in shown(transcript)[-1]
        assert transcript.scroll_y == transcript.max_scroll_y


PARAGRAPHS = [
    "## Where the time goes",
    "Every request for a short link first checks the edge cache, then the regional replica, and "
    "only on a miss the primary; the primary sees about one read in forty once the cache is warm.",
    "- Writes go through a queue so that bursts never reach the database directly\n"
    "- The queue is drained in batches of a few hundred rows\n"
    "- A slow batch pauses the drain instead of failing the writes",
    "Latency stays flat under load because nothing on the read path waits for a write, and the "
    "only lock taken is the one that guards the counter of a single link.",
    "1. Measure the p99 at twice the expected peak\n2. Size the cache from the hit rate, not the key count",
    "```python\ndef resolve(code):\n    return cache.get(code) or replica.lookup(code)\n```",
    "> Capacity planning is a guess until the first week of real traffic.",
    "The rest is bookkeeping: retention of the click log, its export for the analytics team, and "
    "a monthly check that the expiry job still runs.",
]


async def test_only_the_lines_in_view_are_rendered_and_scrollback_shows_the_whole_text() -> None:
    """A long reply streams into a small pane faster than frames are drawn (several chunks
    between two frames, as on a busy loop): the paragraphs that scrolled past unseen are never
    rendered; scrolled back, every screen shows exactly the lines of the whole reply rendered
    at once, from the top to the end."""
    app = OnePane()
    async with app.run_test(size=(60, 20)) as pilot:
        transcript = app.query_one(Transcript)
        entry = transcript.add(Entry("call-1", "proposal · …"))
        text = "\n\n".join(PARAGRAPHS * 4)
        for n, at in enumerate(range(0, len(text), 90)):
            transcript.append_text("call-1", text[at:at + 90])
            if n % 8 == 7:
                await pilot.pause()
        await pilot.pause()
        assert len(entry.segments) >= 15
        rendered = [part for part in entry.rendered if part >= 0]
        assert len(rendered) < len(entry.segments) / 3, (len(rendered), len(entry.segments))

        width, height = transcript.scrollable_content_region.size
        whole = ["proposal · …"] + ["".join(s.text for s in strip).rstrip()
                                     for strip in transcript._markdown_strips(text, width)]
        transcript.scroll_home(animate=False)
        await pilot.pause()
        assert not transcript.is_vertical_scroll_end
        while True:
            y = round(transcript.scroll_y)
            assert shown(transcript) == (whole[y:y + height] + [""] * height)[:height], y
            if transcript.is_vertical_scroll_end:
                break
            transcript.scroll_to(y=y + height - 1, animate=False)
            await pilot.pause()
        assert transcript.virtual_size.height == len(whole)  # every estimate replaced on the way


async def test_a_finished_reply_scrolled_to_its_start_moves_the_scrollbar_with_it() -> None:
    """A pane that followed a long stream is scrolled to the start of the finished reply (as
    the judge's solution is): the text, the scroll position and the scrollbar's thumb agree
    (the thumb once stayed where the streamed end had put it, drawn half off the track)."""
    app = OnePane()
    async with app.run_test(size=(60, 20)) as pilot:
        transcript = app.query_one(Transcript)
        transcript.add(Entry("call-0", "proposal", text="\n\n".join(PARAGRAPHS), state="done"))
        transcript.add(Entry("call-1", "solution · …"))
        text = "\n\n".join(PARAGRAPHS * 2)
        for at in range(0, len(text), 120):
            transcript.append_text("call-1", text[at:at + 120])
            await pilot.pause()
        assert transcript.scroll_y == transcript.max_scroll_y > 0
        transcript.set_text("call-1", text, title="Final solution", state="solution")
        transcript.scroll_to_entry("call-1")
        await pilot.pause()
        await pilot.pause()
        assert shown(transcript)[0] == "Final solution"
        assert 0 < transcript.scroll_y < transcript.max_scroll_y
        assert transcript.vertical_scrollbar.position == transcript.scroll_y
        assert transcript.vertical_scrollbar.window_virtual_size == transcript.virtual_size.height


async def test_scrolled_up_the_view_stays_while_text_streams_and_follows_again_once_back() -> None:
    """The user scrolls up (the wheel releases the anchor): text that keeps streaming does not
    move what they read; back at the end (the follow key, or scrolling down to it) the pane
    shows the newest line again and keeps showing it as more arrives."""
    app = OnePane()
    async with app.run_test(size=(60, 20)) as pilot:
        transcript = app.query_one(Transcript)
        transcript.add(Entry("call-1", "proposal · …"))
        text = "\n\n".join(PARAGRAPHS * 3)
        chunks = [text[at:at + 60] for at in range(0, len(text), 60)]
        third = len(chunks) // 3
        for chunk in chunks[:third]:
            transcript.append_text("call-1", chunk)
            await pilot.pause()
        transcript.release_anchor()  # what a wheel turn up does before it scrolls
        transcript.scroll_to(y=3, animate=False, immediate=True)
        await pilot.pause()
        before = shown(transcript)
        for chunk in chunks[third:2 * third]:
            transcript.append_text("call-1", chunk)
            await pilot.pause()
        assert transcript.scroll_y == 3 and shown(transcript) == before
        assert transcript.max_scroll_y > 3

        transcript.scroll_to(y=transcript.max_scroll_y, animate=False, immediate=True)  # the wheel, down to the end
        await pilot.pause()
        for chunk in chunks[2 * third:-4]:
            transcript.append_text("call-1", chunk)
            await pilot.pause()
            assert transcript.scroll_y == transcript.max_scroll_y

        transcript.release_anchor()
        transcript.scroll_to(y=0, animate=False, immediate=True)
        await pilot.pause()
        transcript.follow_end()  # the follow key
        for chunk in chunks[-4:]:
            transcript.append_text("call-1", chunk)
            await pilot.pause()
            assert transcript.scroll_y == transcript.max_scroll_y
        assert "expiry job still runs." in " ".join(" ".join(shown(transcript)).split())
        assert transcript.vertical_scrollbar.position == transcript.scroll_y

"""What spares a frame's work must draw what Textual would have drawn.

`PlainScrollBar` makes a transcript's scrollbar lines from `ScrollBarRender.render_bar`
directly (tui/widgets/plain_scrollbar.py): compared here with Textual's own drawing of the
same scrollbar at every thumb position, with and without the ANSI colour filter, hovered
and not. `KeptLines` hands back a widget's last lines while nothing changed
(tui/widgets/kept_lines.py): a label and a gauge that change must show the change, and so
must a pane's status line, which repaints only its row.
"""

from __future__ import annotations

from rich.text import Text
from textual import messages
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.scrollbar import ScrollBar
from textual.widgets import Static

from moot.core.events import CallStarted, ContributionAdded, Token
from moot.core.models.state import CallMetadata, Contribution, TierTokens
from moot.tui import textual_compat as compat
from moot.tui.app import create_app
from moot.tui.format import dom_id
from moot.tui.theming import VARIABLE_DEFAULTS
from moot.tui.widgets.agent_pane import AgentPane
from moot.tui.widgets.kept_lines import KeptLabel
from moot.tui.widgets.plain_scrollbar import PlainScrollBar
from moot.tui.widgets.token_gauge import TokenGauge
from moot.tui.widgets.transcript import Entry, Transcript
from tests.tui.scripted import ScriptedRuntime

from .conftest import fixed_clock, settle
from .test_streaming_cost import streaming

PROSE = ("The cache keeps hot keys close to the edge while writes go through a queue, so that "
         "latency stays flat under load and the database only sees batched traffic. ")


class TranscriptApp(App[None]):
    CSS = "Transcript { height: 12; width: 40; }"

    def compose(self) -> ComposeResult:
        yield Transcript()


def lines_of(strips: list) -> list[list]:  # type: ignore[type-arg]
    return [list(strip) for strip in strips]


async def test_plain_scrollbar_draws_what_textual_draws() -> None:
    app = TranscriptApp()
    async with app.run_test(size=(60, 20)) as pilot:
        transcript = app.query_one(Transcript)
        transcript.add(Entry("a", "Architect · R1 proposal", text=PROSE * 12))
        await pilot.pause()
        bar = transcript.vertical_scrollbar
        assert isinstance(bar, PlainScrollBar) and bar.display
        compared = 0
        for hovered in (False, True):
            bar.mouse_over = hovered
            for y in range(0, int(transcript.max_scroll_y) + 1, 3):
                transcript.scroll_to(y=y, animate=False, immediate=True)
                await pilot.pause()
                whole = Region(0, 0, *bar.size)
                ours = bar.render_lines(whole)
                assert bar.render_lines(whole) is not None
                bar.refresh()  # Textual's drawing from a clean cache
                theirs = ScrollBar.render_lines(bar, whole)
                assert lines_of(ours) == lines_of(theirs), (hovered, y)
                part = Region(0, 2, bar.size.width, 3)
                assert lines_of(bar.render_lines(part)) == lines_of(theirs[2:5])
                compared += 1
        assert compared > 10
        # Without the ANSI filter (a terminal that takes truecolor as it is): still the same.
        app.ansi_color = True
        await pilot.pause()
        bar.refresh()
        assert lines_of(bar.render_lines(Region(0, 0, *bar.size))) == lines_of(
            ScrollBar.render_lines(bar, Region(0, 0, *bar.size)))


async def test_an_unchanged_scrollbar_hands_back_its_lines_and_shows_every_change() -> None:
    """A bar that did not change since the last frame returns the lines it returned then (its
    colours are not worked out from its ancestors again); a refresh, a new position, hovering
    and another theme draw it anew, as Textual draws it."""
    app = TranscriptApp()
    async with app.run_test(size=(60, 20)) as pilot:
        transcript = app.query_one(Transcript)
        transcript.add(Entry("a", "Architect · R1 proposal", text=PROSE * 12))
        await pilot.pause()
        bar = transcript.vertical_scrollbar
        whole = Region(0, 0, *bar.size)

        def textual_drawing() -> list[list]:  # type: ignore[type-arg]
            lines = ScrollBar.render_lines(bar, whole)
            compat.clear_style_cache(bar)  # that drawing went through the style cache: forget it
            return lines_of(lines)

        first = bar.render_lines(whole)
        assert bar.render_lines(whole) is first
        bar.refresh()
        assert bar.render_lines(whole) is not first
        for change in ("position", "hover", "theme"):
            before = bar.render_lines(whole)
            if change == "position":
                transcript.scroll_to(y=3, animate=False, immediate=True)
            elif change == "hover":
                bar.mouse_over = True
            else:
                app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
            await pilot.pause()
            after = bar.render_lines(whole)
            assert after is not before and lines_of(after) != lines_of(before), change
            assert lines_of(after) == textual_drawing(), change


class LabelApp(App[None]):
    def get_theme_variable_defaults(self) -> dict[str, str]:
        return VARIABLE_DEFAULTS

    def compose(self) -> ComposeResult:
        yield KeptLabel("first words", id="label")
        yield TokenGauge(id="gauge")
        yield Static("below")


def text_of(strips: list) -> str:  # type: ignore[type-arg]
    return "".join(segment.text for strip in strips for segment in strip)


async def test_streamed_text_reaches_the_next_frame_without_a_message_to_the_screen() -> None:
    """Text that arrives in a transcript puts it in its screen's next frame directly: no
    `Update` message goes to the screen for it (Textual's refresh sends one per widget and
    chunk, after an idle turn of the widget's own queue), and that frame draws the new words."""
    updates: list[messages.Update] = []

    def hook(message: object) -> None:
        if isinstance(message, messages.Update) and isinstance(message.widget, Transcript):
            updates.append(message)

    app = TranscriptApp()
    async with app.run_test(size=(60, 20), message_hook=hook) as pilot:
        transcript = app.query_one(Transcript)
        transcript.add(Entry("a", "Architect · R1 proposal", text=PROSE * 4))
        await pilot.pause()
        assert transcript.show_vertical_scrollbar  # its scrollbar came with a layout, before
        updates.clear()
        pieces = PROSE.replace(", ", ",| ").replace(" and ", " and| ").split("|") * 3
        for piece in pieces:
            transcript.append_text("a", piece)
            await pilot.pause()
            drawn = " ".join(strip.text for strip in compat.cached_lines(transcript).values())
            assert piece.split()[-1] in drawn, (piece, drawn)
        assert updates == []


async def test_an_unchanged_transcript_hands_back_its_lines_and_shows_every_change() -> None:
    """A transcript whose text did not change since the last frame (another pane's text put it
    in the frame) returns the lines it returned then; new text, and scrolling, draw anew."""
    app = TranscriptApp()
    async with app.run_test(size=(60, 20)) as pilot:
        transcript = app.query_one(Transcript)
        transcript.add(Entry("a", "Architect · R1 proposal", text=PROSE * 4))
        await pilot.pause()
        crop = Region(0, 0, *transcript.size)
        first = transcript.render_lines(crop)
        assert transcript.render_lines(crop) is first
        transcript.append_text("a", "The replicas agree before the write returns.")
        await pilot.pause()
        grown = transcript.render_lines(crop)
        assert grown is not first and "write returns." in " ".join(strip.text for strip in grown)
        transcript.scroll_to(y=0, animate=False, immediate=True)
        await pilot.pause()
        top = transcript.render_lines(crop)
        assert top is not grown and "The cache keeps hot keys" in top[1].text


async def test_a_following_transcript_repaints_its_scrollbar_once_per_frame() -> None:
    """Each line of new text grows the scroll range and moves the thumb to the end: the bar is
    asked to repaint once for both, and its thumb is at the end after every chunk."""
    app = TranscriptApp()
    async with app.run_test(size=(60, 20)) as pilot:
        transcript = app.query_one(Transcript)
        transcript.add(Entry("a", "Architect · R1 proposal", text=PROSE * 4))
        await pilot.pause()
        bar = transcript.vertical_scrollbar
        asked: list[int] = []
        refresh = bar.refresh

        def counted(*regions: Region, **kwargs: bool) -> PlainScrollBar:
            asked.append(1)
            return refresh(*regions, **kwargs)  # type: ignore[return-value]

        bar.refresh = counted  # type: ignore[method-assign]
        chunks = PROSE.split(", ") * 3
        for sentence in chunks:
            transcript.append_text("a", sentence + " ")
            await pilot.pause()
            assert bar.position == transcript.max_scroll_y == bar.window_virtual_size - bar.window_size
        await pilot.pause()
        # Counted over all the chunks, not per pause: on a loaded machine one chunk's repaint can
        # land after the next pause has begun.
        assert len(asked) <= len(chunks), (len(asked), len(chunks))


async def test_a_moving_scrollbar_joins_the_next_frame_without_a_message_to_the_screen() -> None:
    """The thumb that follows new text is drawn in the frame after the text's (the bar was
    drawn already when the text set its range): the bars asked for during a frame join the
    next one together, with no prompt to each bar and no `Update` message to the screen."""
    updates: list[messages.Update] = []

    def hook(message: object) -> None:
        if isinstance(message, messages.Update) and isinstance(message.widget, ScrollBar):
            updates.append(message)

    app = TranscriptApp()
    async with app.run_test(size=(60, 20), message_hook=hook) as pilot:
        transcript = app.query_one(Transcript)
        transcript.add(Entry("a", "Architect · R1 proposal", text=PROSE * 4))
        for _ in range(3):  # the layout that brought the bar (it repaints the bar as Textual does)
            await pilot.pause()
        bar = transcript.vertical_scrollbar
        painted: list[float] = []
        compositor = app.screen._compositor
        update_widgets = compositor.update_widgets

        def recording(widgets: set) -> None:  # type: ignore[type-arg]
            if bar in widgets:
                painted.append(bar.position)
            update_widgets(widgets)

        compositor.update_widgets = recording  # type: ignore[method-assign]
        updates.clear()
        for sentence in PROSE.split(", ") * 3:
            transcript.append_text("a", sentence + " ")
            for _ in range(50):  # a frame or two, however loaded the machine is
                await pilot.pause(0.01)
                if painted and painted[-1] == bar.position == transcript.max_scroll_y:
                    break
            assert bar.position == transcript.max_scroll_y
            assert painted and painted[-1] == bar.position, (painted[-3:], bar.position)
        assert len(set(painted)) > 3
        assert updates == []


async def test_kept_lines_show_every_change() -> None:
    app = LabelApp()
    async with app.run_test(size=(60, 10)) as pilot:
        label = app.query_one("#label", KeptLabel)
        gauge = app.query_one("#gauge", TokenGauge)
        await pilot.pause()
        region = Region(0, 0, *label.size)
        first = label.render_lines(region)
        assert label.render_lines(region) is first  # nothing changed: the same lines
        assert "first words" in text_of(first)
        label.update(Text("other words"), layout=False)
        await pilot.pause()
        assert "other words" in text_of(label.render_lines(Region(0, 0, *label.size)))
        assert "other words" in "".join(text_of([s]) for s in app.screen._compositor.render_strips())

        whole = Region(0, 0, *gauge.size)
        before = text_of(gauge.render_lines(whole))
        gauge.update_view(TierTokens(system=500, history=1000, task=600, total=2100), 7000)
        await pilot.pause()
        after = text_of(gauge.render_lines(Region(0, 0, *gauge.size)))
        assert before != after and "2.1k / 7k" in after


async def test_a_panes_status_line_follows_its_calls(recorded4) -> None:  # type: ignore[no-untyped-def]
    """The bottom border alone is repainted when the status changes: what the screen shows
    there is the new status, the rest of the pane as it was."""
    events = streaming(recorded4)
    runtime = ScriptedRuntime(events=events, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, runtime)
        agent = next(e.agent_id for e in events if isinstance(e, Token))
        pane = app.screen.query_one(f"#{dom_id('pane', agent)}", AgentPane)

        def bottom_row() -> str:
            strips = app.screen._compositor.render_strips()
            return text_of([strips[pane.region.bottom - 1]])[pane.region.x:pane.region.right]

        assert "● streaming" in bottom_row()
        call = next(e for e in events if isinstance(e, CallStarted) and e.view.agent_id == agent)
        c = Contribution(id="c-1", agent_id=agent, role=pane.info.role, type="proposal", round=1,
                         content="A finished proposal about the rate limiter's buckets.",
                         metadata=CallMetadata(call_id=call.view.call_id))
        runtime.push(ContributionAdded(contribution=c))
        await settle(pilot, runtime)
        assert "✓ done" in bottom_row() and "streaming" not in bottom_row()

"""The editor a person's pane becomes on their turn (`--human`): what they are asked, and their answer.

The turn's task (the last message of their view: what an agent in their seat would be asked) above
a multi-line `TextArea`; a line of keys, the answer's tokens against the turn's limit and whether the
draft is saved. `ctrl+s` sends everywhere; `ctrl+enter` too where the terminal reports it (terminals
speaking the kitty keyboard protocol; plain tmux sends it as enter), and `ctrl+j`, which some
terminals send for it. `f2` opens everything the person is shown. The editor only posts messages:
the screen sends the answer and saves the draft through the runtime.
"""

from __future__ import annotations

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Label, Static, TextArea

from ...core.safety.sanitize import one_line_safe, terminal_safe

DRAFT_DELAY_S = 0.5
"""The draft is saved this long after the last key (and at once on send)."""


class UntrustedTextArea(TextArea):
    """A `TextArea` whose pastes are made terminal-safe before they enter the document.

    Typed keys are printable characters already; a paste is text from anywhere (a web page, a
    log) and may hold escape sequences, control or reordering characters, which would reach
    the screen, the draft on disk and the answer."""

    async def _on_paste(self, event: events.Paste) -> None:
        event.prevent_default()  # TextArea's own handler would insert the raw text
        if self.read_only:
            return
        result = self.replace(terminal_safe(event.text), *self.selection)
        self.move_cursor(result.end_location)
        self.focus()


class SeatEditor(Vertical):
    """One open turn of a person: its task, the answer being typed, and its state."""

    BINDINGS = [
        Binding("ctrl+s,ctrl+enter,ctrl+j", "send", "Send", key_display="ctrl+s"),
        Binding("f2", "show_view", "All you are shown", key_display="f2"),
    ]

    DEFAULT_CSS = """
    SeatEditor { height: 1fr; min-height: 7; }
    SeatEditor > .seat-title { height: 1; width: 1fr; color: $warning; text-style: bold; text-wrap: nowrap;
                               text-overflow: ellipsis; }
    SeatEditor > .seat-task { height: auto; max-height: 40%; min-height: 2; color: $text-muted;
                              border-left: thick $warning; padding: 0 0 0 1; scrollbar-size-vertical: 1; }
    SeatEditor > TextArea { height: 1fr; min-height: 3; border: round $warning; padding: 0; }
    SeatEditor > TextArea:focus { border: round $primary; }
    SeatEditor > .seat-hint { height: 1; width: 1fr; color: $text-muted; text-wrap: nowrap;
                              text-overflow: ellipsis; }
    SeatEditor > .seat-hint.-error { color: $error; }
    """

    class Send(Message):
        """The person sends their answer."""

        def __init__(self, editor: SeatEditor, text: str) -> None:
            super().__init__()
            self.editor = editor
            self.text = text

    class Draft(Message):
        """The text changed and settled: save it as the turn's draft."""

        def __init__(self, editor: SeatEditor, text: str) -> None:
            super().__init__()
            self.editor = editor
            self.text = text

    class ShowView(Message):
        """Open everything the person is shown in this turn (the messages inspector)."""

        def __init__(self, agent_id: str) -> None:
            super().__init__()
            self.agent_id = agent_id

    def __init__(self, agent_id: str, slot: str, title: str, task: str, *, max_tokens: int, model: str,
                 draft: str = "", name: str = "") -> None:
        super().__init__(classes="seat-editor")
        self.agent_id = agent_id
        self.slot = slot
        self.title = title
        self.task_text = task
        self.max_tokens = max_tokens
        self.model = model
        # A draft is read from a file in the debate's folder, which others may write: untrusted
        # text, made terminal-safe before the TextArea shows it (and it becomes the answer).
        self.draft = draft = terminal_safe(draft)
        self.person = name or agent_id
        self.sending = False
        self._timer: Timer | None = None
        self._note = "draft saved" if draft else ""
        self.text_area = UntrustedTextArea(draft, soft_wrap=True, show_line_numbers=False, tab_behavior="focus",
                                           classes="seat-text")

    def compose(self) -> ComposeResult:
        yield Label(Text(one_line_safe(self.title)), classes="seat-title")
        with VerticalScroll(classes="seat-task"):
            yield Static(Text(terminal_safe(self.task_text).strip()))
        self.text_area.cursor_blink = getattr(self.app, "cursor_blink", True)
        yield self.text_area
        yield Label("", classes="seat-hint")

    def on_mount(self) -> None:
        area = self.text_area
        area.move_cursor(area.document.end)
        self._show_hint()

    @property
    def text(self) -> str:
        return self.text_area.text

    def focus_text(self) -> None:
        self.text_area.focus()

    def _show_hint(self, error: str | None = None) -> None:
        label = self.query_one(".seat-hint", Label)
        if error is not None:
            label.update(Text(one_line_safe(error)))
            label.set_class(True, "-error")
            return
        label.set_class(False, "-error")
        from ...core.tokens import count_text  # a person's turn: not loaded before the first screen

        n = count_text(self.text, self.model)
        over = " (too long)" if n > self.max_tokens else ""
        parts = ["sending…"] if self.sending else ["ctrl+s send", "f2 all you are shown"]
        parts.append(f"{n:,}/{self.max_tokens:,} tok{over}")
        if self._note:
            parts.append(self._note)
        label.update(Text(" · ".join(parts)))

    @on(TextArea.Changed)
    def _changed(self, event: TextArea.Changed) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(DRAFT_DELAY_S, self._settled)
        self._note = ""
        self._show_hint()

    def _settled(self) -> None:
        self._timer = None
        self.post_message(self.Draft(self, self.text))

    def draft_saved(self, error: str | None = None) -> None:
        """The screen saved the draft (or could not: the text stays here either way)."""
        self._note = f"draft not saved: {error}" if error else "draft saved"
        self._show_hint()

    def action_send(self) -> None:
        if self.sending:
            return
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.post_message(self.Draft(self, self.text))
        self.post_message(self.Send(self, self.text))

    def action_show_view(self) -> None:
        self.post_message(self.ShowView(self.agent_id))

    def sent(self) -> None:
        """Taken: nothing more to type until the contribution closes the editor."""
        self.sending = True
        self.text_area.read_only = True
        self._show_hint()

    def refused(self, why: str) -> None:
        """Not taken (empty, too long, the turn closed): the text stays, editable."""
        self.sending = False
        self.text_area.read_only = False
        self._show_hint(f"not sent: {why}")

"""The clarification dialog: the agents' questions, one answer field each."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from ...core.models.state import Clarification
from ...core.safety.sanitize import one_line_safe, terminal_safe

MAX_ANSWER_CHARS = 2000


class ClarifyScreen(ModalScreen[list[str]]):
    """Dismisses with one answer per question, in order ("" = no answer).

    Enter moves to the next answer (and submits from the last one); ctrl+s or the
    Submit button sends the answers; Skip all sends none."""

    CSS_PATH = "clarify.tcss"
    AUTO_FOCUS = ".clarify-answer, #clarify-submit"
    BINDINGS = [
        Binding("ctrl+s", "submit", "Submit answers", priority=True),
    ]

    def __init__(self, questions: list[Clarification], names: dict[str, str] | None = None,
                 round_no: int = 1) -> None:
        super().__init__()
        self.questions = list(questions)
        self.names = names or {}
        self.round_no = round_no

    def compose(self) -> ComposeResult:
        n = len(self.questions)
        follow_up = " (follow-up)" if self.round_no > 1 else ""
        with Vertical(id="clarify-box"):
            yield Label(f"The agents ask {n} clarifying question{'s' if n != 1 else ''}{follow_up}",
                        id="clarify-title")
            yield Label("Answer what you can; a blank answer means no answer. "
                        "Every agent sees your answers verbatim in every call.", id="clarify-detail")
            with VerticalScroll(id="clarify-questions"):
                for i, q in enumerate(self.questions):
                    # The questions come straight from the models (not through the bridge).
                    who = one_line_safe(self.names.get(q.agent_id, q.agent_id))
                    line = Text.assemble((f"{i + 1}. {who}: ", "bold"), terminal_safe(q.question))
                    yield Label(line, classes="clarify-question")
                    yield Input(placeholder="your answer (blank: no answer)", id=f"answer-{i}",
                                classes="clarify-answer", max_length=MAX_ANSWER_CHARS, compact=True)
            with Horizontal(id="clarify-buttons"):
                yield Label("enter: next · ctrl+s: submit", id="clarify-hint")
                yield Button("Skip all", id="clarify-skip")
                yield Button("Submit (ctrl+s)", id="clarify-submit", variant="primary")

    def answers(self) -> list[str]:
        return [self.query_one(f"#answer-{i}", Input).value.strip() for i in range(len(self.questions))]

    @on(Input.Submitted, ".clarify-answer")
    def _next(self, event: Input.Submitted) -> None:
        event.stop()
        inputs = list(self.query(".clarify-answer").results(Input))
        index = inputs.index(event.input)
        if index + 1 < len(inputs):
            inputs[index + 1].focus()
        else:
            self.action_submit()

    @on(Button.Pressed, "#clarify-submit")
    def _submit_pressed(self) -> None:
        self.action_submit()

    @on(Button.Pressed, "#clarify-skip")
    def _skip_pressed(self) -> None:
        self.action_skip()

    def action_submit(self) -> None:
        self.dismiss(self.answers())

    def action_skip(self) -> None:
        self.dismiss([""] * len(self.questions))

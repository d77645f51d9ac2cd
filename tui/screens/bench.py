"""The live benchmark dashboard: progress per protocol (done, in flight, running accuracy with its
error, tokens per question and per right answer, cost, whether it is on the Pareto front) above a
plot of accuracy against tokens per question and every question × protocol; enter opens a
question's debate in the usual debate screen (watched: it follows the log while the debate runs)."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label

from ...core.bench.progress import BenchProgress
from ...core.bench.results import ResultRow
from ...core.bench.runner import Job
from ...core.safety.sanitize import one_line_safe
from ..widgets.bench_plot import BenchPlot

REFRESH_S = 0.25
PROTOCOL_COLUMNS = ("done", "in flight", "accuracy ± se", "tokens/q", "tokens/correct", "cost $", "failed", "Pareto")


def _row_key(slot: tuple[str, str, int]) -> str:
    """A question × protocol × run as a table row's key."""
    return "\x1f".join(map(str, slot))


def _cell(text: object, style: str = "") -> Text:
    """A table cell from untrusted text: control characters out, markup shown literally."""
    return Text(one_line_safe(str(text), 60), style=style)


class BenchScreen(Screen[None]):
    CSS_PATH = "bench.tcss"
    BINDINGS = [
        Binding("enter", "open", "Open debate"),
        Binding("q", "app.quit", "Quit"),
    ]

    class Open(Message):
        """Open this debate (a question × protocol) in the debate screen."""

        def __init__(self, debate_id: str) -> None:
            super().__init__()
            self.debate_id = debate_id

    def __init__(self, progress: BenchProgress, *, executor: str, demo: bool) -> None:
        super().__init__()
        self.progress = progress
        self.executor = executor
        self.demo = demo
        self.finished = False
        self._dirty = True
        self._jobs = {j.slot: j for j in progress.plan.jobs}

    def compose(self) -> ComposeResult:
        yield Label("", id="bench-title")
        yield DataTable(id="bench-protocols", cursor_type="none", zebra_stripes=True)
        yield BenchPlot(id="bench-plot")
        yield DataTable(id="bench-questions", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        protocols = self.query_one("#bench-protocols", DataTable)
        for label in ("protocol", *PROTOCOL_COLUMNS):
            protocols.add_column(label, key=label)
        for i, p in enumerate(self.progress.plan.protocols, start=1):  # numbered as in the plot
            protocols.add_row(*([_cell(f"{i} {p}")] + [_cell("")] * len(PROTOCOL_COLUMNS)), key=p)
        questions = self.query_one("#bench-questions", DataTable)
        for label in ("question", "protocol", "status", "answer", "expected", "tokens", "debate"):
            questions.add_column(label, key=label)
        for j in self.progress.plan.jobs:
            qid = j.question_id if j.repeat == 1 else f"{j.question_id} (run {j.repeat})"
            questions.add_row(_cell(qid), _cell(j.protocol), _cell("waiting"), _cell(""),
                              _cell(j.expected), _cell(""), _cell(j.debate_id), key=_row_key(j.slot))
        self.progress.listeners.append(self._changed)
        self.set_interval(REFRESH_S, self._refresh_if_dirty)
        self._refresh_if_dirty()
        questions.focus()

    def _changed(self, job: Job, row: ResultRow | None) -> None:
        self._dirty = True

    def mark_finished(self) -> None:
        self.finished = True
        self._dirty = True
        self._refresh_if_dirty()

    def _refresh_if_dirty(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        prog = self.progress
        state = "finished" if self.finished else "running"
        demo = " · DEMO (scripted answers, not a model)" if self.demo else ""
        self.query_one("#bench-title", Label).update(Text(
            f"moot bench · {one_line_safe(prog.plan.dataset.name, 60)} · {prog.finished}/{prog.total} {state} · "
            f"in flight {len(prog.running)} · {self.executor}{demo}"))
        protocols = self.query_one("#bench-protocols", DataTable)
        front = prog.pareto()
        for p, s in prog.protocols.items():
            per_correct = s.tokens_per_correct
            cells = [f"{s.done}/{s.planned}", str(s.in_flight),
                     f"{100 * s.accuracy:.1f}% ± {100 * s.stderr:.1f}" if s.done else "–",
                     f"{s.tokens_per_question:,.0f}" if s.done else "–",
                     f"{per_correct:,.0f}" if per_correct is not None else "–",
                     f"{s.cost_usd:.4f}", str(s.failed), "◆" if p in front else ""]
            for col, value in zip(PROTOCOL_COLUMNS, cells, strict=True):
                protocols.update_cell(p, col, _cell(value, "bold red" if col == "Pareto" else ""))
        self.query_one(BenchPlot).show(
            list(prog.protocols), [(s.tokens_per_question, s.accuracy) if s.done else None for s in prog.protocols.values()],
            {i for i, p in enumerate(prog.protocols) if p in front})
        questions = self.query_one("#bench-questions", DataTable)
        for slot in self._jobs:
            key = _row_key(slot)
            row = prog.rows.get(slot)
            if row is None:
                status = _cell("running…", "bold") if slot in prog.running else _cell("waiting", "dim")
                answer = tokens = _cell("")
            elif row.complete:
                status = _cell("✓ right" if row.correct else "✗ wrong", "green" if row.correct else "red")
                answer = _cell(row.answer if row.answer is not None else "(none)")
                tokens = _cell(f"{row.prompt_tokens + row.completion_tokens:,}")
            else:
                status, answer, tokens = _cell(f"! {row.status}", "yellow"), _cell(""), _cell("")
            questions.update_cell(key, "status", status)
            questions.update_cell(key, "answer", answer)
            questions.update_cell(key, "tokens", tokens)

    @on(DataTable.RowSelected, "#bench-questions")
    def _row_selected(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        table = self.query_one("#bench-questions", DataTable)
        if table.cursor_row < 0:
            return
        key = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        job = next(j for slot, j in self._jobs.items() if _row_key(slot) == key)
        qid, protocol = job.question_id, job.protocol
        if job.slot not in self.progress.rows and job.slot not in self.progress.running:
            self.notify(f"{qid} through {protocol} has not started yet", severity="warning")
            return
        self.post_message(self.Open(job.debate_id))

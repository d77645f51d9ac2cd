"""The inspector's `e`: the call's exact messages, each in its own TextArea to edit in place, then
sent again (ctrl+r) as `moot call --messages` would send them, the reply streaming into the
panel at the bottom and saved as an experiment (never in the debate's log).

ctrl+o swaps the view's summary message for the summary of the same items written another way —
rule-based, then LLM, then hybrid, each computed on demand by `core.counterfactual` (what `moot
call --summary` sends) — so a person can see what a summary cost the agent. An edited list
that holds more tokens than the agent's window leaves for a view is refused in one line before
any request.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Label, TextArea

from ...core.counterfactual import SummaryChoice
from ...core.models.state import DebateState, ViewRecord
from ...core.providers.base import Message
from ...core.safety.sanitize import one_line_safe, terminal_safe
from ...core.storage.folder import DebateFolder

SWAPS: tuple[SummaryChoice, ...] = ("rule-based", "llm", "hybrid")
"""The summaries ctrl+o cycles through, in order."""


class EditCallScreen(Screen[None]):
    """One recorded call's messages, editable, and the reply of the edited call."""

    DEFAULT_CSS = """
    EditCallScreen { background: $background; }
    EditCallScreen #edit-title { height: 1; width: 1fr; background: $panel; padding: 0 1; text-style: bold;
                                 text-wrap: nowrap; text-overflow: ellipsis; }
    EditCallScreen #edit-body { height: 1fr; scrollbar-size-vertical: 1; }
    EditCallScreen .edit-role { height: 1; padding: 0 1; color: $accent; text-style: bold; }
    EditCallScreen .edit-msg { height: auto; max-height: 12; }
    EditCallScreen #edit-reply { height: 10; border-top: solid $accent; }
    """

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("ctrl+r", "send", "Re-run edited"),
        Binding("ctrl+o", "swap_summary", "Swap summary"),
    ]

    def __init__(self, state: DebateState, folder: DebateFolder, record: ViewRecord, view: dict[str, Any]) -> None:
        super().__init__()
        self.state, self.folder, self.record, self.view = state, folder, record, view
        self.original: list[Message] = [Message(role=m["role"], content=m["content"]) for m in view["messages"]
                                        if not (m.get("tool_calls") or m.get("tool_call_id"))]
        self.base: list[str] = [m["content"] for m in self.original]
        """What each message holds before any edit: the recorded text, or the swapped summary's."""
        self.summary: SummaryChoice | None = None
        """The summary swapped in (a method of `SWAPS`), None: the recorded one."""

    def compose(self) -> ComposeResult:
        r = self.record
        step = "turn" if self.state.protocol == "conversation" else "round"
        yield Label(Text(one_line_safe(f"edit and re-run · {r.agent_id} · {step} {r.round} · {r.phase} · "
                                       f"{len(self.original)} messages · ctrl+r sends · ctrl+o swaps the summary",
                                       300)), id="edit-title")
        with VerticalScroll(id="edit-body"):
            for n, message in enumerate(self.original):
                yield Label(Text(f"[{message['role']}] message {n + 1}"), classes="edit-role")
                yield TextArea(terminal_safe(message["content"]), id=f"edit-msg-{n}", classes="edit-msg",
                               soft_wrap=True, show_line_numbers=False)
        yield TextArea(id="edit-reply", read_only=True, soft_wrap=True, show_line_numbers=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#edit-reply").display = False
        for area in self.query(TextArea):  # the app's choice (tests turn blinking off: a steady cursor)
            area.cursor_blink = getattr(self.app, "cursor_blink", True)
        if self.original:
            self.query_one("#edit-msg-0", TextArea).focus()

    def edited(self) -> list[Message]:
        return [Message(role=m["role"], content=self.query_one(f"#edit-msg-{n}", TextArea).text)
                for n, m in enumerate(self.original)]

    def _agent(self) -> Any:
        from ...core.config import Overrides
        from ...core.experiments import the_agent

        return the_agent(self.state, self.record.agent_id, Overrides())[0]

    def action_swap_summary(self) -> None:
        """Put the next kind of summary of the same items in place of the view's summary message."""
        from ...core.counterfactual import swapped_view
        from ...core.errors import MootError
        from ...core.providers.pool import ProviderPool

        choice = SWAPS[(SWAPS.index(self.summary) + 1) % len(SWAPS)] if self.summary in SWAPS else SWAPS[0]
        self.notify(f"writing a {choice} summary of the same items…", timeout=2)

        async def work() -> None:
            pool = ProviderPool(demo_delay=0.0)
            try:
                full = self.folder.load(bounded=False) if self.state.archived_rounds else self.state
                swapped = await swapped_view(full, self.view, choice, self._agent(), pool)
            except MootError as exc:
                self.notify(one_line_safe(str(exc), 300), severity="error", timeout=6, markup=False)
                return
            finally:
                await pool.aclose()
            contents = [m["content"] for m in swapped if not (m.get("tool_calls") or m.get("tool_call_id"))]
            if len(contents) != len(self.base):
                self.notify("the swapped view has other messages: not shown", severity="error", timeout=6)
                return
            changed = [n for n, (old, new) in enumerate(zip(self.base, contents)) if old != new]
            for n in changed:
                self.query_one(f"#edit-msg-{n}", TextArea).load_text(terminal_safe(contents[n]))
            self.base, self.summary = contents, choice
            self.notify(f"the summary is now a {choice} one (message {', '.join(str(n + 1) for n in changed)})"
                        if changed else f"the {choice} summary reads the same", timeout=4)

        self.run_worker(work(), exclusive=True, group="swap")

    def action_send(self) -> None:
        """Send the messages as they stand; the reply streams into the panel and is saved."""
        from ...core import tokens
        from .context_rerun import rerun

        messages = self.edited()
        agent = self._agent()
        need, budget = tokens.count_messages(messages, agent.model), agent.context.input_budget
        if need > budget:
            self.notify(f"the edited messages hold {need:,} tokens, {need - budget:,} more than a view of "
                        f"{agent.model} may hold ({budget:,}): nothing sent", severity="error", timeout=8)
            return
        edited = [m["content"] for m in messages] != self.base
        panel = self.query_one("#edit-reply", TextArea)
        panel.display = True
        what = "edited" if edited else "as shown"
        swapped = f", with a {self.summary} summary" if self.summary else ""
        panel.load_text(f"re-running {self.record.agent_id} {self.record.phase} {what}{swapped}…\n\n")

        def streamed(text: str) -> None:
            panel.insert(terminal_safe(text), panel.document.end)

        async def work() -> None:
            try:
                done = await rerun(self.state, self.folder, self.record, self.view, streamed, messages,
                                   edited=edited, summary=self.summary)
            except Exception as exc:  # noqa: BLE001 - a provider or store error is shown, not raised
                done = f"── the re-run failed: {one_line_safe(str(exc), 300)} ──"
            panel.insert("\n\n" + done, panel.document.end)

        self.run_worker(work(), exclusive=True, group="rerun")

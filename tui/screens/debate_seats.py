"""The debate screen's people (`--human`): a person's pane becomes an editor on their turn.

A turn opens with the `call_started` of a person's agent (their provider is `human`): their pane
(in a conversation: a panel under the shared transcript) shows what they are asked and an
editor; the header and the roster say the debate waits for them. The answer goes to the debate
through the runtime (`say`: the engine itself, or the process running it); the draft is saved as
it is typed, so a stop, a kill or a quit loses none of it (the turn is asked again on resume,
with the text). The turn closes with their contribution, or with its call's end (a stop).
Built on `DebateEvents`; the screen (`debate.py`) builds on this.
"""

from __future__ import annotations

from textual import on
from textual.binding import Binding

from ...core.context.view import render_messages
from ...core.errors import StoreError
from ...core.events import CallFailed, CallStarted, ContributionAdded, Event, SeatAnswered, Warning_, is_terminal
from ...core.human.drafts import slot_of
from ...core.models.provider_kinds import is_person
from ...core.models.state import ViewRecord
from ..runtime.base import ReadOnlyError, Runtime
from ..widgets.command_input import CommandInput
from ..widgets.debate_header import DebateHeader
from ..widgets.seat_editor import SeatEditor
from .debate_events import DebateEvents
from .debate_layout import TINY_WIDTH

TITLES = {"proposal": "your proposal", "critique": "your critique of {target}", "refinement": "your refinement",
          "answer": "your answer", "turn": "your message"}


class DebateSeats(DebateEvents):
    """Open turns of people: agent id → the call id of the turn (editors in `editors`)."""

    BINDINGS = [Binding("e", "edit_turn", "Your turn")]

    def __init__(self, runtime: Runtime, *, speed: float | None = None) -> None:
        super().__init__(runtime, speed=speed)
        self.waiting_for: dict[str, str] = {}
        self.editors: dict[str, SeatEditor] = {}
        self._zoomed_for: str | None = None
        """The person whose pane was zoomed for their turn (unzoomed when it closes)."""
        self._sent: dict[str, str] = {}
        """Command id (an answer sent to another process) → the person's agent id."""

    def is_person(self, agent_id: str) -> bool:
        return any(a.id == agent_id and is_person(a.provider) for a in self.state.agents)

    @property
    def people(self) -> list[str]:
        return [a.id for a in self.state.agents if is_person(a.provider)]

    async def _route(self, event: Event) -> None:
        await super()._route(event)
        match event:
            case CallStarted(view=view) if view.phase != "summarize" and self.is_person(view.agent_id):
                self.waiting_for[view.agent_id] = view.call_id
                await self._open_editor(view)
            case ContributionAdded(contribution=c) if c.agent_id in self.waiting_for:
                await self._close(c.agent_id)
            case CallFailed(agent_id=agent_id, call_id=call_id, will_retry=False) if (
                    self.waiting_for.get(agent_id) == call_id):
                await self._close(agent_id)
                if self.state.status == "running" or not self.runtime.can_answer:
                    self.feedback(f"{agent_id}'s turn ended before an answer; what was typed is kept as a draft")
            case Warning_(command_id=command_id, message=message) if command_id in self._sent:
                agent_id = self._sent.pop(command_id)
                if (editor := self.editors.get(agent_id)) is not None:
                    editor.refused(message.split("refused: ", 1)[-1])
            case SeatAnswered(command_id=command_id) if command_id in self._sent:
                self._sent.pop(command_id)
            case _ if is_terminal(event):
                for agent_id in list(self.waiting_for):
                    await self._close(agent_id)
            case _:
                pass

    # ------------------------------------------------------------------ the editor

    def _title(self, view: ViewRecord) -> str:
        what = TITLES.get(view.phase, view.phase).format(target=self.index.name(view.target_agent_id or ""))
        step = "turn" if view.phase == "turn" else "round"
        who = "you" if len(self.people) == 1 else self.index.name(view.agent_id)
        return f"✎ waiting for {who} · {what}, {step} {view.round}"

    async def _open_editor(self, view: ViewRecord) -> None:
        agent_id = view.agent_id
        await self._close_editor(agent_id)
        if not self.runtime.can_answer:
            return  # a replay, or a debate no process runs: the header says who is awaited
        try:
            messages = render_messages(view, self.index)
        except (KeyError, ValueError):  # a view this screen cannot rebuild (its log is cut): ask anyway
            messages = []
        slot = slot_of(view.phase, view.round, view.target_agent_id)
        editor = SeatEditor(agent_id, slot, self._title(view),
                            messages[-1]["content"] if messages else "(the task could not be rebuilt here)",
                            max_tokens=view.max_tokens or 1000, model=view.model,
                            draft=self.runtime.load_draft(agent_id, slot), name=self.index.name(agent_id))
        self.editors[agent_id] = editor
        pane = self.pane(agent_id)
        if pane is not None:
            pane.add_class("-seat-open")
            await pane.mount(editor)
            if self.zoomed is None:  # room to write: the pane alone (escape shows every pane again)
                self.zoom(pane)
                self._zoomed_for = agent_id
        else:  # a conversation: under the shared transcript
            editor.add_class("-docked")
            self.add_class("-seat-docked")
            await self.mount(editor, before=self.query_one("#event-log"))
        if not isinstance(self.focused, CommandInput):
            editor.focus_text()

    async def _close_editor(self, agent_id: str) -> None:
        editor = self.editors.pop(agent_id, None)
        if editor is not None:
            pane = self.pane(agent_id)
            if pane is not None:
                pane.remove_class("-seat-open")
                if self._zoomed_for == agent_id and self.zoomed is pane:
                    self.zoom(None)
            self._zoomed_for = None
            self.remove_class("-seat-docked")
            await editor.remove()

    async def _close(self, agent_id: str) -> None:
        self.waiting_for.pop(agent_id, None)
        await self._close_editor(agent_id)
        self._refresh_header()

    def action_edit_turn(self) -> None:
        """`e`: back to the open turn's editor (its pane alone, the text focused)."""
        agent_id = next(iter(self.editors), None)
        if agent_id is None:
            return
        pane = self.pane(agent_id)
        if pane is not None and self.zoomed is not pane:
            self.zoom(pane)
            self._zoomed_for = agent_id
        self.editors[agent_id].focus_text()

    @on(SeatEditor.Send)
    def _seat_send(self, message: SeatEditor.Send) -> None:
        editor = message.editor
        try:
            command_id = self.runtime.say(editor.agent_id, message.text)
        except (ValueError, ReadOnlyError) as exc:
            editor.refused(str(exc))
            return
        editor.sent()
        if command_id:
            self._sent[command_id] = editor.agent_id

    @on(SeatEditor.Draft)
    def _seat_draft(self, message: SeatEditor.Draft) -> None:
        editor = message.editor
        try:
            self.runtime.save_draft(editor.agent_id, editor.slot, message.text)
        except (StoreError, OSError) as exc:
            editor.draft_saved(str(exc))
            return
        editor.draft_saved()

    @on(SeatEditor.ShowView)
    def _seat_view(self, message: SeatEditor.ShowView) -> None:
        from .context import ContextScreen

        self.app.push_screen(ContextScreen(self.state, self.index, message.agent_id, None, at_task=True))

    # ------------------------------------------------------------------ header

    def _refresh_header(self) -> None:
        super()._refresh_header()
        waiting = [a for a in self.waiting_for if a in self.people]
        if not waiting or self.state.status != "running" or self.runtime.error:
            return
        header = self.query_one(DebateHeader)
        base = header.status_text
        if len(self.people) == 1:  # the person at this terminal
            text = "✎ YOUR TURN" if base or self.size.width < TINY_WIDTH else "✎ WAITING FOR YOU"
        else:
            text = "✎ WAITING FOR " + ", ".join(self.index.name(a).upper() for a in waiting)
        header.show_status(f"{base} · {text}" if base else text, "seat")

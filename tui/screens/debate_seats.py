"""The debate screen's people (`--human`): a person's pane becomes an editor on their turn.

A turn opens with the `call_started` of a person's agent (their provider is `human`): their pane
(in a conversation: a panel under the shared transcript) shows what they are asked and an
editor; the header and the roster say the debate waits for them. The answer goes to the debate
through the runtime (`say`: the engine itself, or the process running it); the draft is saved as
it is typed, so a stop, a kill or a quit loses none of it (the turn is asked again on resume,
with the text). The turn closes with their contribution, or with its call's end (a stop).
A part of the screen (`debate_events.DebatePart`): it owns the open turns and their editors.
"""


from __future__ import annotations

from collections.abc import Callable, Iterable

from textual.screen import Screen

from ...core import events as ev
from ...core.errors import StoreError
from ...core.human.drafts import slot_of
from ...core.models.provider_kinds import is_person
from ...core.models.state import ViewRecord
from ..runtime.base import ReadOnlyError
from ..widgets.command_input import CommandInput
from ..widgets.seat_editor import SeatEditor
from .debate_events import Debate, DebatePart, Subscription, handle, handle_end
from .debate_layout import TINY_WIDTH
from .debate_panes import AgentPanes

TITLES = {"proposal": "your proposal", "critique": "your critique of {target}", "refinement": "your refinement",
          "answer": "your answer", "turn": "your message"}


class PeopleSeats(DebatePart):
    """Open turns of people: agent id → the call id of the turn (editors in `editors`)."""

    def __init__(self, screen: Screen[None], debate: Debate, panes: AgentPanes, *,
                 feedback: Callable[[str], None], header_changed: Callable[[], None]) -> None:
        super().__init__(screen, debate)
        self.panes = panes
        self.feedback = feedback
        self.header_changed = header_changed
        self.waiting_for: dict[str, str] = {}
        self.editors: dict[str, SeatEditor] = {}
        self._zoomed_for: str | None = None
        """The person whose pane was zoomed for their turn (unzoomed when it closes)."""
        self._sent: dict[str, str] = {}
        """Command id (an answer sent to another process) → the person's agent id."""

    def subscriptions(self) -> Iterable[Subscription]:
        return [handle(ev.CallStarted, self._call_started), handle(ev.ContributionAdded, self._contribution_added),
                handle(ev.CallFailed, self._call_failed), handle(ev.Warning_, self._warning),
                handle(ev.SeatAnswered, self._seat_answered),
                *handle_end(self._ended)]

    def is_person(self, agent_id: str) -> bool:
        return any(a.id == agent_id and is_person(a.provider) for a in self.debate.state.agents)

    @property
    def people(self) -> list[str]:
        return [a.id for a in self.debate.state.agents if is_person(a.provider)]

    # ------------------------------------------------------------------ events

    async def _call_started(self, event: ev.CallStarted) -> None:
        view = event.view
        if view.phase != "summarize" and self.is_person(view.agent_id):
            self.waiting_for[view.agent_id] = view.call_id
            await self._open_editor(view)

    async def _contribution_added(self, event: ev.ContributionAdded) -> None:
        if event.contribution.agent_id in self.waiting_for:
            await self._close(event.contribution.agent_id)

    async def _call_failed(self, event: ev.CallFailed) -> None:
        agent_id = event.agent_id
        if not event.will_retry and self.waiting_for.get(agent_id) == event.call_id:
            await self._close(agent_id)
            if self.debate.state.status == "running" or not self.debate.runtime.can_answer:
                self.feedback(f"{agent_id}'s turn ended before an answer; what was typed is kept as a draft")

    def _warning(self, event: ev.Warning_) -> None:
        if event.command_id in self._sent:  # the answer this screen sent was refused
            agent_id = self._sent.pop(event.command_id)
            if (editor := self.editors.get(agent_id)) is not None:
                editor.refused(event.message.split("refused: ", 1)[-1])

    def _seat_answered(self, event: ev.SeatAnswered) -> None:
        self._sent.pop(event.command_id or "", None)

    async def _ended(self, event: ev.TerminalEvent) -> None:
        for agent_id in list(self.waiting_for):
            await self._close(agent_id)

    # ------------------------------------------------------------------ the editor

    def _title(self, view: ViewRecord) -> str:
        index = self.debate.index
        what = TITLES.get(view.phase, view.phase).format(target=index.name(view.target_agent_id or ""))
        step = "turn" if view.phase == "turn" else "round"
        who = "you" if len(self.people) == 1 else index.name(view.agent_id)
        return f"✎ waiting for {who} · {what}, {step} {view.round}"

    async def _open_editor(self, view: ViewRecord) -> None:
        agent_id = view.agent_id
        await self._close_editor(agent_id)
        runtime, index, screen = self.debate.runtime, self.debate.index, self.screen
        if not runtime.can_answer:
            return  # a replay, or a debate no process runs: the header says who is awaited
        from ...core.context.view import render_messages  # the engine's views: not before the first screen

        try:
            messages = render_messages(view, index)
        except (KeyError, ValueError):  # a view this screen cannot rebuild (its log is cut): ask anyway
            messages = []
        slot = slot_of(view.phase, view.round, view.target_agent_id)
        editor = SeatEditor(agent_id, slot, self._title(view),
                            messages[-1]["content"] if messages else "(the task could not be rebuilt here)",
                            max_tokens=view.max_tokens or 1000, model=view.model,
                            draft=runtime.load_draft(agent_id, slot), name=index.name(agent_id))
        self.editors[agent_id] = editor
        pane = self.panes.pane(agent_id)
        if pane is not None:
            pane.add_class("-seat-open")
            await pane.mount(editor)
            if self.panes.zoomed is None:  # room to write: the pane alone (escape shows every pane again)
                self.panes.zoom(pane)
                self._zoomed_for = agent_id
        else:  # a conversation: under the shared transcript
            editor.add_class("-docked")
            screen.add_class("-seat-docked")
            await screen.mount(editor, before=screen.query_one("#event-log"))
        if not isinstance(screen.focused, CommandInput):
            editor.focus_text()

    async def _close_editor(self, agent_id: str) -> None:
        editor = self.editors.pop(agent_id, None)
        if editor is not None:
            pane = self.panes.pane(agent_id)
            if pane is not None:
                pane.remove_class("-seat-open")
                if self._zoomed_for == agent_id and self.panes.zoomed is pane:
                    self.panes.zoom(None)
            self._zoomed_for = None
            self.screen.remove_class("-seat-docked")
            await editor.remove()

    async def _close(self, agent_id: str) -> None:
        self.waiting_for.pop(agent_id, None)
        await self._close_editor(agent_id)
        self.header_changed()

    def edit_turn(self) -> None:
        """`e`: back to the open turn's editor (its pane alone, the text focused)."""
        agent_id = next(iter(self.editors), None)
        if agent_id is None:
            return
        pane = self.panes.pane(agent_id)
        if pane is not None and self.panes.zoomed is not pane:
            self.panes.zoom(pane)
            self._zoomed_for = agent_id
        self.editors[agent_id].focus_text()

    def typing(self) -> bool:
        """The focus is in an open turn's text (where `e` is a letter, not the key back to it)."""
        return any(e.text_area is self.screen.focused for e in self.editors.values())

    # ------------------------------------------------------------------ what the editor asks

    def send(self, message: SeatEditor.Send) -> None:
        editor = message.editor
        try:
            command_id = self.debate.runtime.say(editor.agent_id, message.text)
        except (ValueError, ReadOnlyError) as exc:
            editor.refused(str(exc))
            return
        editor.sent()
        if command_id:
            self._sent[command_id] = editor.agent_id

    def save_draft(self, message: SeatEditor.Draft) -> None:
        editor = message.editor
        try:
            self.debate.runtime.save_draft(editor.agent_id, editor.slot, message.text)
        except (StoreError, OSError) as exc:
            editor.draft_saved(str(exc))
            return
        editor.draft_saved()

    def show_view(self, message: SeatEditor.ShowView) -> None:
        from .context import ContextScreen

        self.screen.app.push_screen(ContextScreen(self.debate.state, self.debate.index, message.agent_id, None,
                                                  at_task=True))

    # ------------------------------------------------------------------ the header

    def badge(self, status: str) -> str | None:
        """What the header's status says of the turns awaited (after `status`), or None."""
        waiting = [a for a in self.waiting_for if a in self.people]
        if not waiting or self.debate.state.status != "running" or self.debate.runtime.error:
            return None
        if len(self.people) == 1:  # the person at this terminal
            text = "✎ YOUR TURN" if status or self.screen.size.width < TINY_WIDTH else "✎ WAITING FOR YOU"
        else:
            text = "✎ WAITING FOR " + ", ".join(self.debate.index.name(a).upper() for a in waiting)
        return f"{status} · {text}" if status else text

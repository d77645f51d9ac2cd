"""The context inspector: the exact messages an agent's calls sent, tier by tier.

Messages are rebuilt from the recorded `ViewRecord`s with the same function the
engine used to send them (`core.context.inspect.call_view` → `render_messages`).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Label, Select, Static

from moot.core.context.index import DebateIndex
from moot.core.context.inspect import call_view, message_tiers, records_for
from moot.core.models import DebateState, ViewRecord
from moot.core.sanitize import one_line_safe, terminal_safe
from moot.tui.format import k

ALL = "*"


class ContextScreen(Screen):
    """Pick a round, an agent, a phase and a critique target; see what was sent."""

    CSS_PATH = "context.tcss"
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("left_square_bracket,left", "round(-1)", "Prev round", key_display="[", priority=True),
        Binding("right_square_bracket,right", "round(1)", "Next round", key_display="]", priority=True),
        Binding("comma", "agent(-1)", "Prev agent", key_display=","),
        Binding("full_stop", "agent(1)", "Next agent", key_display="."),
        Binding("q", "back", "Back", show=False),
    ]

    def __init__(self, state: DebateState, index: DebateIndex, agent_id: str, round_no: int,
                 phase: str | None = None, target: str | None = None) -> None:
        super().__init__()
        self.state = state
        self.index = index
        self.agent_id = agent_id
        self.round_no = round_no
        self.phase = phase or ALL
        self.target = target or ALL
        self._options: dict[str, list[tuple[str, Any]]] = {}
        """What each Select offers now (set again only when it changes)."""

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with Vertical(id="ctx-top"):
            yield Label("", id="ctx-title")
            with Horizontal(id="ctx-pickers"):
                yield Select(self._agent_options(), value=self.agent_id, allow_blank=False, id="ctx-agent",
                             prompt="agent")
                yield Select(self._round_options(), value=self.round_no, allow_blank=False, id="ctx-round")
                yield Select([("all phases", ALL)], value=ALL, allow_blank=False, id="ctx-phase")
                yield Select([("all targets", ALL)], value=ALL, allow_blank=False, id="ctx-target")
        yield VerticalScroll(id="ctx-body")
        yield Footer()

    async def on_mount(self) -> None:
        await self._refresh()
        self.query_one("#ctx-body").focus()

    def _agent_options(self) -> list[tuple[str, str]]:
        infos = [*self.state.agents, *([self.state.judge] if self.state.judge else [])]
        return [(one_line_safe(f"{a.name} ({a.role})" if a.name.lower() != a.role else a.name), a.id) for a in infos]

    def _round_options(self) -> list[tuple[str, int]]:
        return [(f"round {r.number}", r.number) for r in self.state.rounds]

    def _records(self) -> list[ViewRecord]:
        return records_for(self.state, self.round_no, self.agent_id)

    # ------------------------------------------------------------------ rendering

    async def _refresh(self) -> None:
        records = self._records()
        phases = sorted({r.phase for r in records}, key=lambda p: ["summarize", "proposal", "critique",
                                                                   "refinement", "synthesis"].index(p)
                        if p in ("summarize", "proposal", "critique", "refinement", "synthesis") else 9)
        targets = sorted({r.target_agent_id for r in records if r.target_agent_id})
        if self.phase not in phases:
            self.phase = ALL
        if self.target not in targets:
            self.target = ALL
        self._set_select("#ctx-agent", self._agent_options(), self.agent_id)
        self._set_select("#ctx-round", self._round_options(), self.round_no)
        self._set_select("#ctx-phase", [("all phases", ALL), *((p, p) for p in phases)], self.phase)
        self._set_select("#ctx-target", [("all targets", ALL), *((f"→ {t}", t) for t in targets)], self.target)
        shown = [r for r in records if (self.phase == ALL or r.phase == self.phase)
                 and (self.target == ALL or r.target_agent_id == self.target)]
        name = self.index.name(self.agent_id)
        self.query_one("#ctx-title", Label).update(Text(one_line_safe(
            f"Context inspector · {name} · round {self.round_no} of {len(self.state.rounds)} · "
            f"{len(shown)} call{'s' if len(shown) != 1 else ''} · debate {self.state.id}")))
        body = self.query_one("#ctx-body", VerticalScroll)
        await body.remove_children()
        if not shown:
            await body.mount(Label("no calls recorded for this agent, round and phase", classes="ctx-empty"))
            return
        widgets: list[Static | Label] = []
        for record in shown:
            widgets.extend(self._call_widgets(call_view(record, self.index)))
        await body.mount_all(widgets)
        body.scroll_home(animate=False)

    def _call_widgets(self, view: dict[str, Any]) -> list[Static | Label]:
        t = view["tokens"]
        target = f" → {view['target_agent_id']}" if view["target_agent_id"] else ""
        dropped = f" · {len(view['dropped_ids'])} older items dropped" if view["dropped_ids"] else ""
        summary = f" · summary {view['summary_id']}" if view["summary_id"] else ""
        out: list[Static | Label] = [Label(Text(one_line_safe(
            f"{view['phase']}{target} · {view['model']} · {k(t['total'])} / {k(view['budget'])} tokens · "
            f"max output {view['max_tokens']}{summary}{dropped}")), classes="ctx-call")]
        for (tier, n), message in zip(message_tiers(view), view["messages"]):
            out.append(Label(Text(f"[{message['role']}] {tier} · {n} tokens"), classes=f"ctx-tier -{tier}"))
            out.append(Static(Text(terminal_safe(message["content"])), classes="ctx-message"))
        return out

    def _set_select(self, selector: str, options: list[tuple[str, Any]], value: Any) -> None:
        select = self.query_one(selector, Select)
        # Changing options or value from code must not read as the user picking something.
        with select.prevent(Select.Changed):
            if self._options.get(selector) != options:
                select.set_options(options)
                self._options[selector] = options
            if select.value != value:
                select.value = value

    # ------------------------------------------------------------------ input

    @on(Select.Changed)
    async def _picked(self, event: Select.Changed) -> None:
        if event.value is Select.BLANK:
            return
        changed = False
        if event.select.id == "ctx-agent" and event.value != self.agent_id:
            self.agent_id, changed = str(event.value), True
        elif event.select.id == "ctx-round" and event.value != self.round_no:
            self.round_no, changed = int(str(event.value)), True
        elif event.select.id == "ctx-phase" and event.value != self.phase:
            self.phase, changed = str(event.value), True
        elif event.select.id == "ctx-target" and event.value != self.target:
            self.target, changed = str(event.value), True
        if changed:
            await self._refresh()

    async def action_round(self, step: int) -> None:
        n = self.round_no + step
        if 1 <= n <= len(self.state.rounds):
            self.round_no = n
            await self._refresh()
        else:
            self.notify(f"no round {n}", severity="warning", timeout=2)

    async def action_agent(self, step: int) -> None:
        ids = [a_id for _, a_id in self._agent_options()]
        i = ids.index(self.agent_id) if self.agent_id in ids else 0
        self.agent_id = ids[(i + step) % len(ids)]
        await self._refresh()

    def action_back(self) -> None:
        self.app.pop_screen()

"""A compact list of the agents: one line each with status, its view's token gauge and usage.

Shown beside a conversation's shared transcript, and in small terminals beside the one
pane that fits (clicking a row, or its number key, brings that agent's pane forward).
In the grid of panes it is hidden, and then its rows only note that they are stale:
a 12-agent debate asked them to redraw ~200 times a second (bench/tui_stream.py).
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Label

from ...core.models.provider_kinds import is_person
from ...core.models.state import AgentInfo, TierTokens
from ...core.safety.sanitize import one_line_safe
from ..activity import STATUS_ICONS, Activity, Status
from ..format import dom_id
from .label_text import update_label
from .token_gauge import TokenGauge


class AgentRow(Vertical):
    """Two lines: `● 1 Architect       12s` (status icon, number key, name, time of the call in
    flight) over its view's gauge `▕██░░▏ 2.1k/7k`."""

    DEFAULT_CSS = """
    AgentRow { height: 2; }
    AgentRow > Horizontal { height: 1; }
    AgentRow .row-name { width: 1fr; text-wrap: nowrap; text-overflow: ellipsis; }
    AgentRow .row-status { width: auto; padding: 0 0 0 1; color: $text-muted; text-wrap: nowrap; }
    AgentRow > TokenGauge { width: 1fr; padding: 0 0 0 2; }
    AgentRow.-focused .row-name { text-style: bold reverse; }
    AgentRow .row-name.-streaming, AgentRow .row-name.-thinking { color: $primary; }
    AgentRow .row-name.-summarizing { color: $accent; }
    AgentRow .row-name.-error { color: $error; }
    AgentRow .row-name.-done { color: $success; }
    AgentRow .row-name.-waiting { color: $text-muted; }
    """

    def __init__(self, info: AgentInfo, number: int, judge: bool = False,
                 clock: Callable[[], float] | None = None) -> None:
        super().__init__(id=dom_id("row", info.id))
        self.clock = clock
        """The debate's clock (live, watched or replayed), for the time a call has been in flight."""
        self.info = info
        self.number = number
        self.judge = judge
        self.activity = Activity()
        self._shown = "waiting"
        self._status_text = ""
        self._tooltip_text = ""
        self.stale = False
        """The activity changed while the roster was hidden: shown when it is displayed again."""

    def compose(self) -> ComposeResult:
        with Horizontal():
            # The status class is on the name, not the row: a class change restyles the node
            # and all its children, several times a call (the row has five).
            yield Label(self._name_text("waiting"), classes="row-name -waiting")
            yield Label("", classes="row-status")
        yield TokenGauge(compact=True)

    def _name_text(self, status: Status) -> Text:
        mark = "⚖" if self.judge else str(self.number)
        return Text(f"{STATUS_ICONS[status]} {mark} {one_line_safe(self.info.name)}")

    def refresh_status(self) -> None:
        """Show the activity's status, and how long its oldest call has been in flight
        (only note it while the roster is hidden)."""
        roster = self.parent
        if isinstance(roster, AgentRoster) and not roster.display:
            self.stale = True
            return
        self.stale = False
        status = self.activity.status
        clock = self.clock
        if status != self._shown:
            name = self.query_one(".row-name", Label)
            name.remove_class(f"-{self._shown}", update=False)
            name.add_class(f"-{status}")
            self._shown = status
            name.update(self._name_text(status))
        since = self.activity.since
        text = f"{max(0, int(clock() - since))}s" if clock is not None and since is not None else ""
        if is_person(self.info.provider) and status in ("thinking", "streaming"):
            text = f"✎ your turn {text}".rstrip()
        if text != self._status_text:
            update_label(self.query_one(".row-status", Label), text, self._status_text)
            self._status_text = text
        tip = one_line_safe(f"{self.info.name} ({self.info.role}) · {status}" + (
            f": {self.activity.error}" if status == "error" and self.activity.error else ""))
        if tip != self._tooltip_text:
            self._tooltip_text = tip
            self.tooltip = Text(tip)

    def show_view(self, tokens: TierTokens, budget: int) -> None:
        self.query_one(TokenGauge).update_view(tokens, budget)
        roster = self.parent
        if isinstance(roster, AgentRoster):
            roster.align_gauges()

    def on_click(self) -> None:
        self.post_message(AgentRoster.Picked(self.info.id))


class AgentRoster(VerticalScroll):
    class Picked(Message):
        """The user picked an agent in the roster."""

        def __init__(self, agent_id: str) -> None:
            super().__init__()
            self.agent_id = agent_id

    DEFAULT_CSS = """
    AgentRoster { height: auto; max-height: 12; scrollbar-size-vertical: 1; }
    """

    def __init__(self, *, clock: Callable[[], float] | None = None, id: str | None = None,  # noqa: A002
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.clock = clock
        self.rows: dict[str, AgentRow] = {}

    async def set_agents(self, agents: list[AgentInfo], judge: AgentInfo | None) -> None:
        if self.rows:
            return
        rows = [AgentRow(a, i + 1, clock=self.clock) for i, a in enumerate(agents)]
        if judge is not None:
            rows.append(AgentRow(judge, 0, judge=True, clock=self.clock))
        self.rows = {r.info.id: r for r in rows}
        await self.mount_all(rows)
        self.align_gauges()

    def align_gauges(self) -> None:
        """Every row's gauge label as wide as the widest (`– / –` before a first call, `546/7k`,
        `2.4k/7k`): the bars, one above another, then have the same length."""
        gauges = [row.query_one(TokenGauge) for row in self.rows.values() if row.is_mounted]
        width = max((len(g.label) for g in gauges), default=0)
        for gauge in gauges:
            if gauge.label_width != width:
                gauge.label_width = width
                gauge.refresh()

    def row(self, agent_id: str) -> AgentRow | None:
        return self.rows.get(agent_id)

    def tick(self) -> None:
        """Once a second: the rows with a call in flight show its time."""
        for row in self.rows.values():
            if row.activity.calls:
                row.refresh_status()

    def notify_style_update(self) -> None:
        """Shown again (a class on the screen changed the layout): the rows catch up at once."""
        super().notify_style_update()
        if self.display:
            for row in self.rows.values():
                if row.stale:
                    row.refresh_status()

    def mark_focused(self, agent_id: str | None) -> None:
        for a, r in self.rows.items():
            r.set_class(a == agent_id, "-focused")

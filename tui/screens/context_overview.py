"""The context overview (`/context`, key c): every agent's latest view by tier, and how far each
is from its next automatic summary.

What Claude Code's `/context` taught users to expect: where the tokens go (system, summary,
history, task, the room kept for the answer, what is free) and when the next compaction
comes. Enter (or i) opens the exact messages of the selected agent's latest call.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Label, ListItem, ListView

from ...core.context.index import DebateIndex
from ...core.context.outlook import Outlook, Trigger, outlook
from ...core.models.state import AgentInfo, DebateState, Usage
from ...core.safety.sanitize import one_line_safe
from ..format import dom_id, k
from ..widgets.token_gauge import tier_bar

TIERS = ("system", "summary", "history", "task")
UNITS = {"characters": "chars", "messages": "msgs"}
STYLE_CLASSES = ("system", "summary", "pinned", "recall", "history", "task", "tools", "free", "output", "muted", "warn")


class _Styled(Widget):
    """Reads the theme's gauge colours as component classes (they follow a theme change)."""

    DEFAULT_CSS = """
    _Styled > .ctx-tier--system { color: $gauge-system; }
    _Styled > .ctx-tier--summary { color: $gauge-summary; }
    _Styled > .ctx-tier--pinned { color: $gauge-history; }
    _Styled > .ctx-tier--recall { color: $gauge-summary; }
    _Styled > .ctx-tier--history { color: $gauge-history; }
    _Styled > .ctx-tier--task { color: $gauge-task; }
    _Styled > .ctx-tier--tools { color: $accent; }
    _Styled > .ctx-tier--free { color: $gauge-free; }
    _Styled > .ctx-tier--output { color: $gauge-output; }
    _Styled > .ctx-tier--muted { color: $text-muted; }
    _Styled > .ctx-tier--warn { color: $warning; text-style: bold; }
    """
    COMPONENT_CLASSES = {f"ctx-tier--{name}" for name in STYLE_CLASSES}

    def tier_style(self, name: str) -> Style:
        return self.get_component_rich_style(f"ctx-tier--{name}")


class Legend(_Styled):
    DEFAULT_CSS = "Legend { height: auto; padding: 0 1; }"

    def __init__(self, recall: bool = False) -> None:
        super().__init__()
        self.recall = recall
        """Name the recall tier too (some view of the debate has one)."""

    def render(self) -> Text:
        text = Text()
        for name in TIERS:
            text.append("█ ", self.tier_style(name))
            text.append(f"{name}  ")
            if name == "summary" and self.recall:
                text.append("▓ ", self.tier_style("recall"))
                text.append("recall  ")
        text.append("░ ", self.tier_style("free"))
        text.append("free  ")
        text.append("▒ ", self.tier_style("output"))
        text.append("reserved for the answer")
        return text


class AgentOutlook(_Styled):
    """Four lines for one agent: its latest call (its view against the view's budget, as the
    pane's gauge shows it, and the window: that budget plus the answer's reserve), a bar over
    the whole window, the tiers, the next summary."""

    DEFAULT_CSS = "AgentOutlook { height: auto; padding: 0 1; }"

    def __init__(self, info: AgentInfo, judge: bool) -> None:
        super().__init__()
        self.info = info
        self.judge = judge
        self.outlook: Outlook | None = None
        self.usage: Usage | None = None

    def show(self, look: Outlook, usage: Usage | None = None) -> None:
        self.outlook = look
        self.usage = usage
        self.refresh(layout=True)

    def render(self) -> Text:
        info, look = self.info, self.outlook
        width = max(20, self.size.width - 2)
        head = Text(("⚖ " if self.judge else "") + one_line_safe(info.name), style="bold")
        if info.name.lower() != info.role.lower():
            head.append(f" · {one_line_safe(info.role)}", self.tier_style("muted"))
        view = look.view if look else None
        if view is None:
            head.append("  no call yet", self.tier_style("muted"))
            return head
        target = f" → {view.target_agent_id}" if view.target_agent_id else ""
        step = "turn" if view.phase == "turn" else f"R{view.round} {view.phase}"
        room = view.budget + view.max_tokens
        used = view.tokens.total
        # The same two numbers as the pane's gauge (`1.9k / 7k`: the view against its budget),
        # then the window the bar and the percentages below are drawn against.
        head.append(f"  latest: {step}{target} · view {k(used)} of {k(view.budget)} · window {k(room)}",
                    self.tier_style("muted"))
        if view.window and view.window_source != "configured":
            model = "" if view.window == room else f"the model's {k(view.window)}, "
            head.append(f" ({model}{view.window_source})", self.tier_style("muted"))
        t = view.tokens
        read = t.tools + t.references  # what the call read (tool results, or reference passages)
        values = [t.system, t.summary, t.history,
                  max(0, t.total - t.system - t.summary - t.pinned - t.recall - t.history - read)]
        tiers: tuple[str, ...] = TIERS
        if t.recall:  # the recall tier, after the summary it stands beside
            tiers, values = TIERS[:2] + ("recall",) + TIERS[2:], values[:2] + [t.recall] + values[2:]
        if t.pinned:  # the pinned tier, right after the summary (as views place it)
            tiers, values = tiers[:2] + ("pinned",) + tiers[2:], values[:2] + [t.pinned] + values[2:]
        if read:
            tiers, values = tiers + ("tools",), values + [read]
        free = max(0, view.budget - used)
        parts = [(v, self.tier_style(name), "▒" if name == "pinned" else "▓" if name in ("recall", "tools") else "█")
                 for name, v in zip(tiers, values)]
        parts.append((free, self.tier_style("free"), "░"))
        bar = Text("▕")
        bar.append_text(tier_bar(parts, room, width - 2, self.tier_style("output"), "▒"))
        bar.append("▏")
        cells = [*zip(tiers, values), ("free", free), ("answer", view.max_tokens)]
        rows = []
        for row in (cells[:3], cells[3:6], cells[6:]):  # rows of three: fits 80 columns
            line = Text("  ")
            for name, value in row:
                line.append(f"{name:<8}", self.tier_style("output" if name == "answer" else name) + Style(bold=True))
                line.append(f"{k(value):>5} {pct(value, room):>4}   ")
            if row:
                rows.append(line)
        cache = self._cache_line()
        return Text("\n").join([head, bar, *rows, *([cache] if cache else []), self._next_summary(look)])

    def _cache_line(self) -> Text | None:
        """What the provider's prompt cache served of this agent's input so far (only when a
        server has reported any: many never do)."""
        u = self.usage
        if u is None or not u.cached_tokens or not u.prompt_tokens:
            return None
        return Text(f"  prompt cache: {pct(u.cached_tokens, u.prompt_tokens)} of its input so far "
                    f"({k(u.cached_tokens)} of {k(u.prompt_tokens)} tokens, priced at the cached rate)",
                    self.tier_style("muted"))

    def _next_summary(self, look: Outlook | None) -> Text:
        muted = self.tier_style("muted")
        if look is None or not look.triggers:
            return Text("  next summary: off for this agent", muted)
        shared = " (the shared one)" if look.owner != look.agent_id else ""
        lines = []
        for i, trig in enumerate(look.triggers):
            line = Text(f"  next summary{shared}: " if i == 0 else " " * (len(shared) + 14) + "or: ", muted)
            line.append_text(trigger_text(trig, self.tier_style("warn") if trig.ratio >= 0.8 else Style()))
            lines.append(line)
        return Text("\n").join(lines)


def pct(value: int, total: int) -> str:
    return f"{round(100 * value / total)}%" if total else "–"


def trigger_text(trig: Trigger, style: Style) -> Text:
    """`3,133 chars to go (1,867 of 5,000)`, or `due (5,210 of 5,000 chars)`."""
    unit = UNITS.get(trig.unit, trig.unit)
    now, at, left = (k(n) if trig.unit == "tokens" else f"{n:,}" for n in (trig.now, trig.at, trig.left))
    return Text(f"{left} {unit} to go ({now} of {at})" if trig.left else f"due ({now} of {at} {unit})", style)


class ContextOverviewScreen(Screen[None]):
    CSS_PATH = "context.tcss"
    BINDINGS = [
        Binding("escape,q,c", "back", "Back"),
        Binding("i", "inspect", "Exact messages", key_display="enter/i"),
    ]

    def __init__(self, state: DebateState, index: DebateIndex, selected: str | None = None) -> None:
        super().__init__()
        self.state = state
        self.index = index
        self.selected = selected

    def compose(self) -> ComposeResult:
        state = self.state
        step = "turn" if state.protocol == "conversation" else "round"
        yield Label(Text(f"Context · {step} {state.current_round}/{state.total_rounds} · % of each agent's window · "
                         f"debate {state.id}"), id="ctx-title")
        people_ids = [a.id for a in state.agents] + ([state.judge.id] if state.judge else [])
        yield Legend(recall=any(look.view is not None and look.view.tokens.recall
                                for look in (outlook(state, self.index, i) for i in people_ids)))
        people = [(a, False) for a in state.agents] + ([(state.judge, True)] if state.judge else [])
        items = [ListItem(AgentOutlook(info, judge), id=dom_id("outlook", info.id)) for info, judge in people]
        yield ListView(*items, id="ctx-agents")
        yield Footer()

    def on_mount(self) -> None:
        self._refresh()
        ids = self._ids()
        view = self.query_one(ListView)
        view.index = ids.index(self.selected) if self.selected in ids else 0
        view.focus()
        self.set_interval(1.0, self._refresh)

    def _ids(self) -> list[str]:
        return [w.info.id for w in self.query(AgentOutlook)]

    def _refresh(self) -> None:
        for widget in self.query(AgentOutlook):
            widget.show(outlook(self.state, self.index, widget.info.id), self.state.agent_totals.get(widget.info.id))

    def action_inspect(self) -> None:
        from .context import ContextScreen

        view = self.query_one(ListView)
        ids = self._ids()
        if view.index is None or not ids:
            return
        self.app.push_screen(ContextScreen(self.state, self.index, ids[view.index]))

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        self.action_inspect()

    def action_back(self) -> None:
        self.app.pop_screen()

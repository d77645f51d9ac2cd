"""The debate screen: header, a grid of agent panes, the event log and the command line.

It folds the events it receives into its own `DebateState` with `core.state.apply`,
whatever the runtime (live, watch, replay), so the screen is the same in all three.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from pathlib import Path
from typing import assert_never

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.events import DescendantFocus, Resize
from textual.screen import Screen
from textual.widgets import Footer, Label

from ...core.agents import find_agent
from ...core.context.index import DebateIndex
from ...core.context.outlook import summary_owner
from ...core.events import (
    BudgetReached,
    CallFailed,
    CallContinued,
    CallStarted,
    ClarificationsAnswered,
    ClarificationsAsked,
    ContributionAdded,
    ControlChanged,
    Converged,
    ConvergenceScored,
    DebateCompleted,
    DebateFailed,
    DebateInterrupted,
    DebateResumed,
    DebateStarted,
    Event,
    NoteInjected,
    PhaseCompleted,
    PhaseStarted,
    RoundStarted,
    SummaryAdded,
    SummaryRequested,
    SynthesisCompleted,
    Token,
    ToolCalled,
    ToolReturned,
    ToolsReady,
    Warning_,
    WindowLearned,
)
from ...core.models.state import AgentInfo, DebateState
from ...core.models.terms import JUDGE_ID, MAX_FOCUS
from ...core.observe.printer import solution_document
from ...core.storage.files import write_atomic
from ...core.storage.state import apply, new_state
from ..activity import calls_in_flight
from ..bridge import Bridge, DebateLoaded, EngineEvent, RuntimeFailed, TokensArrived
from ..commands import (
    COMMANDS,
    MootCommandProvider,
    CommandError,
    Vocabulary,
    palette_entries,
    parse,
    parse_round,
)
from ..followups import (
    Followups,
    after_inject,
    after_pause,
    after_resume,
    after_stop,
    after_summarize,
)
from ..runtime import READ_ONLY, ReadOnlyError, Runtime
from .context import ContextScreen
from .context_overview import ContextOverviewScreen
from ..theming import BUNDLED, theme_names
from ..widgets.agent_pane import AgentPane
from ..widgets.agent_roster import AgentRoster, AgentRow
from ..widgets.conversation_view import ConversationView
from ..widgets.command_input import CommandInput
from ..widgets.debate_header import DebateHeader
from ..widgets.event_log import EventLog

MIN_PANE_WIDTH = 38
MIN_PANE_HEIGHT = 8
GRID_CHROME = 13
"""Rows that are not panes: header, event log (8), feedback, command line, footer, a spare."""
FOCUS_CHROME = 8
"""The same in the focus layout, whose event log is 4 rows."""
SHORT_HEIGHT = 34
"""Below this the event log keeps 3 lines instead of 7."""
NARROW_WIDTH = 120
"""Below this the header drops the model (each pane names its own)."""
TINY_WIDTH = 100
"""Below this the header drops the elapsed time too, and the roster is narrower."""


def grid_shape(n: int, width: int, height: int) -> tuple[int, int]:
    """(columns, rows) for n panes: cells near a 2.6:1 shape, few empty cells, none too narrow."""
    if n <= 0:
        return 1, 1
    max_cols = max(1, min(n, width // MIN_PANE_WIDTH))
    best: tuple[float, int] = (math.inf, 1)
    for cols in range(1, max_cols + 1):
        rows = math.ceil(n / cols)
        pane_w, pane_h = width / cols, max(1.0, height / rows)
        score = abs(math.log((pane_w / pane_h) / 2.6)) + 0.3 * (cols * rows - n)
        if pane_h < MIN_PANE_HEIGHT:
            score += 2.0
        best = min(best, (score, cols))
    cols = best[1]
    return cols, math.ceil(n / cols)


def needs_focus_layout(n: int, width: int, height: int) -> bool:
    """True when n panes cannot all show text: one pane is shown with the roster beside it."""
    if n <= 1:
        return False
    cols, rows = grid_shape(n, width, height)
    return height / rows < MIN_PANE_HEIGHT or width / cols < MIN_PANE_WIDTH


def agent_usage(state: DebateState) -> dict[str, tuple[int, float]]:
    """Agent id (the judge's too) → (tokens, cost in USD) so far, every kind of call counted."""
    return {agent_id: (u.total_tokens, u.cost_usd) for agent_id, u in state.agent_totals.items()}


class DebateScreen(Screen):
    """One debate, live or recorded."""

    CSS_PATH = "debate.tcss"
    COMMANDS = {MootCommandProvider}
    # Help and quit first: the footer drops what does not fit from the right.
    BINDINGS = [
        Binding("question_mark,f1", "help", "Help", key_display="?"),
        Binding("q", "app.quit", "Quit"),
        Binding("escape", "back", "Back"),
        Binding("right_square_bracket", "next_agent", "Next agent", key_display="]"),
        Binding("left_square_bracket", "next_agent(-1)", "Previous agent", show=False),
        Binding("s", "summarize", "Summarize"),
        Binding("c", "context", "Context"),
        Binding("i", "inspect", "Inspect", show=False),
        Binding("p", "toggle_pause", "Pause"),
        Binding("x", "stop", "Stop"),
        Binding("t", "cycle_theme", "Theme", show=False),
        Binding("z", "zoom", "Zoom", show=False),
        Binding("end", "follow", "Follow live", show=False),
        *(Binding(str(n), f"show_agent({n})", show=False) for n in range(10)),
    ]

    def __init__(self, runtime: Runtime, *, can_go_back: bool = False, speed: float | None = None) -> None:
        super().__init__()
        self.runtime = runtime
        self.can_go_back = can_go_back
        self.speed = speed
        self.state = new_state("")
        self.index = DebateIndex()
        self.phase = ""
        self.panes: dict[str, AgentPane] = {}
        self.conversation: ConversationView | None = None
        self.compact = False
        """The focus layout: one pane (`current`) beside the roster, for terminals too small for all."""
        self.current: str | None = None
        self.loaded = False
        self.bridge = Bridge(runtime, self)
        self.followups = Followups()
        """What the feedback line becomes when a command takes effect."""
        self._usage_shown: dict[str, tuple[int, float]] = {}

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield DebateHeader()
        with Horizontal(id="main"):
            yield Grid(id="panes")
            yield AgentRoster(clock=self.runtime.now, id="roster")
        yield EventLog(id="event-log")
        with Vertical(id="command-bar"):
            yield Label("", id="command-feedback")
            with Horizontal(id="command-row"):
                yield Label("›", id="command-prompt")
                yield CommandInput(Vocabulary(self._agent_words, self._theme_words), id="command", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#command-feedback").display = False
        self.query_one(CommandInput).cursor_blink = getattr(self.app, "cursor_blink", True)
        self.run_worker(self.bridge.run(), name="bridge", group="bridge", exit_on_error=False)
        self.set_interval(1.0, self._tick)
        self._refresh_header()

    def on_resize(self, event: Resize) -> None:
        self._relayout()

    def _relayout(self) -> None:
        grid = self.query_one("#panes", Grid)
        width, height = self.size
        self.set_class(width < NARROW_WIDTH, "-narrow")
        self.set_class(width < TINY_WIDTH, "-tiny")
        self.set_class(height < SHORT_HEIGHT, "-short")
        self.query_one(Footer).compact = width < TINY_WIDTH
        compact = bool(self.panes) and needs_focus_layout(len(self.panes), width, max(1, height - GRID_CHROME))
        if compact != self.compact:
            self.compact = compact
            self.set_class(compact, "-compact")
            self.refresh_bindings()
        if compact:
            self._show_current(self.current or next(iter(self.panes)))
        n = 1 if self.zoomed is not None or compact else len(self.panes)
        cols, rows = grid_shape(n, width, max(1, height - GRID_CHROME))
        grid.styles.grid_size_columns = cols
        grid.styles.grid_size_rows = rows

    def _show_current(self, agent_id: str) -> None:
        """The focus layout's pane: shown, focused unless the user is typing, marked in the roster."""
        self.current = agent_id
        for pid, p in self.panes.items():
            p.set_class(pid == agent_id, "-current")
        self.query_one(AgentRoster).mark_focused(agent_id if self.compact else None)
        pane = self.panes.get(agent_id)
        if self.compact and pane is not None and not isinstance(self.focused, CommandInput):
            self.set_focus(pane)

    async def _build_panes(self) -> None:
        """The layout for the debate's protocol: a pane per agent, or a conversation's shared
        transcript beside the roster of agents."""
        if self.panes or self.conversation is not None or not self.state.agents:
            return
        roster = self.query_one(AgentRoster)
        await roster.set_agents(self.state.agents, self.state.judge)
        if self.state.protocol == "conversation":
            names = {a.id: (a.name, a.role) for a in [*self.state.agents, *([self.state.judge] if self.state.judge else [])]}
            self.conversation = ConversationView(names, id="conversation")
            self.set_class(True, "-conversation")
            await self.query_one("#main", Horizontal).mount(self.conversation, before=roster)
            self.refresh_bindings()
            return
        infos: list[tuple[AgentInfo, bool]] = [(a, False) for a in self.state.agents]
        if self.state.judge is not None:
            infos.append((self.state.judge, True))
        panes = [AgentPane(info, judge=judge) for info, judge in infos]
        for pane in panes:
            pane.streams = self.runtime.mode != "watch"
        self.panes = {p.info.id: p for p in panes}
        await self.query_one("#panes", Grid).mount_all(panes)
        self._relayout()
        self.refresh_bindings()

    def pane(self, agent_id: str | None) -> AgentPane | None:
        return self.panes.get(agent_id or "")

    @property
    def judge_pane(self) -> AgentPane | None:
        return self.pane(self.state.judge.id if self.state.judge else JUDGE_ID)

    # ------------------------------------------------------------------ engine side

    @on(DebateLoaded)
    async def _debate_loaded(self, message: DebateLoaded) -> None:
        snap = message.snapshot
        self.state = snap.state
        self.index = DebateIndex(self.state)
        log = self.query_one(EventLog)
        if self.state.problem:
            log.start_ts = self.state.created_at
        for event in snap.backlog:
            log.add_event(event)
            if isinstance(event, PhaseStarted):
                self.phase = event.phase
        await self._build_panes()
        await self._load_panes()
        if self.state.status == "running":
            for started in calls_in_flight(snap.backlog):  # opened mid-call: shown running, with its time
                await self._route(started)
        self._show_usage()
        self.loaded = True
        if self.state.status != "running":
            self._debate_ended()
        self._refresh_header()

    async def _load_panes(self) -> None:
        state = self.state
        latest = {v.agent_id: v for r in state.rounds for v in r.calls if v.phase != "summarize"}
        for agent_id, view in latest.items():
            if (loaded := self.query_one(AgentRoster).row(agent_id)) is not None:
                loaded.activity.finished_any = True
                loaded.show_view(view.tokens, view.budget)
                loaded.refresh_status()
        if self.conversation is not None:
            messages = [c for r in state.rounds[-ConversationView.MAX_MESSAGES:] for c in r.contributions]
            judge_id = state.judge.id if state.judge else JUDGE_ID
            summaries = [s for r in state.rounds for s in r.summaries.values() if s.agent_id == judge_id]
            view_ = self.conversation
            view_.call_later(view_.load, messages, summaries[-1] if summaries else None)
        for agent_id, pane in self.panes.items():
            contributions = [c for r in state.rounds for c in r.contributions if c.agent_id == agent_id]
            summaries = [r.summaries[agent_id] for r in state.rounds if agent_id in r.summaries]
            summary = summaries[-1] if summaries else (state.judge_summary if pane.judge else None)
            views = [v for r in state.rounds for v in r.calls if v.agent_id == agent_id and v.phase != "summarize"]
            pane.call_later(pane.load, contributions, summary, views[-1] if views else None,
                            state.final_solution if pane.judge else None)

    @on(EngineEvent)
    async def _engine_event(self, message: EngineEvent) -> None:
        event = message.event
        apply(self.state, event)
        self.index.on_event(event)
        self.query_one(EventLog).add_event(event)
        if (line := self.followups.on_event(event)) is not None:
            self.feedback(line)
        await self._route(event)
        self._show_usage()
        self._refresh_header()

    async def _route(self, event: Event) -> None:
        """What each event changes on screen (the header and the log are refreshed by the caller).

        Pane work is queued on the pane (`call_later`): the screen repaints only when its
        own queue is idle, so it hands the work over instead of doing it here. The roster
        rows and a conversation's transcript follow the same events."""
        judge = self.judge_pane
        judge_id = self.state.judge.id if self.state.judge else JUDGE_ID
        roster = self.query_one(AgentRoster)
        conv = self.conversation
        pane: AgentPane | None
        row: AgentRow | None
        match event:
            case DebateStarted():
                await self._build_panes()
            case PhaseStarted(phase=phase):
                self.phase = phase
                for pane in self.panes.values():
                    if pane.status == "done":
                        pane.status = "waiting"
                for row in roster.rows.values():
                    row.activity.phase_over()
                    row.refresh_status()
            case CallStarted(view=view):
                if view.phase in ("clarify", "score"):
                    self.phase = view.phase  # no phase_started for these steps
                if view.phase == "turn":
                    self.phase = "turn"
                if (pane := self.pane(view.agent_id)) is not None:
                    pane.call_later(pane.call_started, view, event.ts, self.runtime.now())
                if (row := roster.row(view.agent_id)) is not None:
                    row.activity.started(view.call_id, view.phase, event.ts)
                    if view.phase != "summarize":
                        row.show_view(view.tokens, view.budget)
                    row.refresh_status()
                if conv is not None:
                    conv.call_later(conv.call_started, view)
            case ContributionAdded(contribution=c):
                if (pane := self.pane(c.agent_id)) is not None:
                    pane.call_later(pane.contribution_added, c)
                self._row_ended(c.agent_id, c.metadata.call_id)
                if conv is not None:
                    conv.call_later(conv.contribution_added, c)
            case CallFailed(agent_id=agent_id, call_id=call_id, error=error, will_retry=will_retry):
                if (pane := self.pane(agent_id)) is not None:
                    pane.call_later(pane.call_failed, call_id, error, will_retry)
                if not will_retry and (row := roster.row(agent_id)) is not None:
                    row.activity.failed(call_id, error)
                    row.refresh_status()
                if conv is not None:
                    conv.call_later(conv.call_failed, call_id, error, will_retry)
            case SummaryAdded(summary=summary, judge=for_judge):
                pane = judge if for_judge else self.pane(summary.agent_id)
                if pane is not None:
                    pane.call_later(pane.summary_added, summary)
                self._row_ended(judge_id if for_judge else summary.agent_id, None)
                if conv is not None and summary.agent_id == judge_id and summary.scope == "conversation":
                    conv.call_later(conv.summary_added, summary)
            case SummaryRequested(agent_id=agent_id, focus=focus):
                if (pane := self.pane(agent_id)) is not None:
                    pane.call_later(pane.summary_requested, focus)
            case ClarificationsAsked(questions=items, round=r) | ClarificationsAnswered(answers=items, round=r):
                answered = isinstance(event, ClarificationsAnswered)
                for agent_id, pane in self.panes.items():
                    mine = [c for c in items if c.agent_id == agent_id]
                    pane.call_later(pane.clarifications, mine, answered, r)
                for row in roster.rows.values():
                    row.activity.ended_phase("clarify")
                    row.refresh_status()
            case ConvergenceScored(score=score, usage=usage):
                if judge is not None:
                    judge.call_later(judge.convergence_scored, score, usage.call_id)
                self._row_ended(judge_id, usage.call_id)
            case SynthesisCompleted(solution=solution):
                if judge is not None:
                    judge.call_later(judge.show_solution, solution)
                self._row_ended(judge_id, solution.metadata.call_id)
                if conv is not None:
                    conv.call_later(conv.show_solution, solution)
            case DebateCompleted() | DebateInterrupted() | DebateFailed():
                self._debate_ended()
                for row in roster.rows.values():
                    row.activity.stopped()
                    row.refresh_status()
                self.refresh_bindings()
            case ControlChanged():
                self.refresh_bindings()
            case ToolCalled(call_id=call_id, agent_id=agent_id, tool=tool):
                if (pane := self.pane(agent_id)) is not None:
                    pane.call_later(pane.tool_called, call_id, tool)
            case ToolReturned(call_id=call_id, agent_id=agent_id, tool_call_id=tool_call_id, ok=ok, summary=summary):
                if (pane := self.pane(agent_id)) is not None:
                    pane.call_later(pane.tool_returned, call_id, tool_call_id, ok, summary)
            case CallContinued(agent_id=agent_id, tokens=tokens, call_id=call_id):
                if (pane := self.pane(agent_id)) is not None:
                    budget = next((v.budget for r in self.state.rounds for v in r.calls if v.call_id == call_id), 0)
                    pane.call_later(pane.gauge.update_view, tokens, budget)
            case (DebateResumed() | RoundStarted() | PhaseCompleted() | Token() | Warning_() | NoteInjected()
                  | Converged() | BudgetReached() | WindowLearned() | ToolsReady()):
                pass  # the header and the event log show these
            case _:
                assert_never(event)

    def _row_ended(self, agent_id: str, call_id: str | None) -> None:
        row = self.query_one(AgentRoster).row(agent_id)
        if row is not None:
            row.activity.ended(call_id)
            row.refresh_status()

    def _show_usage(self) -> None:
        """Each pane's tokens and cost so far, sent to the panes whose numbers changed."""
        for agent_id, usage in agent_usage(self.state).items():
            pane = self.pane(agent_id)
            if pane is not None and self._usage_shown.get(agent_id) != usage:
                self._usage_shown[agent_id] = usage
                pane.call_later(pane.usage, *usage)

    @on(TokensArrived)
    def _tokens_arrived(self, message: TokensArrived) -> None:
        roster = self.query_one(AgentRoster)
        conv = self.conversation
        for chunk in message.chunks:
            if (pane := self.pane(chunk.agent_id)) is not None:
                pane.call_later(pane.stream, chunk)
            if conv is not None:
                conv.call_later(conv.stream, chunk)
            if (row := roster.row(chunk.agent_id)) is not None and chunk.call_id not in row.activity.streaming:
                row.activity.token(chunk.call_id)
                row.refresh_status()

    @on(RuntimeFailed)
    def _runtime_failed(self, message: RuntimeFailed) -> None:
        self.query_one(EventLog).add_line(f"✗ {message.error}", "error")
        self.runtime.error = message.error
        self._refresh_header()

    def _debate_ended(self) -> None:
        failed = self.state.status == "failed"
        for pane in self.panes.values():
            pane.call_later(pane.debate_ended, failed)
        if self.state.final_solution is not None and self.zoomed is None:
            # Stay on the final solution until the user quits (escape shows every pane again).
            self.zoom(self.judge_pane)

    # ------------------------------------------------------------------ header

    def _tick(self) -> None:
        steer = self.runtime.can_steer
        self.runtime.refresh()
        if steer != self.runtime.can_steer:  # the writer started or ended in another process
            self._refresh_header()
            self.refresh_bindings()
        self.query_one(AgentRoster).tick()
        now = self.runtime.now()
        for pane in self.panes.values():
            pane.tick(now)
        state = self.state
        if not state.problem:
            self.query_one(DebateHeader).show_elapsed(None)
            return
        end = self.runtime.now() if state.status == "running" else state.updated_at
        self.query_one(DebateHeader).show_elapsed(end - state.created_at)

    def _refresh_header(self) -> None:
        header = self.query_one(DebateHeader)
        header.show_state(self.state, self.phase, self.runtime.mode)
        self._tick()
        status = self.state.status
        if self.runtime.error:
            header.show_status("ENGINE ERROR", "error")
        elif not self.state.problem:
            header.show_status("STARTING" if self.runtime.mode == "live" else "LOADING", "")
        elif status == "completed":
            header.show_status("COMPLETED", "done")
        elif status == "failed":
            header.show_status("FAILED", "error")
        elif status in ("stopped", "interrupted", "stopped_budget"):
            header.show_status(status.upper().replace("_", " "), "warning")
        elif self.runtime.paused:
            header.show_status("PAUSED", "warning")
        elif self.runtime.mode == "watch" and self.runtime.gone:
            header.show_status("WATCH · NOT RUNNING", "warning")  # the writer died without an end
        elif self.runtime.mode == "watch":
            header.show_status("WATCH · attached" if self.runtime.can_steer else "WATCH · read-only", "info")
        elif self.runtime.mode == "replay":
            header.show_status(f"REPLAY ×{self.speed:g}" if self.speed else "REPLAY", "info")
        else:
            header.show_status("")

    # ------------------------------------------------------------------ commands

    def _agent_words(self) -> list[str]:
        return [a.id for a in self.state.agents]

    def _theme_words(self) -> list[str]:
        return theme_names(self.app.available_themes)

    def palette_entries(self) -> list[tuple[str, str, str]]:
        return palette_entries([(a.id, a.name) for a in self.state.agents], self._theme_words())

    def feedback(self, text: str, error: bool = False) -> None:
        label = self.query_one("#command-feedback", Label)
        label.update(Text(text))
        label.display = bool(text)
        label.set_class(error, "-error")
        label.set_class(not error, "-info")

    @on(CommandInput.Submitted, "#command")
    def _command_submitted(self, event: CommandInput.Submitted) -> None:
        line = event.value.strip()
        command = self.query_one(CommandInput)
        command.remember(line)
        command.value = ""
        # Leave the command line (as vim's ':' does), so the single-key bindings work
        # again at once; '/' comes back to it.
        self.set_focus(None)
        if line:
            self.run_command_line(line)

    def command_handlers(self) -> dict[str, Callable[..., None]]:
        """Command name → the method that runs it: one table for every command in `COMMANDS`."""
        return {
            "summarize": self.cmd_summarize,
            "context": self.cmd_context,
            "pause": self.cmd_pause,
            "resume": self.cmd_resume,
            "stop": self.cmd_stop,
            "inject": self.cmd_inject,
            "save": self.cmd_save,
            "copy": self.cmd_copy,
            "theme": self.cmd_theme,
            "help": self.cmd_help,
            "quit": self.cmd_quit,
        }

    def run_command_line(self, line: str) -> None:
        """Parse and run one command; every problem ends as an inline message."""
        try:
            cmd = parse(line)
            self.command_handlers()[cmd.name](*cmd.args)
        except (CommandError, ReadOnlyError) as exc:
            self.feedback(str(exc), error=True)

    def _require_running(self, what: str) -> None:
        if not self.state.problem:
            raise CommandError("the debate has not started yet")
        if self.state.status != "running" and self.runtime.mode != "replay":
            hint = f" (continue it with `moot resume {self.state.id}`)" if self.state.status in (
                "stopped", "interrupted", "failed") else ""
            raise CommandError(f"the debate is {self.state.status}: nothing to {what}{hint}")
        if not self.runtime.can_steer and self.runtime.mode != "replay":
            raise ReadOnlyError(READ_ONLY)

    def _require_engine(self, what: str) -> None:
        """Commands that need the engine itself (not a replay's playback)."""
        self._require_running(what)
        if not self.runtime.can_steer:
            raise ReadOnlyError(READ_ONLY)

    def _agent_list(self) -> str:
        return ", ".join(a.id for a in self.state.agents)

    def _no_agent(self, name: str, extra: str = "") -> CommandError:
        ids = [a.id for a in self.state.agents]
        close = difflib.get_close_matches(name.lower(), ids, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        return CommandError(f"no agent {name!r} — {hint}agents: {self._agent_list()}{extra}")

    def cmd_summarize(self, target: str | None = None, focus: str | None = None) -> None:
        self._require_engine("summarize")
        if target is None or target.lower() == "all":
            ids = [a.id for a in self.state.agents]
        else:
            agent = find_agent(target, self.state.agents, self.state.judge)
            if agent is None:
                raise self._no_agent(target, " (or all), then the focus: /summarize kiss keep the costs")
            if agent is self.state.judge:
                raise CommandError("the judge summarizes the final round by itself; /summarize takes a debater")
            ids = [agent.id]
        focus = " ".join(focus.split()) if focus else None
        if focus and len(focus) > MAX_FOCUS:
            raise CommandError(f"the focus is {len(focus)} characters; at most {MAX_FOCUS}")
        command_id: str | None = None
        for agent_id in ids if self.runtime.mode != "watch" else ids[:1]:
            # An attached watch sends one command (`all` or the agent) that the writer expands.
            target_id = agent_id if len(ids) == 1 or self.runtime.mode != "watch" else "all"
            try:
                command_id = self.runtime.request_summary(target_id, focus)
            except (KeyError, ValueError) as exc:
                raise CommandError(str(exc).strip("'\"")) from None
        who = "every agent" if len(ids) > 1 else ids[0]
        about = f" (focus: {focus})" if focus else ""
        self.feedback(f"summary of {who} requested{about}: made at the next call boundary…")
        self.followups.add(*after_summarize(sorted({summary_owner(self.state, a) for a in ids}), command_id))

    def cmd_context(self, agent: str | None = None, round_text: str | None = None) -> None:
        state = self.state
        if not state.rounds:
            raise CommandError("no calls recorded yet: the first round has not started")
        if agent is None and round_text is None:
            self.feedback("")
            self.app.push_screen(ContextOverviewScreen(state, self.index, self._focused_agent_id()))
            return
        if agent is not None and round_text is None and agent.isdigit():
            agent, round_text = None, agent
        if agent is None:
            agent_id = self._focused_agent_id() or state.agents[0].id
        else:
            found = find_agent(agent, state.agents, state.judge)
            if found is None:
                raise self._no_agent(agent, ", judge")
            agent_id = found.id
        round_no = parse_round(round_text, len(state.rounds)) if round_text is not None else None
        self.feedback("")
        self.open_inspector(agent_id, round_no)

    def open_inspector(self, agent_id: str, round_no: int | None = None) -> None:
        """The exact messages of the agent's calls: its latest call, or its first in `round_no`."""
        self.app.push_screen(ContextScreen(self.state, self.index, agent_id, round_no))

    def _focused_agent_id(self) -> str | None:
        pane = self._focused_pane()
        return pane.info.id if pane else (self.current if self.compact else None)

    def cmd_pause(self) -> None:
        self._require_running("pause")
        if self.runtime.paused:
            raise CommandError("already paused — /resume to continue")
        command_id = self.runtime.pause()
        if self.runtime.mode == "replay":
            self.feedback("replay paused — /resume (or p) continues")
        else:
            self.feedback("pause sent to the debate's process…" if command_id
                          else "pausing: the calls in flight finish first…")
            self.followups.add(*after_pause(command_id))
        self._refresh_header()
        self.refresh_bindings()

    def cmd_resume(self) -> None:
        self._require_running("resume")
        if not self.runtime.paused:
            raise CommandError("not paused")
        command_id = self.runtime.resume()
        self.feedback("resume sent to the debate's process…" if command_id else "resumed")
        self.followups.add(*after_resume(command_id))
        self._refresh_header()
        self.refresh_bindings()

    def cmd_stop(self) -> None:
        self._require_engine("stop")
        command_id = self.runtime.stop()
        self.feedback("stopping at the next call boundary…")
        self.followups.add(*after_stop(self.state.id, command_id))

    def cmd_inject(self, text: str | None = None) -> None:
        if not text or not text.strip():
            raise CommandError(f"usage: {COMMANDS['inject'].usage} — e.g. /inject Keep it simple")
        self._require_engine("inject")
        try:
            command_id = self.runtime.inject(text.strip())
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if command_id:
            self.feedback("note sent to the debate's process…")
            self.followups.add(*after_inject(command_id))
        else:
            self.feedback("moderator note added: every agent sees it from its next call on")

    def _solution(self) -> str:
        if self.state.final_solution is None:
            raise CommandError("no final solution yet: the judge writes it after the last round")
        return solution_document(self.state)

    def cmd_save(self, name: str | None = None) -> None:
        text = self._solution()
        path = Path(name).expanduser() if name else Path(f"solution-{self.state.id}.md")
        if path.is_dir():
            path = path / f"solution-{self.state.id}.md"
        try:
            write_atomic(path, text.encode("utf-8"))
        except OSError as exc:
            raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
        self.feedback(f"final solution saved to {path.resolve()} ({len(text):,} chars)")

    def cmd_copy(self) -> None:
        text = self._solution()
        self.app.copy_to_clipboard(text)
        self.feedback(f"final solution copied ({len(text):,} chars) — if nothing was copied, your terminal "
                      "ignores OSC 52: /save writes a file")

    def cmd_theme(self, name: str | None = None) -> None:
        names = self._theme_words()
        if name is None or name.lower() == "all":
            shown = theme_names(self.app.available_themes, everything=name is not None)
            more = "" if name is not None else " (/theme all adds Textual's own)"
            self.feedback(f"theme {self.app.theme}; themes: {', '.join(shown)}{more} — /theme NAME to switch")
            return
        if name not in self.app.available_themes:
            raise CommandError(f"unknown theme {name!r} — themes: {', '.join(names)} (/theme all lists more)")
        self.app.theme = name  # the app remembers it
        self.feedback(f"theme {name} (remembered)")

    def cmd_help(self) -> None:
        from .help import HelpScreen

        self.feedback("")
        self.app.push_screen(HelpScreen())

    def cmd_quit(self) -> None:
        self.call_later(self.app.action_quit)

    # ------------------------------------------------------------------ key actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        running = self.state.status == "running"
        live = self.runtime.can_steer and running
        if action in ("summarize", "stop"):
            return live
        if action == "toggle_pause":
            return live or (self.runtime.mode == "replay" and running)
        if action == "back":
            return self.can_go_back or self.zoomed is not None
        if action == "next_agent":
            return self.compact and self.zoomed is None
        return True

    def _focused_pane(self) -> AgentPane | None:
        focused = self.focused
        return focused if isinstance(focused, AgentPane) else None

    def action_command_line(self) -> None:
        command = self.query_one(CommandInput)
        if command.has_focus:
            command.insert_text_at_cursor("/")
            return
        # Focus now, not later (Widget.focus defers): keys typed or pasted right after
        # the slash must reach the input, not the screen's bindings.
        self.set_focus(command)
        command.value = "/"
        command.cursor_position = 1

    def prefill_command_line(self, line: str) -> None:
        """Put `line` on the command line for the user to finish (e.g. `/inject `)."""
        command = self.query_one(CommandInput)
        self.set_focus(command)
        command.value = line
        command.cursor_position = len(line)

    def action_summarize(self) -> None:
        """The focused agent's summary; with none focused, every agent's — after asking (N paid calls)."""
        from .confirm import ConfirmScreen

        pane = self._focused_pane()
        if pane is not None and not pane.judge:
            self.run_command_line(f"/summarize {pane.info.id}")
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.run_command_line("/summarize all")

        n = len(self.state.agents)
        self.app.push_screen(ConfirmScreen(f"Summarize all {n} agents?", f"That is {n} summarization calls. "
                                           "To summarize one agent, focus its pane (tab, or its number) "
                                           "and press s, or type /summarize NAME [focus]."), confirmed)

    def action_context(self) -> None:
        self.run_command_line("/context")

    def action_inspect(self) -> None:
        agent_id = self._focused_agent_id() or (self.state.agents[0].id if self.state.agents else None)
        if agent_id is not None:
            self.run_command_line(f"/context {agent_id}")

    def action_toggle_pause(self) -> None:
        self.run_command_line("/resume" if self.runtime.paused else "/pause")

    def action_stop(self) -> None:
        from .confirm import ConfirmScreen

        if not (self.runtime.can_steer and self.state.status == "running"):
            self.run_command_line("/stop")  # says why it cannot
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.run_command_line("/stop")

        self.app.push_screen(ConfirmScreen("Stop the debate?", "It is saved and can be continued with "
                                           f"`moot resume {self.state.id}`."), confirmed)

    def action_cycle_theme(self) -> None:
        current = self.app.theme
        nxt = BUNDLED[(BUNDLED.index(current) + 1) % len(BUNDLED)] if current in BUNDLED else BUNDLED[0]
        self.run_command_line(f"/theme {nxt}")

    @property
    def zoomed(self) -> AgentPane | None:
        return next((p for p in self.panes.values() if p.has_class("-zoomed")), None)

    def zoom(self, pane: AgentPane | None) -> None:
        """Show one pane in place of the grid (None: every pane again)."""
        for p in self.panes.values():
            p.set_class(p is pane, "-zoomed")
        if pane is not None and self.compact:
            self._show_current(pane.info.id)
        self.set_class(pane is not None, "-zoom")
        self._relayout()

    def action_zoom(self) -> None:
        if self.zoomed is not None:
            self.zoom(None)
        else:
            self.zoom(self._focused_pane() or self.judge_pane)

    def action_show_agent(self, number: int) -> None:
        """Key 1–9: that agent's pane (0: the judge's); in the focus layout it replaces the shown one."""
        ids = [a.id for a in self.state.agents]
        agent_id = (self.state.judge.id if self.state.judge else None) if number == 0 else (
            ids[number - 1] if number <= len(ids) else None)
        if agent_id is None or agent_id not in self.panes:
            return
        self._pick(agent_id)

    def action_next_agent(self, step: int = 1) -> None:
        ids = list(self.panes)
        if ids:
            at = ids.index(self.current) if self.current in ids else 0
            self._pick(ids[(at + step) % len(ids)])

    def _pick(self, agent_id: str) -> None:
        if self.compact:
            self._show_current(agent_id)
        else:
            self.set_focus(self.panes[agent_id])

    @on(AgentRoster.Picked)
    def _roster_picked(self, message: AgentRoster.Picked) -> None:
        if message.agent_id in self.panes:
            self._pick(message.agent_id)

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        pane = self._focused_pane()
        if pane is not None and self.current != pane.info.id:
            self.current = pane.info.id
            if self.compact:
                self._show_current(pane.info.id)

    def action_follow(self) -> None:
        for pane in ([self._focused_pane()] if self._focused_pane() else self.panes.values()):
            if pane is not None:
                pane.follow()

    def action_help(self) -> None:
        self.run_command_line("/help")

    def action_back(self) -> None:
        if self.zoomed is not None:
            self.zoom(None)
        elif self.can_go_back:
            self.app.pop_screen()

"""One agent's pane: who it is, what it is doing, its view's token gauge and its contributions.

Over 400 lines: the pane routes one agent's events to its parts (header, gauge, transcript,
seat editor) in one place, so a reader finds every change an event makes to a pane here.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.geometry import Region
from textual.markup import escape
from textual.reactive import reactive
from textual.widgets import Label

from ...core.models.provider_kinds import is_person, kind_of
from ...core.models.state import AgentInfo, Clarification, Contribution, ConvergenceScore, Solution, Summary, ViewRecord
from ...core.models.tools import ToolCallRecord
from ...core.safety.sanitize import one_line_safe
from ..bridge import TokenChunk
from ..format import contribution_title, dom_id, k, solution_markdown, solution_title, usd
from ..textual_compat import set_border_subtitle_text
from .kept_lines import KeptHorizontal, KeptLabel, KeptLines
from .label_text import update_label
from .token_gauge import TokenGauge
from .transcript import Entry, Transcript

STATUSES = ("waiting", "thinking", "streaming", "summarizing", "done", "error")
STATUS_ICONS = {"waiting": "○", "thinking": "◔", "streaming": "●", "summarizing": "◑", "done": "✓", "error": "✗"}
STATUS_COLORS = {"waiting": "$text-muted", "thinking": "$warning", "streaming": "$primary",
                 "summarizing": "$accent", "done": "$success", "error": "$error"}
STEP_TITLES = {"clarify": "clarifying questions", "score": "R{round} convergence check"}
"""Titles of the calls that end in an event other than a contribution."""
MORE_KEY = "~more"
EMPTY_KEY = "~empty"


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~])")


def tool_arguments_line(arguments: str, limit: int = 48) -> str:
    """A tool call's arguments on one short line: the values, without the JSON around them."""
    try:
        value = json.loads(arguments or "{}")
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        text = ", ".join(str(v) if isinstance(v, (str, int, float)) else json.dumps(v) for v in value.values())
    else:
        text = arguments
    return one_line_safe(text, limit)


def _md_escape(text: str) -> str:
    """The user's own words, shown literally inside markdown."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


class AgentPane(Vertical, KeptLines, can_focus=True):
    """A pane per debater (and one for the judge).

    Bounded: the calls in flight and the newest finished one show as markdown;
    older contributions collapse to one line each (click for the full text), at
    most `MAX_HISTORY` of them; older ones are only counted (`/context` shows all).

    The screen queues work on a pane with `pane.call_later(pane.method, …)`, so it
    runs in the pane's own message queue and the screen stays free to repaint."""

    MAX_HISTORY = 12
    KEEP_FINISHED = 1

    status: reactive[str] = reactive("waiting", repaint=False)  # shown by the status line alone (`_set_subtitle`)

    def __init__(self, info: AgentInfo, *, judge: bool = False, **kwargs: Any) -> None:
        super().__init__(id=dom_id("pane", info.id), classes="agent-pane" + (" -judge" if judge else ""), **kwargs)
        self.info = info
        self.judge = judge
        self._active: list[str] = []
        self._finished: list[str] = []
        self._history: list[str] = []
        self._summarizing: set[str] = set()
        self._hidden = 0
        self._error: str | None = None
        self._seq = 0
        self._steps: dict[str, str] = {}
        """Calls that end without a contribution (clarify, score) → their phase."""
        self._clarify_keys: dict[int, str] = {}
        """Clarification round → the block showing its questions."""
        self.solution_shown = False
        self._started_at: dict[str, float] = {}
        """call id → when it started, for the time shown while it is in flight."""
        self._elapsed: int | None = None
        self.streams = True
        """Tokens arrive while a call runs (False when watching another process: only events)."""
        self._summary_key: str | None = None
        """The transcript entry of the newest summary (one at a time)."""
        self.usage_text = ""
        """This agent's tokens and cost so far, shown after the status on the bottom border."""
        self._tool_titles: dict[str, str] = {}
        """Tool call id → its line's title while it runs."""
        self._subtitle: str | None = None

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        info = self.info
        title = info.name if info.name.lower() == info.role.lower() else f"{info.name} · {info.role}"
        self.border_title = ("⚖ " if self.judge else "") + escape(one_line_safe(title))
        with KeptHorizontal(classes="pane-meta"):
            where = kind_of(info.provider).where(info.model)
            yield KeptLabel(Text(one_line_safe(where)), classes="pane-model")
            yield KeptLabel("", classes="pane-badge")
        yield TokenGauge()
        yield Transcript(classes="pane-body")

    def on_mount(self) -> None:
        self.transcript.add(Entry(EMPTY_KEY, "", kind="note",
                                  text="synthesizes after the last round" if self.judge else "waiting for the debate…"))
        self._show_status()

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    @property
    def gauge(self) -> TokenGauge:
        return self.query_one(TokenGauge)

    def watch_status(self) -> None:
        self._show_status()

    def _show_status(self) -> None:
        # Colour through markup, not CSS classes: a class change restyles the whole pane.
        self.set_class(self.status == "error", "-error")
        extra = f": {escape(one_line_safe(self._error))}" if self.status == "error" and self._error else ""
        color = STATUS_COLORS.get(self.status, "$text-muted")
        usage = f" [$text-muted]· {self.usage_text}[/]" if self.usage_text else ""
        word = "call in progress" if self.status in ("thinking", "streaming") and not self.streams else self.status
        if is_person(self.info.provider) and self.status in ("thinking", "streaming"):
            word = "✎ waiting for you"
        elapsed = f" · {self._elapsed}s" if self._elapsed is not None and self.status in (
            "thinking", "streaming", "summarizing") else ""
        self._set_subtitle(f"[{color}]{STATUS_ICONS.get(self.status, '')} {word}{elapsed}{extra}[/]{usage}")

    def _set_subtitle(self, markup: str) -> None:
        """The bottom border's text, repainting only that row (the seconds of a running call
        change it every second; the whole pane's border and background stay as drawn)."""
        if markup == self._subtitle:
            return
        self._subtitle = markup
        width, height = self.outer_size
        if not self.is_mounted or not height:
            self.border_subtitle = markup
            return
        set_border_subtitle_text(self, markup)
        offset = self.content_offset  # the region is in content coordinates
        self.refresh(Region(-offset.x, height - 1 - offset.y, width, 1))

    def tick(self, now: float) -> None:
        """Once a second: how long the oldest call in flight has been running."""
        live = [self._started_at[c] for c in (*self._active, *self._summarizing) if c in self._started_at]
        elapsed = max(0, int(now - min(live))) if live else None
        if elapsed != self._elapsed:
            self._elapsed = elapsed
            self._show_status()

    def follow(self) -> None:
        """Jump back to the newest text and keep following it."""
        self.transcript.follow_end()

    # ------------------------------------------------------------------ events

    def call_started(self, view: ViewRecord, ts: float | None = None, now: float | None = None) -> None:
        """A call began at `ts`; with `now` its seconds show at once, not at the next tick."""
        self._call_started(view, ts)
        if now is not None:
            self.tick(now)

    def _call_started(self, view: ViewRecord, ts: float | None) -> None:
        if ts is not None:
            self._started_at = {c: t for c, t in self._started_at.items() if c in self._active or c in self._summarizing}
            self._started_at[view.call_id] = ts
        if view.phase == "summarize":
            self._summarizing.add(view.call_id)
            self.status = "summarizing"
            return
        self.gauge.update_view(view.tokens, view.budget)
        if view.phase in STEP_TITLES:
            self._steps[view.call_id] = view.phase
            title = STEP_TITLES[view.phase].format(round=view.round) + " · …"
        else:
            title = contribution_title(view.phase, view.round, view.target_agent_id) + " · …"
        self._archive(keep=self.KEEP_FINISHED)
        json_reply = view.phase in ("synthesis", *STEP_TITLES)
        self._add_block(Entry(view.call_id, title, text="```json\n" if json_reply else ""))
        self._active.append(view.call_id)
        self._error = None
        self.status = "thinking"

    def stream(self, chunk: TokenChunk) -> None:
        if chunk.call_id not in self._active:
            return  # a summary's tokens, or a call this pane never saw start
        transcript = self.transcript
        if chunk.restart:
            entry = transcript.get(chunk.call_id)
            transcript.set_text(chunk.call_id, "```json\n" if entry and entry.text.startswith("```json") else "")
        transcript.append_text(chunk.call_id, chunk.text)
        if self.status != "streaming":
            self.status = "streaming"

    def contribution_added(self, c: Contribution) -> None:
        if not c.carried_from:
            self.gauge.show_cached(c.metadata.cached_tokens, c.metadata.prompt_tokens)
        key = c.metadata.call_id or f"c:{c.id}"
        title = self._title(c)
        if key in self._active:
            self._active.remove(key)
            self.transcript.set_text(key, c.content, title=title, state="done")
        else:
            self._archive(keep=self.KEEP_FINISHED)
            self._add_block(Entry(key, title, text=c.content, state="done"))
        self._finished.append(key)
        self._settle()

    def tool_called(self, call_id: str, tool: ToolCallRecord) -> None:
        """A tool the model called, as one collapsible line above the call's answer (a click shows
        its arguments in full and what came back)."""
        args = tool_arguments_line(tool.arguments)
        title = f"⚒ {tool.name}({args})" + (" · from text" if tool.from_text else "")
        self._tool_titles[tool.id] = title
        key = f"tool:{call_id}:{tool.id}"
        text = f"```json\n{tool.arguments}\n```"
        transcript = self.transcript
        transcript.remove_entry(EMPTY_KEY)
        transcript.add(Entry(key, title + " · …", text=text, kind="history", brief=""), before=call_id)
        self._history.append(key)
        self._archive(keep=len(self._finished))

    def tool_returned(self, call_id: str, tool_call_id: str, ok: bool, summary: str) -> None:
        title = self._tool_titles.pop(tool_call_id, "⚒ tool")
        key = f"tool:{call_id}:{tool_call_id}"
        entry = self.transcript.get(key)
        if entry is not None:
            mark = "→" if ok else "✗"
            self.transcript.set_text(key, f"{entry.text}\n\n{mark} {summary}", title=f"{title} {mark} {summary}",
                                     state="done" if ok else "failed")

    def call_failed(self, call_id: str, error: str, will_retry: bool) -> None:
        if will_retry:
            self._set_subtitle(f"[$warning]↻ retrying: {escape(one_line_safe(error, 60))}[/]")
            return
        self._summarizing.discard(call_id)
        if call_id in self._active:
            self._active.remove(call_id)
            entry = self.transcript.get(call_id)
            title = (entry.title.removesuffix(" · …") if entry else "call") + " · failed"
            self.transcript.set_text(call_id, f"*{error}*", title=title, state="failed")
            self._finished.append(call_id)
        self._error = error[:80]
        self.status = "error"

    def clarifications(self, items: list[Clarification], answered: bool, round_no: int = 1) -> None:
        """This agent's clarifying questions (then with the user's answers) in place of its call's JSON."""
        key = next((k for k in self._active if self._steps.get(k) == "clarify"), None)
        shown = self._clarify_keys.get(round_no)
        if key is None and shown is not None and self.transcript.get(shown) is not None:
            key = shown  # the questions block, now answered
        if answered:
            text = "\n".join(f"- {c.question}  \n  → " + (f"**{_md_escape(c.answer)}**" if c.answer
                                                               else "*(no answer)*") for c in items)
        else:
            text = "\n".join(f"- {c.question}" for c in items)
        n = len(items)
        title = f"clarifying questions · {n}" if n else "clarifying questions · none"
        if n and answered:
            title += f", {sum(1 for c in items if c.answer)} answered"
        if key is None:
            if not items:
                return
            key = f"clarify:{self._seq}"
            self._seq += 1
            self._archive(keep=self.KEEP_FINISHED)
            self._add_block(Entry(key, title, text=text, state="done"))
            self._finished.append(key)
        else:
            self.transcript.set_text(key, text or "*no questions*", title=title, state="done")
            if key in self._active:
                self._active.remove(key)
                self._finished.append(key)
        self._clarify_keys[round_no] = key
        self._settle()

    def convergence_scored(self, score: ConvergenceScore, call_id: str | None) -> None:
        """The judge's convergence score in place of its call's JSON."""
        key = call_id if call_id in self._active else next(
            (k for k in self._active if self._steps.get(k) == "score"), None)
        conf = f"{score.confidence}/100" if score.confidence is not None else "n/a"
        title = STEP_TITLES["score"].format(round=score.round) + f" · confidence {conf}"
        text = score.reason or "*no reason given*"
        if key is None:
            key = f"score:{score.round}"
            if self.transcript.get(key) is not None:
                return
            self._archive(keep=self.KEEP_FINISHED)
            self._add_block(Entry(key, title, text=text, state="done"))
        else:
            self.transcript.set_text(key, text, title=title, state="done")
            self._active.remove(key)
        self._finished.append(key)
        self._settle()

    def usage(self, tokens: int, cost: float) -> None:
        """This agent's tokens (prompt + completion, every kind of call) and cost so far.

        The demo provider's counts are not shown (it costs nothing and its counts are
        made up); a real provider's tokens are, and the cost once it is not zero."""
        text = ""
        if cost > 0 or (tokens and not kind_of(self.info.provider).scripted):
            text = f"{k(tokens)} tok" + (f" · {usd(cost)}" if cost > 0 else "")
        if text != self.usage_text:
            self.usage_text = text
            self._show_status()

    def summary_requested(self, focus: str | None = None) -> None:
        badge = self.query_one(".pane-badge", Label)
        update_label(badge, Text("⇣ summary requested" + (f": {focus}" if focus else "")))
        badge.set_classes("pane-badge -requested")

    def summary_added(self, s: Summary, *, show_block: bool = True) -> None:
        """The badge, and the summary itself as a block that opens on click: open at once when
        the user asked for it (the newest summary only; older ones are in /context)."""
        self._summarizing.clear()
        md = s.metadata
        trigger = {"manual": "manual", "judge": "final round"}.get(s.trigger, "auto")
        fallback = " · fallback" if md.fallback_reason else ""
        badge = self.query_one(".pane-badge", Label)
        update_label(badge, f"⇣ R{s.round} {k(md.before_tokens)}→{k(md.after_tokens)} {s.method} ({trigger}){fallback}")
        badge.set_classes("pane-badge -summarized" + (" -manual" if s.trigger == "manual" else "")
                          + (" -fallback" if md.fallback_reason else ""))
        badge.tooltip = Text(one_line_safe(  # Text: the fallback reason quotes a server, never markup
            f"summary {s.id}: {md.before_tokens} → {md.after_tokens} tokens, "
            f"{md.before_chars} → {md.after_chars} chars, {s.written_by}/{s.strategy}, trigger {s.trigger}"
            + (f"; {s.facts_kept_label}" if s.facts_kept_label else "")
            + (f"; focus: {s.focus}" if s.focus else "")
            + (f"; fallback: {md.fallback_reason}" if md.fallback_reason else "")))
        if show_block:
            self._show_summary_block(s, trigger + fallback)
        self._settle()

    def _show_summary_block(self, s: Summary, how: str) -> None:
        transcript = self.transcript
        if self._summary_key is not None:
            transcript.remove_entry(self._summary_key)
        md = s.metadata
        key = f"summary:{s.id}"
        focus = f" · focus: {one_line_safe(s.focus, 60)}" if s.focus else ""
        facts = f" · {s.facts_kept_label}" if s.facts_kept_label else ""
        title = (f"summary R{s.round} · {k(md.before_tokens)} → {k(md.after_tokens)} tok{facts} · {s.written_by} "
                 f"({how}){focus}")
        manual = s.trigger == "manual"
        self._add_block(Entry(key, title, text=s.summary, kind="history", expanded=manual))
        self._summary_key = key
        if manual:
            transcript.scroll_to_entry(key)  # asked for: shown from its start (end follows again)

    def show_solution(self, solution: Solution) -> None:
        """The judge's final answer, rendered (replaces the streamed JSON)."""
        key = self._active.pop() if self._active else (solution.metadata.call_id or "solution")
        self._active.clear()
        if self.transcript.get(key) is None:
            self._archive(keep=0)
            self._add_block(Entry(key, ""))
        self.transcript.set_text(key, solution_markdown(solution), title=solution_title(solution), state="solution")
        self._finished.append(key)
        self.solution_shown = True
        self.status = "done"
        self.transcript.scroll_to_entry(key)

    def debate_ended(self, failed: bool) -> None:
        self._summarizing.clear()
        if self.status == "error":
            return
        if failed:
            if self._active:
                self.status = "error"
        elif self.status != "waiting" or self._finished or self._history:
            self.status = "done"

    def load(self, contributions: list[Contribution], summary: Summary | None, view: ViewRecord | None,
             solution: Solution | None = None) -> None:
        """Show a saved debate's history at once (watch, resume): no streaming."""
        if view is not None:
            self.gauge.update_view(view.tokens, view.budget)
        if summary is not None:
            self.summary_added(summary)
        shown = contributions[-(self.MAX_HISTORY + 1):]
        self._hidden = len(contributions) - len(shown)
        for c in shown:
            self.contribution_added(c)
        if solution is not None:
            self.show_solution(solution)
        elif contributions:
            self.status = "done"
        self._update_more()

    # ------------------------------------------------------------------ internals

    def _title(self, c: Contribution) -> str:
        carried = " (carried)" if c.carried_from else " · cut" if c.metadata.finish_reason == "length" else ""
        tokens = f" · {k(c.metadata.completion_tokens)} tok" if c.metadata.completion_tokens else ""
        return contribution_title(c.type, c.round, c.target_agent_id) + carried + tokens

    def _add_block(self, entry: Entry) -> None:
        transcript = self.transcript
        transcript.remove_entry(EMPTY_KEY)
        transcript.add(entry)

    def _settle(self) -> None:
        if self._active:
            return
        if self._summarizing:
            self.status = "summarizing"
        elif self.status != "error":
            self.status = "done"

    def _archive(self, keep: int) -> None:
        """Collapse finished blocks, beyond the newest `keep`, to one-line history entries."""
        transcript = self.transcript
        while len(self._finished) > keep:
            key = self._finished.pop(0)
            transcript.to_history(key)
            self._history.append(key)
        while len(self._history) > self.MAX_HISTORY:
            transcript.remove_entry(self._history.pop(0))
            self._hidden += 1
        self._update_more()

    def _update_more(self) -> None:
        transcript = self.transcript
        text = (f"… {self._hidden} earlier contribution{'s' if self._hidden != 1 else ''} (/context shows every call)"
                if self._hidden else "")
        entry = transcript.get(MORE_KEY)
        if entry is None and text:
            transcript.add(Entry(MORE_KEY, "", kind="note", text=text), first=True)
        elif entry is not None and entry.text != text:
            if text:
                transcript.set_text(MORE_KEY, text)
            else:
                transcript.remove_entry(MORE_KEY)

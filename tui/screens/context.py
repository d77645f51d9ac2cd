"""The context inspector: the exact messages of one call, tier by tier, with find.

Messages are rebuilt from the recorded `ViewRecord`s with the same function the engine
used to send them (`core.context.inspect.call_view` → `render_messages`). One call at a
time, in a read-only TextArea (scrolls at once, selects, finds); the agent's calls are
stepped through with keys, never picked from lists, so a 10,000-turn debate opens as fast
as a short one.

Over 400 lines: stepping through calls, find, and the re-run panel share the one TextArea and
its position; the overview, the editor and the re-run's request are their own modules.
"""

from __future__ import annotations

import re
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.geometry import Region
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, TextArea
from textual.widgets.text_area import Selection

from ...core.context.index import DebateIndex
from ...core.context.inspect import call_view, message_tiers, recall_lines, summary_lines
from ...core.models.state import DebateState, ViewRecord
from ...core.safety.sanitize import one_line_safe, terminal_safe
from ..format import k

CallRef = tuple[int, int]
"""(the round or turn, index of the call in it)."""


def agent_calls(state: DebateState, agent_id: str) -> list[CallRef]:
    """Every recorded call of the agent that the state holds (a long debate's oldest steps are
    in its log only: `moot context`), oldest first."""
    return [(r.number, ci) for r in state.rounds for ci, c in enumerate(r.calls) if c.agent_id == agent_id]


def find_all(text: str, query: str) -> list[int]:
    """Offsets of every case-insensitive occurrence of `query` in `text`."""
    if not query:
        return []
    hay, needle = text.casefold(), query.casefold()
    out: list[int] = []
    at = hay.find(needle)
    while at != -1:
        out.append(at)
        at = hay.find(needle, at + max(1, len(needle)))
    return out


OPERATORS = {"and", "or", "not", "near"}
TASK_HEADER = re.compile(r"^━━ \[\w+\] task · ", re.MULTILINE)
"""The line `call_text` puts over the task's message."""


def find_words(text: str, query: str) -> list[tuple[int, int]]:
    """(offset, length) of each match: the text as typed where it occurs; else each of its words
    (as a search query matches them: a hit for `job queue` may hold only `queue`), in order."""
    found = find_all(text, query)
    if found:
        return [(at, len(query)) for at in found]
    words = {w for w in re.findall(r"\w+", query) if w.casefold() not in OPERATORS}
    hits = sorted((at, len(w)) for w in words for at in find_all(text, w))
    out: list[tuple[int, int]] = []
    for at, n in hits:  # no overlaps: a word inside another's match is that match
        if not out or at >= out[-1][0] + out[-1][1]:
            out.append((at, n))
    return out


def location(text: str, index: int) -> tuple[int, int]:
    """(row, column) of a character offset, as TextArea counts them."""
    row = text.count("\n", 0, index)
    return row, index - (text.rfind("\n", 0, index) + 1)


def call_text(view: dict[str, Any]) -> str:
    """One call as plain text: a header per message with its tier and tokens, then its content."""
    parts: list[str] = []
    for (tier, n), message in zip(message_tiers(view), view["messages"]):
        about = f" · result of {message['tool_call_id']}" if message.get("tool_call_id") else ""
        parts.append(f"━━ [{message['role']}] {tier} · {n} tokens{about} ━━")
        if tier == "recall":  # why each item is there: the words searched, each item's score and words
            parts += [terminal_safe(line) for line in recall_lines(view.get("recall"))] + [""]
        if tier == "pinned" and view.get("pinned"):  # what was pinned, by the names /pin and /unpin take
            parts += [terminal_safe("pinned: " + ", ".join(p["label"] for p in view["pinned"])), ""]
        lost = summary_lines(view.get("summary")) if tier == "summary" else []
        if lost:  # what the summary lost when it was made: the facts its text no longer holds
            parts += [terminal_safe(line) for line in lost] + [""]
        parts.append(terminal_safe(message["content"]).rstrip())
        for call in message.get("tool_calls") or []:  # the tool loop: what the model called
            fn = call.get("function", {})
            parts.append(terminal_safe(f"→ {call.get('id')}: {fn.get('name')}({fn.get('arguments')})"))
        parts.append("")
    return "\n".join(parts)


class MessageText(TextArea):
    """Read-only text whose keys scroll the view (a reader's keys, not an editor's cursor)."""

    BINDINGS = [
        Binding("up", "scroll_up", show=False),
        Binding("down", "scroll_down", show=False),
        Binding("pageup", "page_up", show=False),
        Binding("pagedown,space", "page_down", show=False),
        Binding("home", "scroll_home", show=False),
        Binding("end", "scroll_end", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__("", id=id, read_only=True, soft_wrap=True, show_line_numbers=False, show_cursor=False,
                         highlight_cursor_line=False)


class ContextScreen(Screen[None]):
    """One agent's calls; ←/→ step through them, [ ] by round, , . by agent; / finds."""

    CSS_PATH = "context.tcss"
    # Each pair of steps shows as one key group (`← → call`): eight keys one by one did not fit
    # 80 columns, and the footer cut the last one mid-word.
    CALL, ROUND, AGENT = Binding.Group("call"), Binding.Group("round"), Binding.Group("agent")
    WHAT_IF = Binding.Group("what if")
    """r re-runs the call, e edits and re-runs it, f forks there, x lists its experiments."""
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("slash,ctrl+f", "find", "Find", key_display="/"),
        Binding("left", "call(-1)", "Prev call", key_display="←", priority=True, group=CALL),
        Binding("right", "call(1)", "Next call", key_display="→", priority=True, group=CALL),
        Binding("left_square_bracket", "round(-1)", "Prev round", key_display="[", group=ROUND),
        Binding("right_square_bracket", "round(1)", "Next round", key_display="]", group=ROUND),
        Binding("comma", "agent(-1)", "Prev agent", key_display=",", group=AGENT),
        Binding("full_stop", "agent(1)", "Next agent", key_display=".", group=AGENT),
        Binding("r", "rerun", "Re-run", group=WHAT_IF),
        Binding("f", "fork", "Fork", group=WHAT_IF),
        Binding("x", "experiments", "Experiments", group=WHAT_IF),
        Binding("e", "edit", "Edit & re-run", group=WHAT_IF),
        Binding("n", "find_next(1)", "Next match", show=False),
        Binding("N", "find_next(-1)", "Previous match", show=False),
        Binding("q", "back", "Back", show=False),
    ]

    def __init__(self, state: DebateState, index: DebateIndex, agent_id: str, round_no: int | None = None, *,
                 call_id: str | None = None, find: str = "", at_task: bool = False) -> None:
        super().__init__()
        self.state = state
        self.index = index
        self.agent_id = agent_id
        self.calls = agent_calls(state, agent_id)
        self.at = self._start(round_no)
        if call_id is not None:  # opened on one call (`/search` jumps to the view that holds a message)
            refs = [i for i, (ri, ci) in enumerate(self.calls) if state.round(ri).calls[ci].call_id == call_id]
            self.at = refs[0] if refs else self.at
        self.opening_find = find
        self.at_task = at_task
        """Open scrolled to the call's task (what a person at a seat is asked now), not the system prompt."""
        self.any_word = bool(find)
        """Find what a search query matched (its words, where the whole is not in the text),
        until the person types in the find box: then the text as typed."""
        self.query_text = ""
        self.matches: list[int] = []
        self.match_lengths: list[int] = []
        self.match_at = -1

    def _start(self, round_no: int | None) -> int:
        """The agent's latest call, or its first in `round_no` (its last before it when none)."""
        if not self.calls:
            return -1
        if round_no is None:
            return len(self.calls) - 1
        before = [i for i, (ri, _) in enumerate(self.calls) if ri <= round_no]
        in_round = [i for i in before if self.calls[i][0] == round_no]
        return in_round[0] if in_round else (before[-1] if before else 0)

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield Label("", id="ctx-title")
        yield Label("", id="ctx-tiers")
        yield MessageText(id="ctx-text")
        yield TextArea(id="ctx-rerun", read_only=True, show_line_numbers=False, soft_wrap=True)
        with Horizontal(id="ctx-find"):
            yield Label("find", id="ctx-find-label")
            yield Input(placeholder="text to find · enter: next · esc: close", id="ctx-find-input", compact=True)
            yield Label("", id="ctx-find-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#ctx-find").display = False
        self.query_one("#ctx-rerun").display = False
        self.query_one("#ctx-rerun", TextArea).cursor_blink = getattr(self.app, "cursor_blink", True)
        self._show()
        self.query_one(TextArea).focus()
        if self.opening_find:  # shown found: the match in the middle, n / N for the others
            self.query_text = self.opening_find
            self.query_one("#ctx-find").display = True
            self.query_one("#ctx-find-input", Input).value = self.opening_find
            # After the first layout: before it the text is not wrapped to the view's width,
            # so the match has no place to scroll to and the view stayed at the top.
            self.call_after_refresh(self._search)
        elif self.at_task:
            self.call_after_refresh(self._scroll_to_task)

    def _scroll_to_task(self) -> None:
        """The task's header at the top of the view (after the first layout, as for find)."""
        area = self.query_one(TextArea)
        header = TASK_HEADER.search(area.text)
        if header is None:
            return
        row, _ = location(area.text, header.start())
        top = area.wrapped_document.location_to_offset((row, 0)).y
        area.scroll_to(y=top, animate=False, immediate=True)

    @property
    def record(self) -> ViewRecord | None:
        if self.at < 0:
            return None
        ri, ci = self.calls[self.at]
        calls = self.state.round(ri).calls
        return calls[ci] if ci < len(calls) else None

    def _show(self) -> None:
        record = self.record
        name = self.index.name(self.agent_id)
        area = self.query_one(TextArea)
        step = "turn" if self.state.protocol == "conversation" else "round"
        if record is None:
            title = f"{name} · no calls recorded yet · debate {self.state.id}"
            self.query_one("#ctx-title", Label).update(Text(one_line_safe(title)))
            self.query_one("#ctx-tiers", Label).update("")
            area.load_text("")
            return
        view = call_view(record, self.index)
        target = f" → {record.target_agent_id}" if record.target_agent_id else ""
        self.query_one("#ctx-title", Label).update(Text(one_line_safe(
            f"{name} · {step} {record.round}/{self.state.total_rounds} · {record.phase}{target} · "
            f"call {self.at + 1} of {len(self.calls)} · exact messages · debate {self.state.id}")))
        t = record.tokens
        dropped = f" · {len(record.dropped_ids)} older items dropped" if record.dropped_ids else ""
        summary = self.index.summaries.get(record.summary_id or "")
        written = f" ({summary.written_by})" if summary is not None and t.summary else ""
        compact = " · compact prompts" if record.system_key.endswith("@compact") else ""
        window = (f" · window {k(record.window)} ({record.window_source})"
                  if record.window and record.window_source != "configured" else "")
        self.query_one("#ctx-tiers", Label).update(Text(one_line_safe(
            f"{record.model} · system {k(t.system)}{compact} · summary {k(t.summary)}{written} · "
            + (f"pinned {k(t.pinned)} · " if t.pinned else "") + (f"recall {k(t.recall)} · " if t.recall else "") +
            f"history {k(t.history)} · task {k(t.task)} = {k(t.total)} of {k(record.budget)} · "
            f"answer {k(record.max_tokens)}{window}{dropped}")))
        area.load_text(call_text(view))
        area.scroll_home(animate=False)
        if self.searching:
            self._search()

    # ------------------------------------------------------------------ stepping

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        typing = isinstance(self.focused, Input)
        if action in ("call", "round", "agent", "find", "find_next", "rerun", "fork", "experiments", "edit") and typing:
            return False  # the keys go to the find box
        if action == "find_next" and not self.searching:
            return False
        return True

    def action_call(self, step: int) -> None:
        n = self.at + step
        if 0 <= n < len(self.calls):
            self.at = n
            self._show()
        else:
            self.notify("no earlier call" if step < 0 else "no later call", timeout=2)

    def action_round(self, step: int) -> None:
        if self.at < 0:
            return
        current = self.calls[self.at][0]
        if step > 0:
            nxt = next((i for i, (ri, _) in enumerate(self.calls) if ri > current), None)
        else:
            earlier = [ri for ri, _ in self.calls if ri < current]
            nxt = next((i for i, (ri, _) in enumerate(self.calls) if earlier and ri == earlier[-1]), None)
        if nxt is None:
            self.notify("no earlier round for this agent" if step < 0 else "no later round for this agent", timeout=2)
            return
        self.at = nxt
        self._show()

    def action_agent(self, step: int) -> None:
        people = [*self.state.agents, *([self.state.judge] if self.state.judge else [])]
        ids = [a.id for a in people]
        i = ids.index(self.agent_id) if self.agent_id in ids else 0
        self.agent_id = ids[(i + step) % len(ids)]
        round_no = self.record.round if self.record is not None else None
        self.calls = agent_calls(self.state, self.agent_id)
        self.at = self._start(round_no)
        self._show()

    # ------------------------------------------------------------------ what if

    def action_rerun(self) -> None:
        """`r`: send this call again as it was; its reply streams into the panel under the messages."""
        from .context_rerun import debate_folder_of, rerun

        record = self.record
        folder, _ = debate_folder_of(self.app, self.state.id)
        if record is None or folder is None:
            self.notify("no call to re-run here", timeout=3)
            return
        panel = self.query_one("#ctx-rerun", TextArea)
        panel.display = True
        panel.load_text(f"re-running {record.agent_id} {record.phase} (round {record.round}) as recorded…\n\n")
        view = call_view(record, self.index)

        def streamed(text: str) -> None:
            panel.insert(terminal_safe(text), panel.document.end)

        async def work() -> None:
            try:
                done = await rerun(self.state, folder, record, view, streamed)
            except Exception as exc:  # noqa: BLE001 - a provider or store error is shown, not raised
                done = f"── the re-run failed: {one_line_safe(str(exc), 300)} ──"
            panel.insert("\n\n" + done, panel.document.end)

        self.run_worker(work(), exclusive=True, group="rerun")

    def action_edit(self) -> None:
        """`e`: the call's messages, each editable, to send again (ctrl+r) or with its summary swapped."""
        from .context_edit import EditCallScreen
        from .context_rerun import debate_folder_of

        record = self.record
        folder, _ = debate_folder_of(self.app, self.state.id)
        if record is None or folder is None:
            self.notify("no call to edit here", timeout=3)
            return
        self.app.push_screen(EditCallScreen(self.state, folder, record, call_view(record, self.index)))

    def action_experiments(self) -> None:
        """`x`: the experiments saved on the call shown (`moot call`, `r`), with replies and word diffs."""
        from .context_rerun import debate_folder_of, saved_experiments

        record = self.record
        folder, _ = debate_folder_of(self.app, self.state.id)
        text = saved_experiments(folder, record.call_id) if record is not None and folder is not None else None
        if text is None:
            self.notify("no experiment saved on this call (r re-runs it)", timeout=3)
            return
        panel = self.query_one("#ctx-rerun", TextArea)
        panel.display = True
        panel.load_text(text)

    def action_fork(self) -> None:
        """`f`: fork the debate at this call (its round and phase, or turn) and run the fork in its own screen."""
        from ..commands.base import CommandError
        from ..commands.what_if import demo_delay_of, start_fork
        from .context_rerun import debate_folder_of, fork_point_of

        record = self.record
        folder, runtime = debate_folder_of(self.app, self.state.id)
        if record is None or folder is None:
            self.notify("no call to fork at here", timeout=3)
            return
        at = fork_point_of(self.state, record)
        try:
            start_fork(self.app, folder, at, None, demo_delay_of(runtime))
        except CommandError as exc:
            self.notify(one_line_safe(str(exc), 300), severity="error", timeout=6, markup=False)

    # ------------------------------------------------------------------ find

    @property
    def searching(self) -> bool:
        """The find bar is open: its matches are highlighted, n / N step through them."""
        return bool(self.query_one("#ctx-find").display)

    def action_find(self) -> None:
        """Open the find bar with the last search's text (selected: typing replaces it)."""
        self.query_one("#ctx-find").display = True
        box = self.query_one("#ctx-find-input", Input)
        box.value = self.query_text
        box.select_all()
        box.focus()
        if self.query_text:
            self._search()

    @on(Input.Changed, "#ctx-find-input")
    def _typed(self, event: Input.Changed) -> None:
        if event.value != self.query_text:
            self.query_text = event.value
            self.any_word = False
            self._search()

    @on(Input.Submitted, "#ctx-find-input")
    def _submitted(self, event: Input.Submitted) -> None:
        self.query_text = event.value
        self.query_one(TextArea).focus()  # n / N step through the matches from here
        self.action_find_next(1)

    def _search(self) -> None:
        """Find every match of the text in this call; show the first."""
        area = self.query_one(TextArea)
        query = self.query_text
        found = find_words(area.text, query) if self.any_word else [(at, len(query)) for at in find_all(area.text, query)]
        self.matches, self.match_lengths = [at for at, _ in found], [n for _, n in found]
        self.match_at = -1
        if self.matches:
            self.action_find_next(1)
        else:
            area.selection = Selection.cursor(area.selection.end)
            self._find_status()

    def action_find_next(self, step: int) -> None:
        if not self.matches:
            if self.query_text:
                self.notify(f"no match for {self.query_text!r}", timeout=2, markup=False)  # typed text, not markup
            return
        self.match_at = (self.match_at + step) % len(self.matches)
        area = self.query_one(TextArea)
        start = self.matches[self.match_at]
        text = area.text
        length = self.match_lengths[self.match_at]
        area.selection = Selection(location(text, start), location(text, start + length))
        # The selection highlights the match. A read-only TextArea without a cursor does not
        # scroll to its selection itself (`scroll_cursor_visible` needs a cursor): scroll to
        # the match's place in the wrapped text, in the middle of the view.
        first = area.wrapped_document.location_to_offset(area.selection.start)
        last = area.wrapped_document.location_to_offset(area.selection.end)
        region = Region(first.x, first.y, max(1, length), last.y - first.y + 1)
        area.scroll_to_region(region, animate=False, center=True, x_axis=False, immediate=True)
        self._find_status()

    def _find_status(self) -> None:
        status = self.query_one("#ctx-find-status", Label)
        if not self.query_text:
            status.update("")
        elif not self.matches:
            status.update("no match")
        else:
            status.update(f"{self.match_at + 1} of {len(self.matches)} · n/N")

    def _end_search(self) -> None:
        """Close the find bar and drop the highlight; the text stays where the search left it."""
        self.query_one("#ctx-find").display = False
        self.matches = []
        self.match_at = -1
        area = self.query_one(TextArea)
        area.selection = Selection.cursor(area.selection.start)
        area.focus()

    def action_back(self) -> None:
        """Escape: ends a search first (typing or stepping through its matches), then closes."""
        if self.searching:
            self._end_search()
            return
        self.app.pop_screen()

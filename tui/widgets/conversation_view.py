"""A conversation's shared transcript: speaker-labelled messages streaming in, and the rolling summary.

Bounded however long the conversation: the newest `MAX_MESSAGES` messages are rendered
(older ones leave the screen and stay reachable through the context inspector, `moot
context --turn` and `moot report`), so turn 10,000 draws what turn 100 draws.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Collapsible, Static

from ...core.models.state import Contribution, Solution, Summary, ViewRecord
from ...core.safety.sanitize import terminal_safe
from ..bridge import TokenChunk
from ..format import k, solution_markdown, solution_title
from .transcript import Entry, Transcript

MORE_KEY = "~more"
EMPTY_KEY = "~empty"


class ConversationView(Vertical):
    MAX_MESSAGES = 40

    DEFAULT_CSS = """
    ConversationView { height: 1fr; border: round $pane-border; padding: 0 1; }
    ConversationView > Collapsible { height: auto; max-height: 12; padding: 0; border: none; }
    ConversationView #summary-text { height: auto; max-height: 10; overflow-y: auto; color: $text-muted; }
    ConversationView > Transcript { height: 1fr; }
    """

    def __init__(self, names: dict[str, tuple[str, str]], *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.names = names
        """agent id → (name, role)."""
        self._live: dict[str, int] = {}
        """call id → its turn, for the turns streaming now."""
        self._keys: list[str] = []
        self._hidden = 0
        self.summary: Summary | None = None
        self.border_title = "Conversation"

    def compose(self) -> ComposeResult:
        with Collapsible(title="Rolling summary · none yet", collapsed=True, id="summary-box"):
            yield Static("", id="summary-text")
        yield Transcript(id="conversation-transcript")

    def on_mount(self) -> None:
        self.transcript.add(Entry(EMPTY_KEY, "", kind="note", text="waiting for the first turn…"))

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    def _title(self, turn: int, agent_id: str, extra: str = "") -> str:
        name, role = self.names.get(agent_id, (agent_id, ""))
        who = name if name.lower() == role.lower() else f"{name} ({role})"
        return f"Turn {turn} · {who}{extra}"

    def _add(self, entry: Entry) -> None:
        t = self.transcript
        t.remove_entry(EMPTY_KEY)
        t.add(entry)
        self._keys.append(entry.key)
        while len(self._keys) > self.MAX_MESSAGES:
            t.remove_entry(self._keys.pop(0))
            self._hidden += 1
        text = (f"… {self._hidden} earlier turn{'s' if self._hidden != 1 else ''} (the inspector, "
                "`moot context --turn` and `moot report` have every one)")
        if t.get(MORE_KEY) is None:
            t.add(Entry(MORE_KEY, "", kind="note", text=text), first=True)
        else:
            t.set_text(MORE_KEY, text)

    # ------------------------------------------------------------------ events

    def call_started(self, view: ViewRecord) -> None:
        if view.phase not in ("turn", "synthesis"):
            return
        if view.phase == "synthesis":
            self._live[view.call_id] = view.round
            self._add(Entry(view.call_id, "Final synthesis · …", text="```json\n"))
            return
        self._live[view.call_id] = view.round
        self._add(Entry(view.call_id, self._title(view.round, view.agent_id, " · …")))

    def stream(self, chunk: TokenChunk) -> None:
        if chunk.call_id not in self._live:
            return
        if chunk.restart:
            entry = self.transcript.get(chunk.call_id)
            self.transcript.set_text(chunk.call_id, "```json\n" if entry and entry.text.startswith("```json") else "")
        self.transcript.append_text(chunk.call_id, chunk.text)

    def contribution_added(self, c: Contribution) -> None:
        if c.type != "message":
            return
        key = c.metadata.call_id or f"c:{c.id}"
        tokens = f" · {k(c.metadata.completion_tokens)} tok" if c.metadata.completion_tokens else ""
        title = self._title(c.round, c.agent_id, tokens)
        if key in self._live:
            self._live.pop(key)
            self.transcript.set_text(key, c.content, title=title, state="done")
        else:
            self._add(Entry(key, title, text=c.content, state="done"))

    def call_failed(self, call_id: str, error: str, will_retry: bool) -> None:
        if call_id not in self._live or will_retry:
            return
        turn = self._live.pop(call_id)
        self.transcript.set_text(call_id, f"*{error}*", title=f"Turn {turn} · failed", state="failed")

    def summary_added(self, s: Summary) -> None:
        """Show the newest rolling summary (the shared one, or the one the judge keeps)."""
        self.summary = s
        box = self.query_one(Collapsible)
        md = s.metadata
        # The turns it covers first: at 80 columns the title is cut after ~35 characters.
        box.title = (f"Summary of turns 1–{s.covered_count} · made at turn {s.round} "
                     f"({s.trigger}, {k(md.before_tokens)}→{k(md.after_tokens)} tok"
                     + (f", {s.facts_kept_label})" if s.facts_kept_label else ")"))
        self.query_one("#summary-text", Static).update(Text(terminal_safe(s.summary)))

    def show_solution(self, solution: Solution) -> None:
        """The judge's answer, as the transcript's last entry."""
        key = solution.metadata.call_id or "solution"
        self._live.pop(key, None)
        if self.transcript.get(key) is None:
            self._add(Entry(key, ""))
        self.transcript.set_text(key, solution_markdown(solution), title=solution_title(solution), state="solution")
        self.transcript.scroll_to_entry(key)

    def load(self, messages: list[Contribution], summary: Summary | None) -> None:
        """A saved conversation at once (watch, resume): its newest messages and summary."""
        shown = messages[-self.MAX_MESSAGES:]
        self._hidden = len(messages) - len(shown)
        for c in shown:
            self.contribution_added(c)
        if summary is not None:
            self.summary_added(summary)

    def follow(self) -> None:
        self.transcript.follow_end()

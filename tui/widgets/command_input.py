"""The command line: `/` commands with completion, history on up/down, escape to leave."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.binding import Binding
from textual.widgets import Input

from ..commands.completion import CommandSuggester, Vocabulary
from .scroll_range import ScrollRangeOnly


class CommandInput(Input, ScrollRangeOnly):
    """An Input with a command suggester; tab accepts the suggestion. A key typed changes the
    scroll range, not the layout of the screen (`ScrollRangeOnly`)."""

    BINDINGS = [
        Binding("tab", "complete", "Complete", show=False),
        Binding("up", "history(-1)", "Previous command", show=False),
        Binding("down", "history(1)", "Next command", show=False),
        Binding("escape", "leave", "Leave", show=False),
    ]
    MAX_HISTORY = 100

    def __init__(self, vocab: Vocabulary, **kwargs: Any) -> None:
        super().__init__(placeholder="type / for a command — /help lists them", suggester=CommandSuggester(vocab),
                         select_on_focus=False, **kwargs)
        self.history: list[str] = []
        self._history_pos = 0

    def remember(self, line: str) -> None:
        if line and (not self.history or self.history[-1] != line):
            self.history.append(line)
            del self.history[: -self.MAX_HISTORY]
        self._history_pos = len(self.history)

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            # Submit here, in the input's own queue, in order with the keys typed before and
            # after it — not through Input's enter binding, which the app runs only once the key
            # has bubbled up to it, after later keys of a burst were already typed in.
            event.stop()
            event.prevent_default()
            await self.action_submit()

    async def action_submit(self) -> None:
        """Enter: hand the line over and empty the input at once, in order with any keys queued
        behind the Enter (keys that arrive in one burst may already hold the next command)."""
        line = self.value
        self.remember(line.strip())
        self.value = ""
        self.post_message(self.Submitted(self, line))

    def action_complete(self) -> None:
        if self._suggestion and self._suggestion != self.value:
            self.value = self._suggestion
            self.cursor_position = len(self.value)
        else:
            self.screen.focus_next()

    def action_history(self, step: int) -> None:
        if not self.history:
            return
        self._history_pos = max(0, min(len(self.history), self._history_pos + step))
        self.value = self.history[self._history_pos] if self._history_pos < len(self.history) else ""
        self.cursor_position = len(self.value)

    def action_leave(self) -> None:
        self.value = ""
        self.screen.set_focus(None)

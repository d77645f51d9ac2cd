"""The slash commands in Textual's command palette (ctrl+p)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from .registry import COMMANDS


def palette_entries(agents: Iterable[tuple[str, str]], themes: Iterable[str]) -> list[tuple[str, str, str]]:
    """(title, help, command line) for the palette, from the command table (`registry.COMMANDS`:
    a command with a `palette` title), then per agent and per theme; agents are (id, display name).

    A line ending in a space needs text from the user: the palette puts it on the
    command line instead of running it."""
    agents = list(agents)
    out = [(spec.palette, spec.help, spec.palette_line or f"/{spec.name}")
           for spec in COMMANDS.values() if spec.palette]
    for agent_id, name in agents:
        out.append((f"Summarize {name}", f"Summarize {name}'s context at its next call.", f"/summarize {agent_id}"))
        out.append((f"Context of {name}", f"What {name} saw in the current round.", f"/context {agent_id}"))
    out.append(("Context of the judge", "What the judge saw.", "/context judge"))
    for theme in themes:
        out.append((f"Theme: {theme}", "Switch theme (remembered).", f"/theme {theme}"))
    return out


@runtime_checkable
class CommandTarget(Protocol):
    """A screen that runs command lines (the debate screen): what the palette needs of it."""

    def palette_entries(self) -> list[tuple[str, str, str]]: ...

    def run_command_line(self, line: str) -> None: ...

    def prefill_command_line(self, line: str) -> None: ...


class MootCommandProvider(Provider):
    """The slash commands in Textual's command palette (ctrl+p)."""

    def _entries(self) -> tuple[CommandTarget | None, list[tuple[str, str, str]]]:
        screen = self.screen
        if not isinstance(screen, CommandTarget):
            return None, []
        return screen, screen.palette_entries()

    async def discover(self) -> Hits:
        screen, entries = self._entries()
        if screen is None:
            return
        for title, help_text, line in entries:
            yield DiscoveryHit(title, self._action(screen, line), help=help_text)

    async def search(self, query: str) -> Hits:
        screen, entries = self._entries()
        if screen is None:
            return
        matcher = self.matcher(query)
        for title, help_text, line in entries:
            score = max(matcher.match(title), matcher.match(line))
            if score > 0:
                yield Hit(score, matcher.highlight(title), self._action(screen, line), help=help_text)

    @staticmethod
    def _action(screen: CommandTarget, line: str) -> Callable[[], object]:
        if line.endswith(" "):
            return partial(screen.prefill_command_line, line)
        return partial(screen.run_command_line, line)

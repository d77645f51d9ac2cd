"""The errors a person sees, each with the process exit code it maps to.

Every error raised for a user (bad input, a bad config, a provider that keeps
failing, unreadable debate files) is a `MootError`: its message is one line and its
`exit_code` is what `moot` exits with. The entry point catches `MootError` once;
nothing else decides exit codes from error text.
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar


class ExitCode(IntEnum):
    OK = 0
    UNEXPECTED = 1
    """A bug: `moot` promises this never happens (MOOT_DEBUG=1 shows the traceback)."""
    INPUT = 2
    """Bad arguments or input: an unknown debate id, an unreadable problem file, corrupt files."""
    PROVIDER = 3
    """A provider call failed for good (after retries and fallbacks)."""
    CONFIG = 4
    """The configuration is invalid, or a view cannot fit its budget."""
    INTERRUPTED = 130
    """Ctrl-C or SIGTERM: the debate was saved and can be resumed."""


class MootError(Exception):
    """An error meant for a person: a one-line message and an exit code."""

    exit_code: ClassVar[ExitCode] = ExitCode.UNEXPECTED


class InputError(MootError):
    """Bad arguments or input."""

    exit_code = ExitCode.INPUT


class StoreError(InputError):
    """A problem with the files of a debate, phrased as one line."""


class InspectError(InputError):
    """A request for a view that does not exist (unknown agent, round or turn)."""

    @classmethod
    def not_at_turn(cls, agent_id: str, turn: int, calls: list[tuple[str, str]]) -> InspectError:
        """A conversation's agent asked for at a turn it made no call in: say whose calls are
        there, (agent, phase) each."""
        there = ", ".join(f"{agent} ({phase})" for agent, phase in calls) or "none"
        return cls(f"{agent_id} made no call at turn {turn}; calls at that turn: {there}")


class ConfigError(MootError):
    """A configuration problem, phrased as one line that names the field and the value."""

    exit_code = ExitCode.CONFIG


class PromptError(ConfigError):
    """A prompt file that cannot be used."""


class ContextOverflow(ConfigError):
    """Even the system prompt and a minimal task do not fit the budget."""


class ProviderError(MootError):
    """A call failed for good (after retries and fallbacks). The message is safe to show."""

    exit_code = ExitCode.PROVIDER

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class ContextTooLong(ProviderError):
    """The server refused the request as longer than its context window (HTTP 400).

    Not retried by the provider: the call engine rebuilds a smaller view and calls again."""

    def __init__(self, message: str, window: int | None, *, status: int | None = 400,
                 prompt_tokens: int | None = None) -> None:
        super().__init__(message, status=status)
        self.window = window
        """The window the server stated in its message, when it stated one."""
        self.prompt_tokens = prompt_tokens
        """How long the server counted the refused request, when it said."""


class ToolsRefused(ProviderError):
    """The endpoint refused a request because it offered tools (no function calling there).

    Not retried by the provider: the call engine remembers it for the endpoint and asks again
    with the retrieval tier instead of tools."""


__all__ = [
    "ContextTooLong",
    "ToolsRefused",
    "ConfigError",
    "ContextOverflow",
    "ExitCode",
    "InputError",
    "InspectError",
    "MootError",
    "PromptError",
    "ProviderError",
    "StoreError",
]

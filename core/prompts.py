"""Role prompts shipped as markdown package data, overridable by path.

Layout: `core/prompts/<role>/<kind>.md` with kind in PROMPT_KINDS, and
`core/prompts/judge/<kind>.md` with kind in JUDGE_KINDS. Templates use `{{name}}`
placeholders (see `render`); an unknown placeholder is left as is, so a user's
prompt file can never crash a debate.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

from .errors import PromptError
from .inputs import MAX_PROMPT_BYTES, read_text_file
from .models.terms import ROLES

PROMPT_KINDS = ("system", "propose", "critique", "refine", "summarize", "clarify")
JUDGE_KINDS = ("system", "synthesize", "summarize", "score")
SHARED: dict[str, tuple[str, str]] = {
    "turn": ("conversation", "turn"),
    "summarize_conversation": ("conversation", "summarize"),
    "answer": ("simultaneous", "answer"),
}
"""Prompt kinds every role shares, by protocol: kind → (folder, file). The role's own voice
comes from its system prompt."""

_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")


@lru_cache(maxsize=None)
def builtin(role: str, kind: str) -> str:
    """The shipped prompt text for a role (or "judge") and kind."""
    if role not in ("judge", "evaluator", "conversation", "simultaneous") and role not in ROLES:
        raise PromptError(f"unknown role {role!r}")
    try:
        return resources.files("moot.core").joinpath("prompts", role, f"{kind}.md").read_text("utf-8")
    except FileNotFoundError as exc:
        raise PromptError(f"no built-in {kind} prompt for {role}") from exc


def load(role: str, kind: str, override_path: str | None = None) -> str:
    """A prompt from `override_path` when given (a clear error if unreadable), else the built-in
    (the protocol's shared template for the kinds in SHARED)."""
    if override_path:
        path = Path(override_path).expanduser()
        text = read_text_file(path, "prompt file", max_bytes=MAX_PROMPT_BYTES, error=PromptError)
        if not text.strip():
            raise PromptError(f"prompt file {path} is empty")
        return text
    if kind in SHARED:
        return builtin(*SHARED[kind])
    return builtin(role, kind)


def render(template: str, **values: object) -> str:
    """Replace `{{name}}` with values[name]; placeholders without a value stay untouched."""

    def sub(match: re.Match[str]) -> str:
        key = match.group(1)
        return str(values[key]) if key in values else match.group(0)

    return _PLACEHOLDER.sub(sub, template)

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
    "summarize_conversation_above": ("conversation", "summarize_above"),
    "answer": ("simultaneous", "answer"),
    "solo": ("single", "answer"),
    "rank": ("council", "rank"),
}
"""Prompt kinds every role shares, by protocol: kind → (folder, file). The role's own voice
comes from its system prompt."""
QUESTION_KINDS: dict[tuple[bool, str], str] = {
    **{(False, k): k for k in ("system", "answer", "solo", "propose", "critique", "refine", "rank")},
    (True, "system"): "judge", (True, "synthesize"): "synthesize",
}
"""A question with a checkable answer (`debate.answer` set, as `moot bench` does) replaces the
design-debate prompts with `prompts/question/<file>.md`: (is the judge, kind) → file. The
summary, score and clarify prompts stay the role's."""

COMPACT = "@compact"
"""Suffix of a prompt's key in a debate's prompts for its compact variant (`architect/system@compact`)."""
_COMPACT_KINDS = {"propose", "critique", "refine", "summarize", "clarify", "answer", "turn", "solo", "rank",
                  "summarize_conversation", "summarize_conversation_above", "synthesize", "score"}


def compact(role: str, kind: str) -> str | None:
    """The compact variant of a built-in prompt, for views whose window is small (None: none).

    `core/prompts/compact/`: one short system prompt per role (`system-<role>.md`) and one
    task template per kind, shared by every role (the role's voice is in its system prompt);
    the judge's summary of the final round is `summarize_final.md`."""
    if kind == "system":
        name = f"system-{role}"
    elif role == "judge" and kind == "summarize":
        name = "summarize_final"
    elif kind in _COMPACT_KINDS:
        name = kind
    else:
        return None
    try:
        return resources.files("moot.core").joinpath("prompts", "compact", f"{name}.md").read_text("utf-8")
    except FileNotFoundError:
        return None


_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")


@lru_cache(maxsize=None)
def builtin(role: str, kind: str) -> str:
    """The shipped prompt text for a role (or "judge") and kind."""
    if role not in ("judge", "evaluator", "conversation", "simultaneous", "single", "council", "question") \
            and role not in ROLES:
        raise PromptError(f"unknown role {role!r}")
    try:
        return resources.files("moot.core").joinpath("prompts", role, f"{kind}.md").read_text("utf-8")
    except FileNotFoundError as exc:
        raise PromptError(f"no built-in {kind} prompt for {role}") from exc


def load(role: str, kind: str, override_path: str | None = None, *, question: bool = False) -> str:
    """A prompt from `override_path` when given (a clear error if unreadable), else the built-in
    (the question prompts for a question, the protocol's shared template for the kinds in SHARED)."""
    if override_path:
        path = Path(override_path).expanduser()
        text = read_text_file(path, "prompt file", max_bytes=MAX_PROMPT_BYTES, error=PromptError)
        if not text.strip():
            raise PromptError(f"prompt file {path} is empty")
        return text
    if question and (role == "judge", kind) in QUESTION_KINDS:
        return builtin("question", QUESTION_KINDS[(role == "judge", kind)])
    if kind in SHARED:
        return builtin(*SHARED[kind])
    return builtin(role, kind)


def placeholder(template: str, name: str) -> bool:
    """Whether `template` places `{{name}}`."""
    return any(m.group(1) == name for m in _PLACEHOLDER.finditer(template))


def render(template: str, **values: object) -> str:
    """Replace `{{name}}` with values[name]; placeholders without a value stay untouched."""

    def sub(match: re.Match[str]) -> str:
        key = match.group(1)
        return str(values[key]) if key in values else match.group(0)

    return _PLACEHOLDER.sub(sub, template)

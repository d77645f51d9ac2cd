"""The shipped prompt files: complete, with exactly the expected placeholders, renderable;
and `load()` overrides read by path with clear errors."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from moot.core import prompts
from moot.core.models.terms import ROLES
from moot.core.prompts import JUDGE_KINDS, PROMPT_KINDS, PromptError, builtin, load, render

PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")

# The topic rides in every system message (view layout 2: a stable prefix for the provider's
# prompt cache), so no task quotes it; an agent's summarization request carries its history as
# its views do, before the task. The judge's summary of the final round quotes its material.
ROLE_PLACEHOLDERS = {
    "system": set(),
    "propose": {"round", "total_rounds"},
    "critique": {"target_name", "target_role", "target_proposal"},
    "refine": {"own_proposal", "critiques"},
    "summarize": {"max_length"},
    "clarify": {"max_questions"},
}
JUDGE_PLACEHOLDERS = {
    "system": set(),
    "synthesize": {"material"},
    "summarize": {"max_length", "history"},
    "score": {"material"},
}
EVALUATOR_PLACEHOLDERS = {
    "system": set(),
    "evaluate": {"problem", "solution"},
}


def _evaluator_text(kind: str) -> str:
    # builtin() only accepts debate roles and "judge", so the evaluator's files are read
    # straight from the package data, the same place builtin() reads from.
    return resources.files("moot.core").joinpath("prompts", "evaluator", f"{kind}.md").read_text("utf-8")


CASES = (
    [(role, kind, ROLE_PLACEHOLDERS[kind]) for role in ROLES for kind in PROMPT_KINDS]
    + [("judge", kind, JUDGE_PLACEHOLDERS[kind]) for kind in JUDGE_KINDS]
    + [("evaluator", kind, names) for kind, names in EVALUATOR_PLACEHOLDERS.items()]
)


def _text(role: str, kind: str) -> str:
    return _evaluator_text(kind) if role == "evaluator" else builtin(role, kind)


def test_expected_kinds_are_covered() -> None:
    assert set(ROLE_PLACEHOLDERS) == set(PROMPT_KINDS)
    assert set(JUDGE_PLACEHOLDERS) == set(JUDGE_KINDS)


@pytest.mark.parametrize(("role", "kind", "expected"), CASES, ids=[f"{r}/{k}" for r, k, _ in CASES])
def test_prompt_exists_and_has_exactly_its_placeholders(role: str, kind: str, expected: set[str]) -> None:
    text = _text(role, kind)
    assert text.strip(), f"{role}/{kind}.md is empty"
    assert set(PLACEHOLDER.findall(text)) == expected
    # Every `{{` opens a real placeholder: nothing else that looks like one (single-brace
    # JSON examples are fine).
    assert text.count("{{") == len(PLACEHOLDER.findall(text))
    assert not [m for m in re.findall(r"\{\{[^{}]*\}\}", text) if not PLACEHOLDER.fullmatch(m)]


@pytest.mark.parametrize(("role", "kind", "expected"), CASES, ids=[f"{r}/{k}" for r, k, _ in CASES])
def test_render_fills_every_placeholder(role: str, kind: str, expected: set[str]) -> None:
    text = _text(role, kind)
    values = {name: f"<<value of {name}>>" for name in expected}
    out = render(text, **values)
    assert not PLACEHOLDER.search(out)
    for value in values.values():
        assert value in out


@pytest.mark.parametrize("role", [*ROLES, "judge", "evaluator"])
def test_no_unexpected_files(role: str) -> None:
    kinds = {
        "judge": set(JUDGE_KINDS),
        "evaluator": set(EVALUATOR_PLACEHOLDERS),
    }.get(role, set(PROMPT_KINDS))
    folder = resources.files("moot.core").joinpath("prompts", role)
    found = {entry.name.removesuffix(".md") for entry in folder.iterdir() if entry.name.endswith(".md")}
    assert found == kinds


def test_json_prompts_ask_for_json_only() -> None:
    for text in (
        *(builtin(role, "clarify") for role in ROLES),
        builtin("judge", "synthesize"),
        builtin("judge", "score"),
        _evaluator_text("evaluate"),
    ):
        assert "ONLY" in text and "JSON" in text


def test_evaluator_lists_every_criterion() -> None:
    text = _evaluator_text("evaluate")
    for criterion in (
        "functional_completeness",
        "performance",
        "security",
        "maintainability",
        "testability",
        "requirements_fulfilment",
        "overall",
    ):
        assert f'"{criterion}"' in text


def test_builtin_unknown_role_or_kind() -> None:
    with pytest.raises(PromptError, match="unknown role"):
        builtin("nobody", "system")
    with pytest.raises(PromptError, match="no built-in"):
        builtin("architect", "nonexistent")


def test_load_without_override_is_builtin() -> None:
    assert load("security", "critique") == builtin("security", "critique")
    assert load("judge", "score", None) == builtin("judge", "score")


def test_load_reads_override_file(tmp_path) -> None:
    path = tmp_path / "mine.md"
    path.write_text("Propose for {{problem}} in round {{round}}.", "utf-8")
    text = load("architect", "propose", str(path))
    assert text == "Propose for {{problem}} in round {{round}}."
    assert render(text, problem="X", round=2) == "Propose for X in round 2."


def test_load_missing_override_is_a_clear_error(tmp_path) -> None:
    path = tmp_path / "missing.md"
    with pytest.raises(PromptError, match="prompt file not found") as info:
        load("architect", "propose", str(path))
    assert str(path) in str(info.value)


@pytest.mark.parametrize("content", ["", "  \n\t\n"])
def test_load_empty_override_is_a_clear_error(tmp_path, content: str) -> None:
    path = tmp_path / "empty.md"
    path.write_text(content, "utf-8")
    with pytest.raises(PromptError, match="is empty") as info:
        load("architect", "propose", str(path))
    assert str(path) in str(info.value)


def test_render_leaves_unknown_placeholders() -> None:
    assert render("{{a}} {{ b }} {{c}}", a=1, b="two") == "1 two {{c}}"
    assert prompts.render("no placeholders") == "no placeholders"

"""Loading the theme files in `themes/` as Textual `Theme`s."""

from __future__ import annotations

import dataclasses
import logging
import tomllib
from collections.abc import Iterable
from pathlib import Path

from textual.theme import Theme

from ..themes import theme_files

log = logging.getLogger(__name__)

DEFAULT_THEME = "dark"
BUNDLED = ("dark", "light", "high-contrast")

VARIABLE_DEFAULTS: dict[str, str] = {
    "gauge-system": "#7d8799",
    "gauge-summary": "#c678dd",
    "gauge-history": "#3fa7d6",
    "gauge-task": "#59c27a",
    "gauge-free": "#2b3340",
    "gauge-output": "#a07a3c",
    "pane-border": "#4b5563",
    "demo-badge": "#f2a541",
}
"""Literal defaults for the app's own CSS variables: TCSS that names a variable no
theme defines fails to parse, so every theme (Textual's built-ins too) needs these."""

_FIELDS = {f.name for f in dataclasses.fields(Theme)}


class ThemeFileError(Exception):
    pass


def load_theme(path: Path) -> Theme:
    """One theme file as a Textual Theme; unknown keys are an error naming the file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ThemeFileError(f"{path.name}: {exc}") from None
    unknown = set(data) - _FIELDS
    if unknown:
        raise ThemeFileError(f"{path.name}: unknown keys {', '.join(sorted(unknown))}")
    data.setdefault("name", path.stem)
    variables = {str(k): str(v) for k, v in data.pop("variables", {}).items()}
    try:
        return Theme(**data, variables=variables)
    except TypeError as exc:
        raise ThemeFileError(f"{path.name}: {exc}") from None


def theme_names(available: Iterable[str], *, everything: bool = False) -> list[str]:
    """moot's own themes, in order; with `everything`, Textual's built-ins after them."""
    names = set(available)
    ours = [n for n in BUNDLED if n in names]
    if not everything:
        return ours
    return ours + sorted(n for n in names if n not in BUNDLED and n != "textual-ansi")


def load_themes() -> list[Theme]:
    """Every bundled theme that loads; a broken file is logged and skipped."""
    out: list[Theme] = []
    for path in theme_files():
        try:
            out.append(load_theme(path))
        except ThemeFileError as exc:
            log.warning("skipping theme %s", exc)
    return out

"""Theme files for the moot TUI: one TOML file per theme, loaded by `tui.theming`.

Each file holds the fields of a Textual `Theme` (name, primary, background, …, dark)
and an optional `[variables]` table for the app's own CSS variables (the gauge tiers).
This package has no code that imports Textual, so it can be read by anything.
"""

from __future__ import annotations

from pathlib import Path

THEMES_DIR = Path(__file__).resolve().parent


def theme_files() -> list[Path]:
    """The bundled theme files, sorted by name."""
    return sorted(THEMES_DIR.glob("*.toml"))

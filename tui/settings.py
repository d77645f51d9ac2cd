"""The user's TUI settings: a small JSON file, written atomically.

Location: `$MOOT_CONFIG_DIR/settings.json`, else `$XDG_CONFIG_HOME/moot/settings.json`,
else `~/.config/moot/settings.json`.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from pydantic import ValidationError

from ..core.models.base import Model
from ..core.storage.files import write_atomic

log = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"


class UserSettings(Model):
    """What the TUI remembers between runs."""

    theme: str | None = None
    """The theme last chosen with /theme (None: the default theme)."""


def config_dir() -> Path:
    explicit = os.environ.get("MOOT_CONFIG_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg else Path.home() / ".config"
    return base / "moot"


class SettingsStore:
    """Reads and writes `UserSettings`; never raises on a missing or broken file."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or config_dir() / SETTINGS_FILE

    def load(self) -> UserSettings:
        try:
            return UserSettings.model_validate_json(self.path.read_bytes())
        except FileNotFoundError:
            return UserSettings()
        except (OSError, ValidationError, ValueError) as exc:
            log.warning("ignoring unreadable settings %s: %s", self.path, exc)
            return UserSettings()

    def save(self, settings: UserSettings) -> bool:
        """Write the settings atomically; False (and a log line) when the disk says no."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            data = json.dumps(settings.model_dump(exclude_none=True), indent=2) + "\n"
            write_atomic(self.path, data.encode("utf-8"))
        except OSError as exc:
            log.warning("cannot save settings to %s: %s", self.path, exc)
            return False
        return True

    def update(self, **changes: object) -> bool:
        settings = self.load().model_copy(update=changes)
        return self.save(settings)

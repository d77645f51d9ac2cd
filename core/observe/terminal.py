"""Whether a run gets the TUI: kept apart from the headless runner so that `moot run` can decide
it (and start the app) before it imports the engine."""

from __future__ import annotations

import os
import sys


def wants_tui(headless: bool) -> bool:
    """The TUI when asked for and a terminal is there (not in CI), or when textual-serve runs
    this process for a browser (`moot serve`: its pipes stand for the terminal)."""
    if os.environ.get("TEXTUAL_DRIVER", "").endswith(":WebDriver"):
        return not headless
    return not headless and sys.stdout.isatty() and sys.stdin.isatty() and os.environ.get("CI") is None

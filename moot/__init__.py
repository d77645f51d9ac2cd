"""moot: multi-agent LLM debates with managed per-agent context, watched live in the terminal.

The installed package maps the repository's top-level folders: `moot.core` (the
engine, `core/`), `moot.tui` (the Textual app, `tui/`) and `moot.themes` (`themes/`).
This package itself holds only the command line: the entry point (`moot.cli`) and its
subcommands (`moot.commands`), the composition root that sits above both: `moot.core`
never imports `moot.tui`.
"""

from __future__ import annotations

from moot.core.version import VERSION as __version__

__all__ = ["__version__"]

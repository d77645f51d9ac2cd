"""Where a debate screen's events come from, and where its commands go: one module per runtime.

- `base.Runtime`: the contract (events in, commands out), read-only by default.
- `live.LiveRuntime`: a `DebateSession` run in this process (`moot run`, `moot resume`).
- `watch.WatchRuntime`: tails the events.jsonl of a debate (`moot watch`); while another
  process runs it, commands go to that process through `moot.core.control.commands` (attach).
- `replay.ReplayRuntime`: plays a recorded debate with its original timing (`moot replay`);
  pause/resume control the playback, the rest is read-only.

(Tests and benchmarks push events through `tests/tui/scripted.py`.) Inside moot, importers name
the module; the names below are re-exported for the tests and benchmarks, which import
`moot.tui.runtime` as they did when it was one module.
"""

from .base import BACKLOG, READ_ONLY, ReadOnlyError, Runtime, Snapshot
from .live import LiveRuntime
from .replay import ReplayRuntime, replay_timeline, synthesize_tokens
from .watch import WatchRuntime

__all__ = [
    "BACKLOG", "READ_ONLY", "LiveRuntime", "ReadOnlyError", "ReplayRuntime", "Runtime", "Snapshot",
    "WatchRuntime", "replay_timeline", "synthesize_tokens",
]

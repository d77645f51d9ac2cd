"""What a run's first request needs that the steps before it do not: started in a thread as
soon as the config says what it is, so that it goes on while the command imports the engine,
builds the session, makes the debate's folder and writes its first event.

The `openai` SDK's import is most of a run's start-up (it loads the types of every OpenAI API,
`bench/startup.py`), then the token tables. Python runs one thread at a time, so the thread
gains where the main one waits (reading files, syncing the folder and the first event to disk,
the server's answers), not on the CPU both need; nothing is done twice (an import or an
encoding another thread is making is waited for, not made again).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable


def warm_up(encodings: Iterable[str], sdk: bool) -> threading.Thread:
    """Load `encodings` (tiktoken names) and, with `sdk`, import the openai SDK, in a daemon thread."""
    names = list(dict.fromkeys(encodings))

    def work() -> None:
        try:
            from moot.core import tokens

            for name in names:
                tokens.get_encoding(name)
            if sdk:
                import openai  # noqa: F401
        except Exception:  # noqa: BLE001 - whoever needs it meets the same error there, and says it
            pass

    thread = threading.Thread(target=work, name="moot-warm-up", daemon=True)
    thread.start()
    return thread

"""What a person has typed for a turn and not yet seen recorded, kept in the debate's folder.

`<debate>/drafts/<agent>@<slot>.md`, one file per turn (the slot names the turn: round, phase and
target, see `slot_of`), written atomically (temp, fsync, rename) in a folder private to the user.
The TUI saves the editor's text as it is typed, the headless seat each line read, and every
submission saves the whole answer before it is handed to the debate: a debate killed while a
person types, or between their submission and its record in the log, asks that turn again on
resume with the text already there. Drafts of turns whose contribution is recorded are removed
once the log holds it (`prune`: at the end of a run and at the start of a resume).

Every draft write goes through `Drafts.save`, which masks API keys first (`mask_typed`): a person
may paste a key into an answer, and keys never reach disk, whichever path saved the text (the
TUI's editor, an attached `moot watch`, the headless seat's lines, the whole answer on submit).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ..errors import StoreError
from ..models.state import Contribution
from ..safety.secrets import known_secrets, redact
from ..storage.files import open_regular, require_real_folder, write_atomic

DRAFTS_DIR = "drafts"
MAX_DRAFT_BYTES = 1024 * 1024
"""A draft larger than this is not read back (a turn holds about 1,000 tokens)."""

PHASE_OF: dict[str, str] = {"proposal": "proposal", "critique": "critique", "refinement": "refinement",
                            "answer": "answer", "message": "turn"}
"""A contribution's type → the phase of the call that wrote it."""


def mask_typed(text: str, secrets: Sequence[str] = ()) -> str:
    """What a person typed with every key masked: `secrets` (the keys the debate's providers
    use), the keys configured in the environment and `.env`, and anything shaped like a key."""
    return redact(text, [*secrets, *known_secrets()])


def slot_of(phase: str, round_no: int, target: str | None = None) -> str:
    """The name of one turn of an agent: `r2-critique-kiss`, `r17-turn`."""
    return f"r{round_no}-{phase}" + (f"-{target}" if target else "")


def slot_of_contribution(c: Contribution) -> str:
    return slot_of(PHASE_OF.get(c.type, c.type), c.round, c.target_agent_id)


class Drafts:
    """The drafts of one debate; `folder` gives its path when asked (a new debate's folder is
    renamed once its first event is on disk), `secrets` the keys in use (masked in every draft,
    with those `mask_typed` always masks)."""

    def __init__(self, folder: Callable[[], Path], secrets: Callable[[], Sequence[str]] = tuple) -> None:
        self._folder = folder
        self._secrets = secrets

    @property
    def path(self) -> Path:
        return self._folder() / DRAFTS_DIR

    def _file(self, agent_id: str, slot: str) -> Path:
        # Agent ids and slots hold only letters, digits, `.`, `_` and `-` (the config's pattern):
        # no separator, so the name stays inside the drafts folder.
        return self.path / f"{agent_id}@{slot}.md"

    def load(self, agent_id: str, slot: str) -> str:
        """The saved draft of that turn ("" when there is none or it cannot be read)."""
        path = self._file(agent_id, slot)
        try:
            require_real_folder(self.path)
            fd = open_regular(path)
        except (OSError, StoreError):
            return ""
        try:
            with os.fdopen(fd, "rb") as fh:
                data = fh.read(MAX_DRAFT_BYTES + 1)
        except OSError:
            return ""
        if len(data) > MAX_DRAFT_BYTES:
            return ""
        return data.decode("utf-8", errors="replace")

    def save(self, agent_id: str, slot: str, text: str) -> None:
        """Replace the draft of that turn (an empty text removes it). StoreError when it cannot
        be written (the caller says so; the text is still in the editor). Keys are masked first."""
        text = mask_typed(text, self._secrets())
        folder = self.path
        try:
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:
                pass
            require_real_folder(folder)
            path = self._file(agent_id, slot)
            if not text:
                _remove(path)
                return
            write_atomic(path, text.encode("utf-8"))
        except OSError as exc:
            raise StoreError(f"cannot save the draft in {folder}: {exc.strerror or exc}") from None

    def prune(self, recorded: Iterable[Contribution], people: set[str]) -> None:
        """Remove the drafts of the people's turns whose contributions are recorded."""
        done = {f"{c.agent_id}@{slot_of_contribution(c)}.md" for c in recorded if c.agent_id in people}
        folder = self.path
        try:
            require_real_folder(folder)
            names = os.listdir(folder)
        except (OSError, StoreError):
            return
        for name in names:
            if name in done:
                _remove(folder / name)


def _remove(path: Path) -> None:
    """Remove a regular file or a link (never what a link points to)."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            return
        path.unlink()
    except OSError:
        pass

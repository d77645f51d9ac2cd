"""Removing saved debates (`moot rm`, `moot prune`), and which of them one bench ran.

A bench names each debate `b-<data set>-<config>-<protocol>-<question>` (`core/bench/runner.py`),
so the debates of one data set share the prefix `b-<data set>`: listed as one entry, removed
together by that name.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from ..errors import InputError, StoreError
from .folder import DebateFolder

_BENCH_ID = re.compile(r"(b-[0-9a-f]{8})-[0-9a-f]{8}-[a-z]+-[A-Za-z0-9_.-]+")
_AGE = re.compile(r"(\d{1,6})\s*([smhdw])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def bench_group(debate_id: str) -> str | None:
    """The bench a debate belongs to (`b-<data set>`), or None for a debate run on its own."""
    m = _BENCH_ID.fullmatch(debate_id)
    return m.group(1) if m else None


def parse_age(text: str) -> float:
    """`30d`, `12h`, `2w`, `90m`, `45s` in seconds; anything else is one line (exit 2)."""
    m = _AGE.fullmatch(text.strip().lower())
    if m is None or int(m.group(1)) == 0:
        raise InputError(f"bad age {text[:40]!r}: write a number and a unit, e.g. 30d, 12h, 2w (s m h d w)")
    return int(m.group(1)) * _UNIT_S[m.group(2)]


def folder_bytes(path: Path) -> int:
    """What a debate folder takes on disk (its files; links are not followed)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def remove(folder: DebateFolder) -> None:
    """Delete a debate's folder for good. Its lock is held while it goes, so a process that runs
    the debate (or starts to resume it) makes this refuse, and none can start half way; a linked
    folder is refused before anything is removed through it."""
    lock = folder.lock()
    lock.acquire()  # StoreError: being written, or a linked folder
    try:
        shutil.rmtree(folder.path)
    except OSError as exc:
        raise StoreError(f"cannot remove debate {folder.id}: {exc.strerror or exc}") from None
    finally:
        lock.release()

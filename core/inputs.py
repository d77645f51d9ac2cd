"""Reading text a person points moot at: problem files, prompt files, config files.

Checked before anything is created: only a regular file, at most a size cap, UTF-8
text without NUL bytes. A directory, a device, a FIFO (opened without blocking, so a
read can never hang and hold off Ctrl-C) or a binary file is one clear line.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from .errors import InputError, MootError

MAX_PROBLEM_BYTES = 1 << 20
MAX_PROMPT_BYTES = 256 << 10
MAX_CONFIG_BYTES = 1 << 20


def read_text_file(path: str | Path, what: str, *, max_bytes: int,
                   error: type[MootError] = InputError) -> str:
    """The text of `path`, or `error` with one line saying why it cannot be used."""
    path = Path(path).expanduser()
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise error(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise error(f"{what} {path} is a directory, not a file") from None
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise error(f"{what} {path} is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{what} {path} is not a regular file (a device, FIFO or socket)")
        if info.st_size > max_bytes:
            raise error(f"{what} {path} is too large ({info.st_size} bytes; the limit is {max_bytes})")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 16, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise error(f"{what} {path} is too large (more than {max_bytes} bytes)")
    if b"\x00" in data:
        raise error(f"{what} {path} looks binary; give a text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{what} {path} is not UTF-8 text") from None


def has_visible_text(text: str) -> bool:
    """Does `text` show anything once control characters, escape sequences and invisible format
    characters (zero-width, bidi controls) are gone? Blanks alone do not count."""
    from .safety.sanitize import terminal_safe

    return any(ch.isprintable() and not ch.isspace() for ch in terminal_safe(text))


def problem_text(text: str | None, path: str | None) -> str:
    """The problem from the command line (text or -p FILE), checked; InputError when unusable."""
    if text and path:
        raise InputError("give the problem as text or with -p FILE, not both")
    if path:
        content = read_text_file(path, "problem file", max_bytes=MAX_PROBLEM_BYTES)
        if not content.strip():
            raise InputError(f"problem file {path} is empty")
        if not has_visible_text(content):
            raise InputError(f"problem file {path} holds no visible text (only control or invisible characters)")
        return content.strip()
    if text is None:
        raise InputError("no problem given: `moot run \"Design a URL shortener\"` or `moot run -p problem.md`")
    if not text.strip():
        raise InputError("the problem is empty")
    if not has_visible_text(text):
        raise InputError("the problem holds no visible text (only control or invisible characters)")
    try:  # bytes that are not UTF-8 arrive as lone surrogates, which no log line can hold
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError("the problem is not valid UTF-8 text") from None
    return text.strip()


def fit_problem(problem: str, budget: int, model: str | None, allow_truncate: bool) -> str:
    """A problem that eats most of the smallest budget leaves no room for the debate:
    refuse it (InputError naming the limit), or cut it when the user allows."""
    from . import tokens

    limit = budget // 2
    n = tokens.count_text(problem, model)
    if n <= limit:
        return problem
    if not allow_truncate:
        raise InputError(
            f"the problem is {n} tokens; the limit is {limit} (half the smallest agent budget of {budget}); "
            "shorten it, raise context.max_context_tokens, or pass --allow-truncate"
        )
    return (tokens.truncate_to_tokens(problem, limit, model)
            + f"\n{TRUNCATED} the first {limit} of its {n} tokens, {len(problem)} characters]")


TRUNCATED = "[problem truncated to fit the context budget:"
"""How a cut problem ends: the marker the agents read, and what `truncation_note` finds again."""
_TRUNCATED = re.compile(r"\[problem truncated to fit the context budget"
                        r"(?:: the first (\d+) of its (\d+) tokens, (\d+) characters)?\]\s*\Z")


def truncation_note(problem: str) -> str | None:
    """A line saying how much of the problem was cut (`--allow-truncate`), or None when it was not."""
    found = _TRUNCATED.search(problem)
    if found is None:
        return None
    if found.group(1) is None:  # debates saved before the marker said how much
        return "the problem was truncated to fit the context budget"
    kept, total, chars = (int(g) for g in found.groups())
    return (f"the problem was truncated to fit the context budget: the debate sees the first {kept:,} of its "
            f"{total:,} tokens ({len(problem[:found.start()].rstrip()):,} of {chars:,} characters)")

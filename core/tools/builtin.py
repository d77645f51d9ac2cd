"""The read-only tools over the reference set: `list_files`, `read_file`, `search`.

Paths are virtual (see `references`): relative, `/`-separated, inside the set. An absolute
path, a `..`, a path the set does not hold (an ignored, secret, binary or linked-out file;
anything created after the start) is a tool error naming why. Every answer is capped: lines
per read, entries per listing, matches per search, and tokens per result.
"""

from __future__ import annotations

import asyncio
import re
import threading
from dataclasses import dataclass
from typing import Annotated, Any

from .. import tokens
from ..safety.found_secrets import ScanHalted
from .extracts import list_facts, read_facts, search_facts
from .references import ReferenceSet, RefFile, RefUnreadable
from .registry import Tool, Toolbox, ToolError, ToolOutput, int_arg, string_arg
from .signature import Bounds

READ_LINES = 200
LIST_ENTRIES = 200
SEARCH_MATCHES = 20
RESULT_TOKENS = 2000
EXCERPT_CHARS = 160
TIMEOUT_S = 30.0
HALT_EVERY_LINES = 2048
"""How often a search looks whether it was told to stop (a deadline, a pause, a stop, a signal)."""
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Limits:
    """The caps of one tool answer (`[tools]` in the config)."""

    read_lines: int = READ_LINES
    list_entries: int = LIST_ENTRIES
    search_matches: int = SEARCH_MATCHES
    result_tokens: int = RESULT_TOKENS
    timeout_s: float = TIMEOUT_S
    """Deadline of one call: past it the call is stopped and answered with a tool error."""


# The built-in tools as a model sees them: each declared by its name, docstring and signature
# (`Tool.declare`; the declaration's own name is taken by the function below that runs it, over
# one reference set).

def _list_files(path: str = ".", pattern: str | None = None) -> None:
    """List the reference files (the documents and code the user gave this debate) under a folder, with sizes.

    Args:
        path: folder relative to the references; "." for all
        pattern: optional glob such as "*.md"
    """


def _read_file(path: str, start_line: Annotated[int, Bounds(1)] = 1,
               end_line: Annotated[int | None, Bounds(1)] = None) -> None:
    """Read a reference file, with line numbers. Long files come in parts: ask again with start_line.

    Args:
        path: file path as list_files shows it
        start_line: first line (1-based)
        end_line: last line (inclusive)
    """


def _search(query: str, path: str = ".") -> None:
    """Search the reference files for words or a phrase; answers file:line and a short excerpt per match.

    Args:
        query: words or a phrase
        path: folder or file to search in; "." for all
    """


LIST_FILES = Tool.declare(_list_files, list_facts, name="list_files")
READ_FILE = Tool.declare(_read_file, read_facts, name="read_file")
SEARCH = Tool.declare(_search, search_facts, name="search")
BUILTIN = (LIST_FILES, READ_FILE, SEARCH)


def normalize(path: str, refs: ReferenceSet) -> str:
    """A model's path as a virtual path ("" is the top); `ToolError` for one that leaves the set."""
    p = path.strip().replace("\\", "/")
    if "\x00" in p:
        raise ToolError("the path holds a NUL character")
    if p.startswith(("/", "~")) or re.match(r"^[A-Za-z]:/", p):
        raise ToolError(f"{p[:200]!r} is an absolute path; paths are relative to the references (try \".\")")
    parts = [s for s in p.split("/") if s not in ("", ".")]
    if ".." in parts:
        raise ToolError(f"{p[:200]!r} leaves the references ('..' is not allowed)")
    virtual = "/".join(parts)
    if len(refs.roots) == 1 and parts and virtual not in refs.files and virtual not in refs.folders():
        name = refs.roots[0].name
        if parts[0] == name and refs.roots[0].is_dir():  # the model named the root folder itself
            virtual = "/".join(parts[1:])
    return virtual


def _missing(virtual: str, refs: ReferenceSet) -> ToolError:
    why = refs.skipped.get(virtual)
    if why is not None and "secret" not in why:  # a secret-looking file is not even named
        return ToolError(f"{virtual!r} is not readable: {why}")
    return ToolError(f"no file or folder {virtual[:200]!r} in the references; call list_files to see them")


def _cap(text: str, limit: int, model: str | None = None) -> tuple[str, bool]:
    cut = tokens.truncate_to_tokens(text, limit, model)
    return (cut, False) if cut == text else (cut.rstrip() + "\n[… cut at the tool-result cap]", True)


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MB"


def list_files(refs: ReferenceSet, limits: Limits, args: dict[str, Any]) -> ToolOutput:
    virtual = normalize(string_arg(args, "path", ".") or ".", refs)
    pattern = string_arg(args, "pattern")
    if virtual in refs.files:
        found = [refs.files[virtual]]
    elif virtual in refs.folders():
        found = refs.under(virtual, pattern)
    else:
        raise _missing(virtual, refs)
    shown = found[: limits.list_entries]
    where = virtual or "."
    lines = [f"{len(found)} file{'s' if len(found) != 1 else ''} under {where}"
             + (f" matching {pattern!r}" if pattern else "") + ":"]
    lines += [f"{f.path}  ({_size(f.size)})" for f in shown]
    if len(found) > len(shown):
        lines.append(f"[… {len(found) - len(shown)} more; narrow with path or pattern]")
    text, _ = _cap("\n".join(lines), limits.result_tokens)
    return ToolOutput(text, True, lines[0].rstrip(":"))


def _file(refs: ReferenceSet, virtual: str) -> RefFile:
    ref = refs.files.get(virtual)
    if ref is None:
        if virtual in refs.folders():
            raise ToolError(f"{virtual or '.'!r} is a folder; call list_files on it, or read_file on a file in it")
        raise _missing(virtual, refs)
    return ref


def _text(refs: ReferenceSet, ref: RefFile, halt: threading.Event | None = None) -> str:
    try:
        return refs.text(ref, halt.is_set if halt is not None else None)
    except RefUnreadable as exc:
        raise ToolError(f"{ref.path!r} cannot be read: {exc}") from None
    except ScanHalted:
        raise Halted from None


def read_file(refs: ReferenceSet, limits: Limits, args: dict[str, Any],
              halt: threading.Event | None = None) -> ToolOutput:
    virtual = normalize(string_arg(args, "path", required=True) or "", refs)
    ref = _file(refs, virtual)
    start = int_arg(args, "start_line", 1) or 1
    end = int_arg(args, "end_line")
    lines = _text(refs, ref, halt).splitlines()
    total = len(lines)
    if total == 0:
        return ToolOutput(f"{ref.path} is empty", True, f"{ref.path}: empty")
    if start > total:
        raise ToolError(f"{ref.path} has {total} lines; start_line {start} is past its end")
    last = min(total, end if end is not None and end >= start else start + limits.read_lines - 1,
               start + limits.read_lines - 1)
    width = len(str(last))
    numbered = [f"{n:>{width}}| {lines[n - 1]}" for n in range(start, last + 1)]
    room = limits.result_tokens - 60  # the header and the note on what is left
    body, cut = _cap("\n".join(numbered), room)
    if cut:  # whole lines only: the next read starts where this one stopped
        kept = body.split("\n")[:-2] or [tokens.truncate_to_tokens(numbered[0], room)]
        last = start + len(kept) - 1
        body = "\n".join(kept)
    text = f"{ref.path} (lines {start}–{last} of {total})\n{body}"
    if last < total:
        text += f"\n[{total - last} more lines: read_file with start_line={last + 1}]"
    return ToolOutput(text, True, f"lines {start}–{last} of {ref.path}")


def _excerpt(line: str, at: int) -> str:
    line = line.strip()
    if len(line) <= EXCERPT_CHARS:
        return line
    lo = max(0, min(at - EXCERPT_CHARS // 3, len(line) - EXCERPT_CHARS))
    return ("…" if lo else "") + line[lo: lo + EXCERPT_CHARS] + ("…" if lo + EXCERPT_CHARS < len(line) else "")


class Halted(Exception):
    """The call was told to stop (see `reference_tools`); nobody reads what it would have answered."""


def _check(halt: threading.Event | None) -> None:
    if halt is not None and halt.is_set():
        raise Halted


def search(refs: ReferenceSet, limits: Limits, args: dict[str, Any], halt: threading.Event | None = None) -> ToolOutput:
    query = (string_arg(args, "query", required=True) or "").strip()
    if not query:
        raise ToolError("the query is empty")
    query = query[:200]
    virtual = normalize(string_arg(args, "path", ".") or ".", refs)
    if virtual in refs.files:
        files = [refs.files[virtual]]
    elif virtual in refs.folders():
        files = refs.under(virtual)
    else:
        raise _missing(virtual, refs)
    phrase = query.lower()
    words = [w for w in dict.fromkeys(_WORD.findall(phrase)) if len(w) > 1] or [phrase]
    exact: list[tuple[str, int, str]] = []
    partial: list[tuple[int, str, int, str]] = []
    for ref in files:
        _check(halt)
        try:
            text = _text(refs, ref, halt)
        except ToolError:  # unreadable now: searched as if absent
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if n % HALT_EVERY_LINES == 0:
                _check(halt)
            low = line.lower()
            at = low.find(phrase)
            if at >= 0:
                exact.append((ref.path, n, _excerpt(line, at)))
                continue
            hits = [w for w in words if w in low]
            if hits and len(words) > 1:
                partial.append((-len(hits), ref.path, n, _excerpt(line, low.find(hits[0]))))
    found = exact + [(p, n, e) for _, p, n, e in sorted(partial)]
    shown = found[: limits.search_matches]
    nfiles = len({p for p, _, _ in found})
    kind = "" if exact or not found else " (no exact match; lines with some of the words)"
    lines = [f"{len(found)} match{'es' if len(found) != 1 else ''} in {nfiles} file{'s' if nfiles != 1 else ''} "
             f"for {query!r}{kind}:"]
    lines += [f"{p}:{n}: {e}" for p, n, e in shown]
    if len(found) > len(shown):
        lines.append(f"[… {len(found) - len(shown)} more; narrow the query or the path]")
    text, _ = _cap("\n".join(lines), limits.result_tokens)
    return ToolOutput(text, True, lines[0].split(" for ", 1)[0])


_BUILTIN_FNS = {"list_files": list_files, "read_file": read_file, "search": search}


def reference_tools(refs: ReferenceSet, limits: Limits = Limits()) -> Toolbox:
    """The three built-in tools over `refs`, each call in a worker thread (a big read never holds
    the loop) under the deadline `limits.timeout_s`. A thread cannot be killed, so a call is told
    to stop instead: when the deadline passes or the call is cancelled (a pause or stop that
    interrupts it, a signal ending the debate) its `halt` is set, and a search looks at it every
    file and every few thousand lines. Nothing is left running that would hold the exit."""
    box = Toolbox()
    for tool in BUILTIN:
        fn = _BUILTIN_FNS[tool.name]

        async def run(name: str, args: dict[str, Any], fn: Any = fn) -> ToolOutput:
            halt = threading.Event()
            work = (lambda: fn(refs, limits, args)) if fn is list_files else (lambda: fn(refs, limits, args, halt))
            try:
                out: ToolOutput = await asyncio.wait_for(asyncio.to_thread(work), limits.timeout_s)
            except TimeoutError:
                raise ToolError(f"{name} did not finish within {limits.timeout_s:g}s (tools.timeout_s); narrow the "
                                "query or the path") from None
            except Halted:  # told to stop by someone who no longer waits for it
                raise ToolError(f"{name} was stopped") from None
            finally:
                halt.set()
            return out

        box.add(tool.bound(run))
    return box


def root_label(refs: ReferenceSet) -> str:
    """How the references are named in prompts (`docs/, design.md`)."""
    return ", ".join(p.name + ("/" if p.is_dir() else "") for p in refs.roots) or "(none)"


__all__ = ["BUILTIN", "Limits", "normalize", "reference_tools", "root_label"]

"""The final solution out of the app: `/save [FILE]` (markdown, atomic) and `/copy` (OSC 52)."""

from __future__ import annotations

from pathlib import Path

from ...core.observe.printer import solution_document
from ...core.storage.files import write_atomic
from .base import CommandContext, CommandError


def solution_text(ctx: CommandContext) -> str:
    if ctx.state.final_solution is None:
        raise CommandError("no final solution yet: the judge writes it after the last round")
    return solution_document(ctx.state)


def save(ctx: CommandContext, name: str | None = None) -> None:
    """`/save [FILE]`: default `solution-ID.md` here; a folder gets that name inside it."""
    text = solution_text(ctx)
    default = f"solution-{ctx.state.id}.md"
    path = Path(name).expanduser() if name else Path(default)
    if path.is_dir():
        path = path / default
    created = _missing_parents(path)
    try:
        # Folders the path names that are not there yet are made (as `mkdir -p` would); one that
        # is a file, or a place this user may not write, is the one-line error below.
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text.encode("utf-8"))
    except FileExistsError:
        raise CommandError(f"cannot write {path}: a file is in the way of its folder") from None
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
    made = f", made {created}/" if created is not None else ""
    ctx.feedback(f"final solution saved to {path.resolve()} ({len(text):,} chars{made})")


def _missing_parents(path: Path) -> Path | None:
    """The outermost folder of `path` that does not exist yet, or None when its folder is there."""
    missing = None
    for parent in path.parents:
        if parent.exists() or parent.is_symlink():
            break
        missing = parent
    return missing


def copy(ctx: CommandContext) -> None:
    """`/copy`: to the clipboard through the terminal (OSC 52)."""
    text = solution_text(ctx)
    ctx.app.copy_to_clipboard(text)
    ctx.feedback(f"final solution copied ({len(text):,} chars) — if nothing was copied, your terminal "
                 "ignores OSC 52: /save writes a file")

"""The reference set: the files a debate's agents may read, chosen once when the debate starts.

`--ref PATH` names files and folders. A folder is walked respecting every `.gitignore` in it
(`pathspec`, git's own matching rules, matched in linear time: `ignore`); binary files, files over the size cap and
secret-looking files (`.env*`, `*.pem`, `*.key`, `id_rsa`, …) and files holding a private key
whatever their names are left out, as are
symbolic links that point outside their root or to a file the walk leaves out (in `.git`,
ignored, secret), link loops, FIFOs, sockets and devices. What
is left is the set: each file under a *virtual path* (relative to its root; with several
roots, under the root's name), with its size and content hash, recorded in the debate so
a resume can say which files changed.

A file's text is masked before anything reads it: the secrets `safety/found_secrets` finds in
it become `***`.

The tools read only files in the set (nothing else exists for them), and `open_checked`
opens each again from its root one folder at a time, following no link, and refuses anything
that is no longer a regular file inside its root: a file or folder swapped for a link after
the scan is not read.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ..errors import InputError
from ..safety.found_secrets import holds_private_key, mask_found
from ..safety.sanitize import one_line_safe, terminal_safe

if TYPE_CHECKING:
    import pathspec

MAX_FILE_BYTES = 1 << 20
"""Files larger than this are listed as skipped, never read (`tools.max_file_bytes`)."""
MAX_FILES = 5000
"""A reference set holds at most this many files (the rest are counted as skipped)."""
SNIFF_BYTES = 8192
PROGRESS_AFTER_S = 2.0
PROGRESS_EVERY_S = 5.0
_now = time.monotonic
ALWAYS_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache"})
SECRET_NAMES = (
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx",
    "*.gpg", "*.asc", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".netrc", ".npmrc", ".pypirc",
    ".git-credentials", "credentials", "credentials.*", "*.secret", "secrets.*", ".htpasswd",
    ".pgpass", "*.tfstate", "*.tfstate.*", "*.pem.*", "*.key.*", "kubeconfig", "*.kubeconfig",
)
"""Names that often hold keys (git's patterns): never listed, never readable."""
SECRET_DIRS = frozenset({".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure", ".password-store"})
"""Folders whose files hold credentials whatever their names (`.aws/config`, `.kube/config`,
`.docker/config.json`, `.ssh/config`): never walked, never readable through a link."""


@lru_cache(maxsize=1)
def _secret_names() -> pathspec.GitIgnoreSpec:
    """`SECRET_NAMES` matched as git matches them; pathspec loads with the first reference
    looked at, not with every run (a run without references never needs it)."""
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(SECRET_NAMES)


def is_secret_name(name: str) -> bool:
    """True for a file name that looks like it holds credentials (`id_*` without an extension too),
    in any case: `SERVER.PEM` and `.ENV` hold keys as `server.pem` and `.env` do."""
    name = name.lower()
    if _secret_names().match_file(name):
        return True
    return name.startswith("id_") and ("." not in name or name.endswith(".pub"))


@dataclass(frozen=True)
class RefFile:
    """One readable file of the set."""

    path: str
    """Its virtual path: what the tools call it (`docs/plan.md`)."""
    real: Path
    root: Path
    size: int
    sha256: str


@dataclass
class ReferenceSet:
    """The files agents may read, by virtual path, and what was left out and why."""

    roots: list[Path] = field(default_factory=list)
    files: dict[str, RefFile] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    """Virtual path → why it is not readable (secret, binary, too large, link outside, …)."""
    max_file_bytes: int = MAX_FILE_BYTES
    _text: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files.values())

    def folders(self) -> set[str]:
        """Every virtual folder that holds a file of the set ("" is the top)."""
        out = {""}
        for p in self.files:
            parts = PurePosixPath(p).parts[:-1]
            for i in range(1, len(parts) + 1):
                out.add("/".join(parts[:i]))
        return out

    def under(self, folder: str, pattern: str | None = None) -> list[RefFile]:
        """Files below a virtual folder, sorted; `pattern` (a glob) filters their paths."""
        prefix = f"{folder}/" if folder else ""
        found = [f for p, f in sorted(self.files.items()) if p.startswith(prefix)]
        if pattern:
            found = [f for f in found if fnmatch.fnmatch(f.path, pattern)
                     or fnmatch.fnmatch(PurePosixPath(f.path).name, pattern)]
        return found

    def text(self, ref: RefFile, halted: Callable[[], bool] | None = None) -> str:
        """The file's text (undecodable bytes replaced, secrets found in it masked), read through
        `open_checked`; `halted` may stop the masking of a large file (`ScanHalted`)."""
        cached = self._text.get(ref.path)
        if cached is None:
            data = open_checked(ref, self.max_file_bytes)
            cached = data.decode("utf-8", errors="replace")
            if holds_private_key(cached):
                raise RefUnreadable("it now holds a private key")
            cached = mask_found(cached, ref.path, halted)  # before any tool, index or log sees it
            if sum(len(t) for t in self._text.values()) < 64 << 20:  # keep reads cheap, memory bounded
                self._text[ref.path] = cached
        return cached

    def record(self) -> list[dict[str, object]]:
        """What the debate records: each file's virtual path, size and content hash."""
        return [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in self.files.values()]


class RefUnreadable(Exception):
    """A file of the set that can no longer be read as it was (the tool answers with the reason)."""


def open_checked(ref: RefFile, max_bytes: int) -> bytes:
    """The bytes of `ref`, opened without following a link and without blocking, and only while it
    is still a regular file, not too large, whose real location is inside its root."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        real = ref.real.parent.resolve(strict=True) / ref.real.name
    except (OSError, RuntimeError):
        raise RefUnreadable("its folder is gone or is a link loop") from None
    if not real.is_relative_to(ref.root):
        raise RefUnreadable("it now lies outside the references (a link was swapped in)")
    try:
        fd = _open_beneath(ref.root, real, flags)
    except OSError as exc:
        swapped = exc.errno in (errno.ELOOP, errno.ENOTDIR)
        raise RefUnreadable("it or a folder on its way is now a symbolic link" if swapped
                            else f"it cannot be opened ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RefUnreadable("it is not a regular file (a FIFO, socket or device)")
        if info.st_size > max_bytes:
            raise RefUnreadable(f"it is now larger than the {max_bytes:,}-byte cap")
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise RefUnreadable(f"it is now larger than the {max_bytes:,}-byte cap")
        return data
    finally:
        os.close(fd)


def _open_beneath(root: Path, real: Path, flags: int) -> int:
    """`real` opened one folder at a time from `root`, following no link on the way: a folder
    swapped for a link between the check above and this open is refused, not followed out."""
    if os.open not in os.supports_dir_fd:  # no openat (Windows): the check above is what there is
        return os.open(real, flags)
    folder_flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    *folders, name = real.relative_to(root).parts
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for part in folders:
            inner = os.open(part, folder_flags, dir_fd=fd)
            os.close(fd)
            fd = inner
        return os.open(name, flags, dir_fd=fd)
    finally:
        os.close(fd)


def _hash_regular(path: Path, max_bytes: int) -> tuple[int, str, bytes] | str:
    """(size, sha256, content) of a regular file, or why it is left out."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return f"cannot be opened ({exc.strerror or exc})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_size > max_bytes:
            return f"larger than {max_bytes:,} bytes"
        digest = hashlib.sha256()
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            digest.update(chunk)
        return info.st_size, digest.hexdigest(), b"".join(chunks)
    finally:
        os.close(fd)


def _binary(head: bytes) -> bool:
    return b"\x00" in head


class _Progress:
    """A line now and then while a scan is long (a huge tree, a slow disk): the start never sits
    silent. Nothing is said for a scan shorter than `PROGRESS_AFTER_S`."""

    def __init__(self, say: Callable[[str], None] | None) -> None:
        self.say, self.seen, self.start = say, 0, _now()
        self.next = self.start + PROGRESS_AFTER_S

    def tick(self, where: str) -> None:
        self.seen += 1
        if self.say is not None and (now := _now()) >= self.next:
            self.next = now + PROGRESS_EVERY_S
            self.say(f"scanning the references: {self.seen:,} entries looked at in {now - self.start:.0f}s, "
                     f"now in {one_line_safe(terminal_safe(where), 80) or '.'}")


def _walk(root: Path, progress: _Progress) -> Iterator[tuple[str, Path, str | None]]:
    """(path relative to `root`, real path, None or why it is skipped) for every file below."""
    from .ignore import Ignores

    ignores = Ignores()
    for folder, dirs, names in os.walk(root, followlinks=False):
        here = Path(folder)
        rel_dir = here.relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        ignores.load(here, rel_dir)
        keep: list[str] = []
        for d in sorted(dirs):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            progress.tick(rel)
            if d in ALWAYS_SKIPPED_DIRS or d.lower() in SECRET_DIRS or ignores.ignored(rel, True):
                continue
            if (here / d).is_symlink():
                yield rel, here / d, "a symbolic link to a folder (not followed)"
                continue
            keep.append(d)
        dirs[:] = keep
        for name in sorted(names):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            progress.tick(rel)
            if ignores.ignored(rel, False):
                continue
            yield rel, here / name, None


def _classify(rel: str, path: Path, root: Path, max_bytes: int) -> RefFile | str:
    """A file of the set, or why it is not one."""
    if is_secret_name(PurePosixPath(rel).name):
        return "secret-looking name"
    if terminal_safe(rel) != rel:  # shown cleaned, it would name a file no tool can open
        return "a name with control or invisible characters"
    real = path
    if path.is_symlink():
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return "a broken symbolic link or a link loop"
        if not real.is_relative_to(root):
            return "a symbolic link pointing outside the references"
        if is_secret_name(real.name) or any(p.lower() in SECRET_DIRS for p in real.relative_to(root).parts[:-1]):
            return "a link to a secret-looking file"
    found = _hash_regular(real, max_bytes)
    if isinstance(found, str):
        return found
    size, digest, data = found
    if _binary(data[:SNIFF_BYTES]):
        return "binary"
    if holds_private_key(data.decode("utf-8", errors="replace")):  # whatever its name: a hard link to ~/.ssh/id_*
        return "a secret: it holds a private key"
    return RefFile(path=rel, real=real, root=root, size=size, sha256=digest)


def _credential_root(real: Path) -> str | None:
    """Why a root (resolved) is refused: the walk's filter of credential folders and secret-looking
    names holds for the roots and for files named directly, not only for what lies below them
    (`--ref ~/.ssh`, `--ref .docker/config.json` and a link to either are credentials too)."""
    folder = next((part for part in real.parts[:-1] if part.lower() in SECRET_DIRS), None)
    if real.name.lower() in SECRET_DIRS:
        return f"{terminal_safe(real.name)} is a credential folder"
    if folder is not None:
        return f"it lies in the credential folder {terminal_safe(folder)}"
    if real.is_file() and is_secret_name(real.name):
        return "a secret-looking file name"
    return None


def _root_names(roots: Sequence[Path]) -> list[str]:
    names: list[str] = []
    for r in roots:
        base = r.name or "root"
        name, n = base, 2
        while name in names:
            name, n = f"{base}-{n}", n + 1
        names.append(name)
    return names


def scan(paths: Sequence[str | Path], *, max_file_bytes: int = MAX_FILE_BYTES,
         max_files: int = MAX_FILES, progress: Callable[[str], None] | None = None) -> ReferenceSet:
    """The reference set of `paths` (files and folders). A path that does not exist, or is
    neither a file nor a folder, is an `InputError` (one line, exit 2). A long scan says where
    it is through `progress` every few seconds."""
    roots: list[Path] = []
    for p in paths:
        path = Path(p).expanduser()
        try:
            real = path.resolve(strict=True)
        except FileNotFoundError:
            raise InputError(f"--ref {p}: no such file or folder") from None
        except (OSError, RuntimeError) as exc:
            raise InputError(f"--ref {p}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
        if not (real.is_dir() or real.is_file()):
            raise InputError(f"--ref {p}: not a regular file or folder")
        refused = _credential_root(real)
        if refused:
            raise InputError(f"--ref {p}: left out, {refused}; credentials are never given to agents")
        roots.append(real)
    refs = ReferenceSet(roots=list(dict.fromkeys(roots)), max_file_bytes=max_file_bytes)
    single_folder = len(refs.roots) == 1 and refs.roots[0].is_dir()
    looked = _Progress(progress)
    for root, name in zip(refs.roots, _root_names(refs.roots), strict=True):
        if root.is_file():
            entries: Iterator[tuple[str, Path, str | None]] = iter([(root.name, root, None)])
            base, prefix = root.parent, ""
        else:
            entries, base, prefix = _walk(root, looked), root, "" if single_folder else f"{name}/"
        links: list[tuple[str, Path]] = []
        regular: set[Path] = set()
        for rel, path, why in entries:
            virtual = prefix + rel if not root.is_file() else name
            if why is None and path.is_symlink():
                links.append((virtual, path))  # judged once the walk knows which files it keeps
                continue
            if why is None:
                why = _admit(refs, virtual, rel, path, base, max_files)
                if why is None:
                    regular.add(refs.files[virtual].real)
                    continue
            refs.skipped[virtual] = why
        for virtual, path in links:
            why = _admit(refs, virtual, virtual[len(prefix):], path, base, max_files)
            if why is None and refs.files[virtual].real not in regular:
                # A link inside the root to a file the walk leaves out (in .git, ignored, …) would
                # read what the rules keep from agents: only a link to a file of the set is one.
                del refs.files[virtual]
                why = "a symbolic link to a file the references leave out"
            if why is not None:
                refs.skipped[virtual] = why
    return refs


def _admit(refs: ReferenceSet, virtual: str, rel: str, path: Path, base: Path, max_files: int) -> str | None:
    """Add one walked file to the set; None, or why it is left out."""
    if len(refs.files) >= max_files:
        return f"over the {max_files}-file limit of a reference set"
    found = _classify(rel, path, base, refs.max_file_bytes)
    if isinstance(found, str):
        return found
    refs.files[virtual] = RefFile(virtual, found.real, base, found.size, found.sha256)
    return None


def changed_files(recorded: Sequence[dict[str, object]], now: ReferenceSet) -> list[str]:
    """Virtual paths whose content changed since `recorded`, or that appeared or went away."""
    before = {str(r.get("path")): str(r.get("sha256")) for r in recorded}
    after = {p: f.sha256 for p, f in now.files.items()}
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))

"""Files moot is pointed at, and files planted in a debate folder.

moot never writes through a symbolic link inside a debate folder (events.jsonl, state.json,
.lock, its temporary files): it refuses with one line, exit 2, and changes nothing. Problem
and prompt files that are FIFOs, devices, directories or binary are one line (exit 2 or 4)
with nothing left behind, and no read can hang (a real process, a short timeout).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from pathlib import Path
from unittest import mock

import pytest

from moot.core.errors import StoreError
from moot.core.storage.files import temporary_name, write_atomic
from tests.conftest import moot
from tests.test_bad_input import DEMO, TRACEBACK, _one_line, cli


@pytest.fixture(autouse=True)
def _demo_speed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOOT_DEMO_DELAY", "0")


@pytest.fixture(scope="module")
def unfinished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state dir with one debate stopped by a failure half-way (resumable)."""
    root = tmp_path_factory.mktemp("unfinished")
    r = cli("run", "Design a URL shortener", "--provider", "demo", "--headless", "-r", "2", "-a", "kiss,security",
            "--state-dir", str(root))
    assert r.returncode == 0, r.stderr
    (folder,) = list(root.iterdir())
    lines = (folder / "events.jsonl").read_bytes().split(b"\n")
    (folder / "events.jsonl").write_bytes(b"\n".join(lines[: len(lines) // 2]) + b"\n")
    (folder / "state.json").unlink()
    return root


def _tree(root: Path) -> dict[str, str]:
    """Every entry under root by lstat: a link is its target's name, a file its hash."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = ("link:" + os.readlink(p)) if p.is_symlink() else (
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir")
    return out


@pytest.mark.parametrize("name", ["events.jsonl", "state.json", ".lock"])
def test_a_link_in_a_debate_folder_is_refused_and_nothing_changes(tmp_path: Path, unfinished: Path,
                                                                  name: str) -> None:
    sd = tmp_path / "D"
    shutil.copytree(unfinished, sd)
    (folder,) = list(sd.iterdir())
    target = tmp_path / f"target-{name}"
    source = folder / name
    if source.exists():
        shutil.copy(source, target)
        source.unlink()
    else:
        target.write_text("{}")
    source.symlink_to(target)
    before, target_before = _tree(tmp_path), target.read_bytes()
    r = cli("resume", folder.name, "--headless", "--state-dir", str(sd))
    line = _one_line(r, 2, f"{source} is a symbolic link")
    assert "nothing was changed" in line
    for command in (["show", folder.name], ["report", folder.name]):
        _one_line(cli(*command, "--state-dir", str(sd)), 2, "is a symbolic link")
    listed = cli("list", "--state-dir", str(sd))
    assert listed.returncode == 0 and "unreadable" in listed.stdout
    assert _tree(tmp_path) == before and target.read_bytes() == target_before


def test_a_linked_debate_folder_is_refused_for_every_command_and_nothing_changes(tmp_path: Path,
                                                                               unfinished: Path) -> None:
    """`D/linky -> elsewhere/ID`: resume (by name or prefix), ctl, watch, show, report, context and
    trace refuse with one line (exit 2) before anything is read or written through the link; `list`
    shows it unreadable; and a linked pending folder is neither published nor locked."""
    sd, elsewhere = tmp_path / "D", tmp_path / "elsewhere"
    shutil.copytree(unfinished, elsewhere)
    (debate,) = list(elsewhere.iterdir())
    sd.mkdir()
    (sd / "linky").symlink_to(debate, target_is_directory=True)
    (sd / ".20990101-000000-abcd.tmp").symlink_to(debate, target_is_directory=True)
    before = _tree(tmp_path)
    link = str(sd / "linky")
    for command in (["resume", "linky", "--headless"], ["resume", "lin", "--headless"], ["ctl", "linky", "pause"],
                    ["watch", "linky", "--headless"], ["show", "linky"], ["report", "linky"],
                    ["context", "linky", "--round", "1", "--agent", "kiss"], ["trace", "linky"]):
        line = _one_line(cli(*command, "--state-dir", str(sd)), 2, f"{link} is a symbolic link")
        assert "nothing was changed" in line, command
    _one_line(cli("resume", "20990101-000000-abcd", "--headless", "--state-dir", str(sd)), 2,
              f"{sd / '.20990101-000000-abcd.tmp'} is a symbolic link")
    listed = cli("list", "--state-dir", str(sd))
    assert listed.returncode == 0 and "linky" in listed.stdout and "unreadable" in listed.stdout
    assert _tree(tmp_path) == before


def test_a_linked_state_dir_still_holds_real_debate_folders(tmp_path: Path, unfinished: Path) -> None:
    """Only the debate folder itself must not be a link: a state dir reached through one resumes."""
    shutil.copytree(unfinished, tmp_path / "real")
    (tmp_path / "D").symlink_to(tmp_path / "real", target_is_directory=True)
    (folder,) = list((tmp_path / "real").iterdir())
    r = cli("resume", folder.name, "--headless", "--state-dir", str(tmp_path / "D"))
    assert r.returncode == 0, r.stderr
    assert json.loads((folder / "state.json").read_text())["status"] == "completed"


def test_a_fifo_in_a_debate_folder_never_hangs(tmp_path: Path, unfinished: Path) -> None:
    sd = tmp_path / "D"
    shutil.copytree(unfinished, sd)
    (folder,) = list(sd.iterdir())
    (folder / "events.jsonl").unlink()
    os.mkfifo(folder / "events.jsonl")
    before = _tree(tmp_path)
    for command in (["resume", folder.name, "--headless"], ["show", folder.name], ["watch", folder.name, "--headless"]):
        r = moot(*command, "--state-dir", str(sd), env=DEMO, timeout=30)
        _one_line(r, 2, "is not a regular file")
    assert _tree(tmp_path) == before


def test_write_atomic_never_writes_through_a_link_at_its_temporary_name(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    path = tmp_path / "state.json"
    planted = temporary_name(path)  # the random part is random: the link goes where the next name is
    with mock.patch("moot.core.storage.files.temporary_name", lambda _path: planted):
        planted.symlink_to(victim)
        write_atomic(path, b"{}")
    assert victim.read_text() == "keep me" and path.read_bytes() == b"{}" and not path.is_symlink()


def test_threads_writing_one_file_atomically_never_share_a_temporary_file(tmp_path: Path) -> None:
    """Two threads of one process saving the same file (a checkpoint, a draft) each write
    their own temporary file: with one name per process, one thread removed or replaced the
    other's half-written file, and its rename failed or published the wrong bytes."""
    path = tmp_path / "state.json"
    payloads = [json.dumps({"writer": n, "text": f"draft {n} of the proposal " * 2000}).encode() for n in range(8)]
    start = threading.Barrier(len(payloads))
    errors: list[BaseException] = []

    def writer(data: bytes) -> None:
        start.wait()
        try:
            for _ in range(25):
                write_atomic(path, data)
                assert path.read_bytes() in payloads  # whole, never a mix
        except BaseException as exc:  # noqa: BLE001 - reported below, with the thread's error
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert path.read_bytes() in payloads
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # no temporary file left behind
    names = {temporary_name(path).name for _ in range(100)}
    assert len(names) == 100 and all(n.startswith(f".state.json.{os.getpid()}.") for n in names)
    other = set()
    worker = threading.Thread(target=lambda: other.add(temporary_name(path).name.split(".")[4]))
    worker.start()
    worker.join()
    assert other.isdisjoint({n.split(".")[4] for n in names})  # the thread's id is in the name


def test_the_writer_refuses_a_linked_event_log(tmp_path: Path) -> None:
    """A link planted where a new debate's log goes: the debate does not start, the target is kept."""
    import asyncio

    from moot.core.config import Overrides, build_config
    from moot.core.session import SessionOptions, new_session

    session = new_session("x", build_config({}, Overrides(rounds=1, provider="demo")),
                          SessionOptions(state_dir=tmp_path / "D", demo_delay=0))
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    session.folder.events_path.symlink_to(victim)
    with pytest.raises(StoreError, match="is a symbolic link"):
        asyncio.run(session.run())
    assert victim.read_text() == "keep me"
    assert list((tmp_path / "D").iterdir()) == []  # never started: nothing left behind


# ---------------------------------------------------------------- files a person points moot at

PROMPT_CASES = {
    "a FIFO": ("fifo", "is not a regular file"),
    "/dev/zero": ("/dev/zero", "is not a regular file"),
    "a directory": ("dir", "is a directory"),
    "a binary file": ("binary", "looks binary"),
}


def _make(tmp_path: Path, kind: str) -> str:
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")
        return str(tmp_path / "fifo")
    if kind == "dir":
        (tmp_path / "dir").mkdir()
        return str(tmp_path / "dir")
    if kind == "binary":
        (tmp_path / "binary").write_bytes(b"\x7fELF\x00\x01")
        return str(tmp_path / "binary")
    return kind


@pytest.mark.parametrize("case", list(PROMPT_CASES))
def test_problem_and_prompt_files_that_are_not_text_files(tmp_path: Path, case: str) -> None:
    """A problem file (exit 2) or a system prompt file (exit 4) that is a FIFO, /dev/zero, a
    directory or binary: one line at once (a real process: no read hangs or eats memory),
    and the state dir stays empty."""
    kind, fragment = PROMPT_CASES[case]
    path = _make(tmp_path, kind)
    sd = tmp_path / "D"
    r = moot("run", "-p", path, "--provider", "demo", "--headless", "--state-dir", str(sd), env=DEMO, timeout=30)
    _one_line(r, 2, fragment)
    cfg = tmp_path / "moot.json"
    cfg.write_text(json.dumps({"agents": [{"id": "kiss", "role": "kiss", "system_prompt_path": path}]}))
    r = moot("run", "x", "-c", str(cfg), "--provider", "demo", "--headless", "--state-dir", str(sd), env=DEMO,
             timeout=30)
    _one_line(r, 4, fragment)
    assert TRACEBACK not in r.stderr
    assert not sd.exists() or list(sd.iterdir()) == []

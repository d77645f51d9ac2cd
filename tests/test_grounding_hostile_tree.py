"""A hostile file tree and hostile tool calls, second pass: links into what the walk leaves
out, a key hidden behind control characters, a key in the retrieval tier's index."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from moot.core.tools.builtin import Limits, read_file
from moot.core.tools.references import scan
from moot.core.tools.registry import ToolError
from tests.conftest import LoopbackServer
from tests.grounding_helpers import call, first_turn_calls, is_proposal, make_refs, run, tool_messages

TOKEN = "ghp_linkedTokenThatMustStayHome0123"


def _results(server: LoopbackServer) -> list[str]:
    follow = next(r for r in server.requests if is_proposal(r) and tool_messages(r))
    return [m["content"] for m in tool_messages(follow)]


def _debate(refs: Path, script: Any) -> tuple[Any, list[str], str]:
    """A one-agent grounded debate whose model makes the `script`ed tool calls: the run, what each
    tool call returned to the model, and every request the server received."""
    with LoopbackServer(tool_calls=script) as server:
        result = run(server.base_url, refs, "-a", "architect")
        return result, _results(server), "\n".join(str(r) for r in server.requests)


def test_a_link_inside_the_root_to_an_ignored_or_git_file_is_not_readable(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    (refs / ".git").mkdir()
    (refs / ".git" / "config").write_text(f'[remote "origin"]\n\turl = https://{TOKEN}@example.com/notes.git\n')
    (refs / "build" / "deploy-token.txt").write_text(f"deploy token {TOKEN}\n")
    os.symlink(".git/config", refs / "docs" / "remote.md")          # into an always-skipped folder
    os.symlink("../build/deploy-token.txt", refs / "docs" / "deploy.md")  # into a gitignored folder
    os.symlink("../.env", refs / "docs" / "env.md")                # to a secret-looking file
    os.symlink("plan.md", refs / "docs" / "plan-link.md")          # inside, to a file of the set: fine
    script = first_turn_calls(call("read_file", path="docs/remote.md"), call("read_file", path="docs/deploy.md"),
                              call("read_file", path="docs/env.md"), call("search", query="deploy token"),
                              call("read_file", path="docs/plan-link.md"))
    result, texts, sent = _debate(refs, script)
    assert result.returncode == 0, result.stderr
    assert TOKEN not in sent and "hunter2" not in sent
    assert all(t.startswith("error: ") for t in texts[:3]), texts[:3]
    assert texts[3].startswith("0 matches")
    assert "Notes service plan" in texts[4]


KEY = "sk-treetest-5e4d3c2b1a09f8e7d6c5"


def test_a_key_split_by_control_characters_is_masked_once_they_are_gone(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    refs = make_refs(tmp_path)
    (refs / "docs" / "typescript.md").write_text(f"# Session\n\nexport KEY={KEY[:14]}\x07\x7f{KEY[14:]}\n")
    with LoopbackServer(tool_calls=first_turn_calls(call("read_file", path="docs/typescript.md"))) as server:
        result = run(server.base_url, refs, "-a", "architect")
        texts = _results(server)
    assert result.returncode == 0, result.stderr
    assert "export KEY=" in texts[0] and KEY not in texts[0] and KEY[14:] not in texts[0]
    folder = next(Path("debates").glob("*/events.jsonl")).parent
    assert KEY[14:] not in (folder / "events.jsonl").read_text()


def test_the_retrieval_index_on_disk_never_holds_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    refs = make_refs(tmp_path)
    (refs / "docs" / "setup.md").write_text(f"# Storage setup\n\nThe journal service starts with OPENAI_API_KEY={KEY} "
                                            "exported, then compacts the notes tables.\n")
    Path("moot.toml").write_text("[tools]\nmode = \"retrieve\"\n")
    with LoopbackServer() as server:
        result = run(server.base_url, refs, "-a", "architect", "-c", "moot.toml")
        sent = "\n".join(str(r) for r in server.requests)
    assert result.returncode == 0, result.stderr
    assert KEY not in sent
    assert "OPENAI_API_KEY=" in sent  # the passage was chosen, the key masked
    folder = next(Path("debates").glob("*/events.jsonl")).parent
    for path in folder.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path.name


def test_a_folder_swapped_for_a_link_between_the_check_and_the_open_is_not_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refs_dir = make_refs(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "plan.md").write_text("the launch codes live outside the references\n")
    refs = scan([refs_dir])
    docs, resolve = refs_dir / "docs", Path.resolve

    def resolve_then_swap(self: Path, strict: bool = False) -> Path:
        found = resolve(self, strict=strict)
        if self == docs and not (refs_dir / "docs-real").exists():  # another process, right after the check
            docs.rename(refs_dir / "docs-real")
            docs.symlink_to(outside)
        return found

    monkeypatch.setattr(Path, "resolve", resolve_then_swap)
    with pytest.raises(ToolError) as refused:
        read_file(refs, Limits(), {"path": "docs/plan.md"})
    assert "launch codes" not in str(refused.value) and "is now a symbolic link" in str(refused.value)


def test_secret_looking_names_are_left_out_whatever_their_case(tmp_path: Path) -> None:
    refs = make_refs(tmp_path)
    (refs / "certs").mkdir()
    (refs / "certs" / "SERVER.PEM").write_text("-----BEGIN PRIVATE KEY-----\nMIIEvgIBADANBgkqhkiG9w0BAQEFAASC\n")
    (refs / ".ENV.PRODUCTION").write_text("DATABASE_PASSWORD=correct-horse-battery-staple\n")
    (refs / "ID_RSA").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUA\n")
    script = first_turn_calls(call("read_file", path="certs/SERVER.PEM"), call("read_file", path=".ENV.PRODUCTION"),
                              call("read_file", path="ID_RSA"), call("list_files", path="."))
    result, texts, sent = _debate(refs, script)
    assert result.returncode == 0, result.stderr
    assert "PRIVATE KEY" not in sent and "correct-horse" not in sent
    assert all(t.startswith("error: no file or folder") for t in texts[:3]), texts[:3]
    assert "SERVER.PEM" not in texts[3] and "ID_RSA" not in texts[3] and "docs/plan.md" in texts[3]


def test_files_of_credential_folders_and_names_are_left_out(tmp_path: Path) -> None:
    """`.aws/config` held `aws_secret_access_key` and was read; so were `.pgpass`, a Terraform
    state and a key's backup: their names are secret-looking, their folders hold credentials."""
    refs = make_refs(tmp_path)
    for rel, text in ((".aws/config", "[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY\n"),
                      (".kube/config", "users:\n- name: admin\n  user:\n    token: kube-token-horse-battery\n"),
                      ("ops/.pgpass", "db.internal:5432:app:admin:pgpass-horse-battery\n"),
                      ("infra/prod.tfstate", '{"outputs": {"db_password": {"value": "tfstate-horse-battery"}}}\n'),
                      ("keys/deploy.key.bak", "-----BEGIN PRIVATE KEY-----\nMIIEvgIBADANBgkqhkiG9w0BAQEF\n")):
        (refs / rel).parent.mkdir(parents=True, exist_ok=True)
        (refs / rel).write_text(text)
    (refs / "aws-link").symlink_to(refs / ".aws" / "config")
    script = first_turn_calls(call("read_file", path=".aws/config"), call("read_file", path="ops/.pgpass"),
                              call("read_file", path="aws-link"), call("search", query="horse-battery"),
                              call("list_files", path="."))
    result, texts, sent = _debate(refs, script)
    assert result.returncode == 0, result.stderr
    assert "wJalrXUtnFEMI" not in sent and "-horse-battery" not in sent
    assert all(t.startswith("error: no file or folder") for t in texts[:3]), texts[:3]
    assert ".aws" not in texts[4] and "tfstate" not in texts[4] and "docs/plan.md" in texts[4]

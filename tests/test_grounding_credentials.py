"""Credentials given as references: a credential folder named as the root, a credential file named
directly, a key hidden in an innocently named file or behind a hard link. None of it reaches the
model, the log, the state or the search index."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import LoopbackServer, cli
from tests.grounding_helpers import call, first_turn_calls, is_proposal, make_refs, run, tool_messages

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq9Lk2Tt5e"
DOCKER_AUTH = "ZGVwbG95OnRoZS1yZWdpc3RyeS1wYXNzd29yZA=="
SSH_KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\n"
           "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
           "QyNTUxOQAAACDx3nKvq8Qm0bL5u7ZPYxWq2rJcN8dT0hV3fGk9sXy1AgAAAJi2cFq7tnBa\n"
           "-----END OPENSSH PRIVATE KEY-----\n")


def _home(tmp_path: Path) -> Path:
    """A home folder as a developer's looks: ssh keys, cloud credentials, a registry login."""
    home = tmp_path / "home"
    for rel, text in ((".ssh/id_ed25519", SSH_KEY), (".ssh/config", "Host build\n  HostName build.internal\n"),
                      (".aws/credentials", f"[default]\naws_secret_access_key = {AWS_SECRET}\n"),
                      (".aws/config", f"[default]\nregion = eu-west-1\naws_secret_access_key = {AWS_SECRET}\n"),
                      (".docker/config.json", '{"auths": {"registry.internal": {"auth": "%s"}}}\n' % DOCKER_AUTH)):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    return home


@pytest.mark.parametrize("given", [".ssh", ".aws", ".docker", ".docker/config.json", ".aws/config",
                                   ".aws/credentials", "keys-link"])
def test_a_credential_folder_or_file_given_as_a_reference_is_refused_in_one_line(tmp_path: Path, given: str) -> None:
    home = _home(tmp_path)
    (home / "keys-link").symlink_to(home / ".ssh")  # a link to a credential folder is one too
    with LoopbackServer() as server:
        result = cli("run", "Review how our build hosts are reached", "--ref", str(home / given), "--base-url",
                     server.base_url, "-r", "1", "-a", "architect", "--headless", "--state-dir", "debates")
        sent = "\n".join(str(r) for r in server.requests)
    assert result.returncode == 2, result.stdout + result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert given in line and "left out" in line and "credential" in line, line
    assert sent == "" and not list(Path("debates").glob("*/events.jsonl"))
    assert "OPENSSH" not in result.stdout + result.stderr and AWS_SECRET not in result.stdout + result.stderr


def test_a_project_beside_the_credentials_is_still_read(tmp_path: Path) -> None:
    home = _home(tmp_path)
    refs = make_refs(home)  # ~/project: its parents hold no credential folder
    script = first_turn_calls(call("read_file", path="docs/plan.md"))
    with LoopbackServer(tool_calls=script) as server:
        result = run(server.base_url, refs, "-a", "architect")
        follow = next(r for r in server.requests if is_proposal(r) and tool_messages(r))
    assert result.returncode == 0, result.stderr
    assert "Notes are kept in SQLite" in tool_messages(follow)[0]["content"]
    assert os.path.isdir(home / ".ssh")


DB_PASSWORD = "Tr0ub4dor&3-staging-cellar"
GITHUB_TOKEN = "ghp_R8fWq2LmZ0xYk5VtN3bHc7JpD1sGaE9uQ4oI"
RUNBOOK = f"""# Staging runbook

The notes service reads its settings from the environment when the pod starts:

    DB_PASSWORD="{DB_PASSWORD}"
    aws_access_key_id = AKIAJ7Q2VLX4ZP3MN6RT
    GH_TOKEN={GITHUB_TOKEN}

The nightly compaction connects as postgres://notes:{DB_PASSWORD}@db.staging.internal:5432/notes and
folds the journal into the tenant tables; the password rotates every 90 days.
"""


@pytest.mark.parametrize("mode", ["auto", "retrieve"])
def test_a_private_key_under_any_name_is_left_out_and_other_secrets_are_masked_everywhere(
        tmp_path: Path, mode: str) -> None:
    home = _home(tmp_path)
    refs = make_refs(tmp_path)
    os.link(home / ".ssh" / "id_ed25519", refs / "docs" / "build-host.txt")  # a hard link: a file like any other
    (refs / "deploy_notes.txt").write_text(f"Deploy from the bastion with this key:\n\n{SSH_KEY}\n"
                                           f"The database password is {DB_PASSWORD} for the app user.\n")
    (refs / "docs" / "runbook.md").write_text(RUNBOOK)
    Path("moot.toml").write_text(f'[tools]\nmode = "{mode}"\n')
    script = first_turn_calls(call("read_file", path="docs/build-host.txt"), call("read_file", path="deploy_notes.txt"),
                              call("read_file", path="docs/runbook.md"), call("search", query="password"),
                              call("list_files", path="."))
    with LoopbackServer(tool_calls=script) as server:
        result = run(server.base_url, refs, "-a", "architect", "-c", "moot.toml")
        sent = "\n".join(str(r) for r in server.requests)
        follow = next((r for r in server.requests if is_proposal(r) and tool_messages(r)), None)
    assert result.returncode == 0, result.stderr
    for secret in ("PRIVATE KEY", "b3BlbnNzaC1rZXktdjEAAAAABG5v", DB_PASSWORD, "AKIAJ7Q2VLX4ZP3MN6RT", GITHUB_TOKEN):
        assert secret not in sent, secret
        for path in next(Path("debates").glob("*/events.jsonl")).parent.rglob("*"):  # log, state, search index
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), (secret, path.name)
    if mode == "retrieve":
        assert "compaction connects as postgres://***@db.staging.internal" in sent  # the passage chosen, masked
        return
    assert follow is not None
    texts = [m["content"] for m in tool_messages(follow)]
    assert texts[0].startswith("error: no file or folder 'docs/build-host.txt'"), texts[0]
    assert texts[1].startswith("error: no file or folder 'deploy_notes.txt'"), texts[1]
    assert 'DB_PASSWORD="***"' in texts[2] and "GH_TOKEN=***" in texts[2] and "rotates every 90 days" in texts[2]
    assert "docs/runbook.md:" in texts[3] and "build-host" not in texts[4] and "deploy_notes" not in texts[4]

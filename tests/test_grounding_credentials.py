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

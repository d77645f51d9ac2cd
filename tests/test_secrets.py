"""API keys never reach the disk, the reports, the logs or an error message.

A debate runs against the loopback server with a random key; the server's first
answer is a 401 that echoes the key back (as real providers do). Every byte under
the working directory and everything the CLI printed is then searched for it.
"""

from __future__ import annotations

import io
import secrets
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from moot import cli
from moot.core.safety.secrets import MASK, known_secrets, one_line, redact
from moot.core.storage.state_dir import StateDir
from tests.conftest import Faults, LoopbackServer, moot, read_jsonl
from tests.test_bad_input import cli as in_process
from tests.test_resume import TRACEBACK, check_complete, only_debate, resume_hint

ROLES = ["architect", "security"]


@pytest.mark.parametrize("source", ["env sk- key", ".env key of another shape"])
def test_key_is_never_saved_printed_or_reported(tmp_path: Path, source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if source == "env sk- key":
        key = f"sk-test-{secrets.token_hex(12)}"
        env = {"OPENAI_API_KEY": key}
    else:  # no sk- prefix: only exact-match masking can catch it
        key = f"lb{secrets.token_hex(14)}"
        (tmp_path / ".env").write_text(f"OPENAI_API_KEY={key}\n")
        env = {}
    sd = tmp_path / "D"
    outputs: list[str] = []
    with LoopbackServer(faults=Faults(status_script=[401])) as srv:
        r = moot("run", "Design a URL shortener", "--provider", "openai", "--base-url", srv.base_url, "--headless",
                 "-r", "1", "-a", ",".join(ROLES), "--state-dir", str(sd), env=env)
        outputs += [r.stdout, r.stderr]
        assert r.returncode == 3, r.stderr
        last = r.stderr.strip().splitlines()[-1]
        assert f"401 from server (gpt-4o-mini at 127.0.0.1:{srv.port}): Incorrect API key provided: {MASK}" in last
        r2 = moot(*resume_hint(r.stderr), "--headless", "--base-url", srv.base_url, env=env)
        outputs += [r2.stdout, r2.stderr]
        assert r2.returncode == 0, r2.stderr
        sent = {h.get("authorization") for h in srv.request_headers}
    assert sent == {f"Bearer {key}"}  # the key really went to the server, and only there
    folder = only_debate(sd)
    check_complete(folder, 1, ROLES)
    echoed = [e for e in read_jsonl(folder / "events.jsonl") if e["type"] in ("call_failed", "debate_failed")]
    assert echoed and all("Incorrect API key provided: sk-***" in e["error"] for e in echoed)

    # The read-only commands, in-process (with the key in the environment).
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    views = [["show", folder.name], ["show", folder.name, "--json"], ["list"],
             ["context", folder.name, "--round", "1", "--agent", "architect"]]
    views += [["report", folder.name, "-o", str(tmp_path / "report.md")], ["report", folder.name, "--verbose"]]
    for argv in views:
        shown = in_process(*argv, "--state-dir", str(sd))
        assert shown.returncode == 0, shown.stderr
        outputs += [shown.stdout, shown.stderr]

    assert all(TRACEBACK not in o for o in outputs)
    leaks = [o[:200] for o in outputs if key in o]
    assert not leaks
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != ".env"]
    assert len(files) >= 4
    assert [p for p in files if key.encode() in p.read_bytes()] == []


def test_unexpected_errors_are_masked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    key = f"sk-proj-{secrets.token_hex(10)}"
    other = f"or{secrets.token_hex(10)}"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("OPENROUTER_API_KEY", other)

    def boom(self: object) -> None:
        raise RuntimeError(f"something went wrong with {key} and\n{other}")

    monkeypatch.setattr(StateDir, "clean_pending", boom)  # the first thing `moot list` asks of the engine
    err = io.StringIO()
    with redirect_stderr(err):
        assert cli.main(["list"]) == 1
    assert err.getvalue() == f"moot: unexpected error: RuntimeError: something went wrong with {MASK} and {MASK}\n"


def test_known_secrets_reads_env_and_dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", " sk-env-123456 ")
    (tmp_path / ".env").write_text("OPENROUTER_API_KEY=dotenv-secret-999\nOTHER=x\n")
    assert known_secrets(tmp_path / ".env") == ["sk-env-123456", "dotenv-secret-999"]
    assert known_secrets(tmp_path / "missing.env") == ["sk-env-123456"]


@pytest.mark.parametrize(("text", "secrets_", "expected"), [
    ("Incorrect API key provided: sk-abc123def456", (), f"Incorrect API key provided: {MASK}"),
    ("key sk-proj-AbC_12-34.xy used", (), f"key {MASK} used"),
    ("echo sk-abc1****wxyz", (), f"echo {MASK}"),
    ("Authorization: Bearer lb1234567890abc", (), f"Authorization: Bearer {MASK}"),
    ("a plain lbSECRETvalue9 inside", ("lbSECRETvalue9",), f"a plain {MASK} inside"),
    ("long first: abcdefgh-ijkl", ("abcdefgh", "abcdefgh-ijkl"), f"long first: {MASK}"),
    ("short ones are left: ab abc", ("ab", "abc"), "short ones are left: ab abc"),
    ("task-list and sk-ip stay", (), "task-list and sk-ip stay"),
])
def test_redact(text: str, secrets_: tuple[str, ...], expected: str) -> None:
    assert redact(text, secrets_) == expected


def test_an_error_line_masks_a_key_split_by_control_characters_and_never_a_cut_half() -> None:
    """A server may echo the key with a control byte inside it: the line is cleaned before it is
    masked (masked first, the key's tail reached the terminal once the byte was stripped), and
    cut only after it is masked (cut first, a key's head was no longer a key to mask)."""
    key = "sk-proj-" + "4f8a2c9d1e7b3a6f" * 3
    echoed = f"401: Incorrect API key provided: {key[:20]}\x07\x7f{key[20:]} (check your settings)"
    line = one_line(echoed, 200, [key])
    assert MASK in line and key[20:] not in line and key[:20] not in line
    cut = one_line(f"bad key {key} given", 30, [key])
    assert key[:15] not in cut and cut.startswith("bad key ")

"""`moot doctor` against real HTTP: a sound server, one without tools, one that never answers, a
missing key, a server that echoes the key with escape sequences, and a state dir that cannot be written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import cli
from tests.loopback import Faults, LoopbackServer, ModelServer

KEY = "sk-proj-Hq27WcVn5KdLp0RsTe8YuBa3"


def _lines(stdout: str) -> dict[str, str]:
    """Each line by its first words after the mark (`endpoint`, `model`, `tool`…)."""
    return {line.split(" ", 2)[1]: line for line in stdout.splitlines()}


def test_a_sound_server_passes_every_check_and_the_key_is_never_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with LoopbackServer(model=ModelServer(window=4096, count_scale=1.25)) as server:
        r = cli("doctor", "--base-url", server.base_url, "--model", "qwen2.5")
    assert r.returncode == 0, r.stdout + r.stderr
    assert KEY not in r.stdout + r.stderr
    found = _lines(r.stdout)
    assert found["API"] == "✔ API key set (OPENAI_API_KEY in the environment)"
    assert found["endpoint"].startswith("✔ endpoint http://127.0.0.1:")
    assert found["model"].startswith("✔ model qwen2.5 answers")
    assert found["window"].startswith("✔ window 4096 tokens, stated by the server")
    assert "counts 1.2" in found["token"]  # its tokenizer counts a quarter more (on a short prompt, about)
    for check in ("tool", "response_format", "prompt-cache", "streaming", "state"):
        assert found[check].startswith("✔"), found[check]
    assert r.stdout.splitlines()[-1] == "✔ a debate can run here"
    assert {b.get("model") for b in server.requests} == {"qwen2.5"}


def test_a_server_without_tools_or_usage_still_runs_a_debate() -> None:
    with LoopbackServer(refuse_tools=True, send_usage=False, prefix_cache=False) as server:
        r = cli("doctor", "--base-url", server.base_url, "--model", "qwen2.5")
    assert r.returncode == 0, r.stdout
    found = _lines(r.stdout)
    assert found["tool"].startswith("! tool calling refused (HTTP 400: \"auto\" tool choice requires")
    assert found["window"].startswith("! window not stated by the server: assumed 8000 tokens")
    assert found["streamed"].startswith("! streamed answers carry no usage")
    assert found["prompt-cache"].startswith("! prompt-cache hits not reported")


def test_a_hanging_server_costs_the_deadline_and_fails(tmp_path: Path) -> None:
    never = Faults(discovery={"/props": "drip", "/models": "drip", "/api/show": "drip"})
    with LoopbackServer(delay=120, faults=never) as server:
        r = cli("doctor", "--base-url", server.base_url, "--model", "qwen2.5", "--timeout", "0.5")
        assert "GET /v1/models" in server.probes and server.calls >= 1  # asked, and never answered
    assert r.returncode == 1
    found = _lines(r.stdout)
    assert found["endpoint"].endswith("no answer within 0.5 s — is the server running, and is --base-url "
                                      "(or base_url in moot.toml) right?")
    assert found["endpoint"].startswith("✘") and found["model,"].startswith("– model, window")
    assert r.stdout.splitlines()[-1].startswith("✘ a debate cannot run here")


def test_a_missing_key_fails_without_calling_the_endpoint() -> None:
    r = cli("doctor", "--base-url", "https://models.example.com/v1", "--model", "gpt-4o-mini")
    assert r.returncode == 1
    found = _lines(r.stdout)
    assert found["no"].startswith("✘ no API key: set OPENAI_API_KEY")
    assert "– endpoint and model not checked (no key to send)" in r.stdout
    assert not any(line.startswith("✔ endpoint") for line in r.stdout.splitlines())


def test_an_echoed_key_and_escapes_in_an_error_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    faults = Faults(status_script=[401] * 20, error_message="\x1b[2J\x1b]0;owned\x07Incorrect API key {key}")
    with LoopbackServer(faults=faults) as server:
        r = cli("doctor", "--base-url", server.base_url, "--model", "qwen2.5")
    assert r.returncode == 1
    assert KEY not in r.stdout and "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert _lines(r.stdout)["model"].startswith("✘ model qwen2.5: HTTP 401: ")


def test_an_unwritable_state_dir_fails(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder\n")
    r = cli("doctor", "--provider", "demo", "--state-dir", str(tmp_path / "a-file" / "debates"))
    assert r.returncode == 1
    assert _lines(r.stdout)["state"].startswith("✘ state dir ")
    r = cli("doctor", "--provider", "demo")
    assert r.returncode == 0 and "✔ configuration loads (defaults: no ./moot.toml;" in r.stdout
    r = cli("doctor", "--provider", "demo", "--timeout", "0")
    assert r.returncode == 2 and r.stderr == "moot: --timeout must be above 0 seconds\n"

"""`moot init` writes a starter moot.toml that loads and holds no key; `moot config` shows the
effective configuration with the source of each value, and the JSON Schema of the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from moot.core.config import load_config
from tests.conftest import LoopbackServer, cli

PROBLEM = ("Our team runs a small internal wiki on one virtual machine. Should we move it to a managed "
           "service next quarter, or keep it and add nightly backups to object storage?")
KEY = "sk-proj-Zx81PqLmN0vBc7TyUe4WsRa9"


def _settings(*argv: str) -> dict[str, dict[str, object]]:
    r = cli("config", "--json", *argv)
    assert r.returncode == 0, r.stderr
    data: dict[str, dict[str, object]] = json.loads(r.stdout)
    return data


def test_init_writes_a_commented_config_for_the_endpoint_that_loads_and_holds_no_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    r = cli("init", "--base-url", "http://wiki:hunter2-password@127.0.0.1:8080/v1", "--model", "qwen2.5",
            "-a", "architect,kiss", "--protocol", "conversation")
    assert r.returncode == 0, r.stderr
    assert "password in --base-url was left out" in r.stderr
    text = (tmp_path / "moot.toml").read_text()
    assert text.startswith("#:schema ./moot.schema.json\n")
    assert KEY not in text and "hunter2" not in text and "OPENAI_API_KEY" in text  # says where the key goes
    data = tomllib.loads(text)
    assert [a["id"] for a in data["agents"]] == ["architect", "kiss"]
    assert data["debate"] == {"protocol": "conversation", "context": {}}  # the rest: commented out, at defaults
    assert "# max_context_tokens = 8000" in text
    cfg = load_config(None)
    assert {a.model for a in [*cfg.agents, cfg.judge]} == {"qwen2.5"}
    assert {a.base_url for a in [*cfg.agents, cfg.judge]} == {"http://127.0.0.1:8080/v1"}
    schema = json.loads((tmp_path / "moot.schema.json").read_text())
    assert schema["title"] == "moot.toml" and "debate" in schema["properties"]


def test_init_never_replaces_a_file_unless_forced(tmp_path: Path) -> None:
    mine = "[debate]\nrounds = 7\n"
    (tmp_path / "moot.toml").write_text(mine)
    r = cli("init", "--provider", "demo")
    assert r.returncode == 2 and r.stderr.startswith("moot: moot.toml already exists; use --force")
    assert (tmp_path / "moot.toml").read_text() == mine
    assert cli("init", "--provider", "demo", "--force").returncode == 0
    assert 'provider = "demo"' in (tmp_path / "moot.toml").read_text()
    r = cli("init", "--provider", "demo", "--model", "qwen2.5", "-o", "other.toml")
    assert r.returncode == 2 and "takes no --base-url or --model" in r.stderr
    r = cli("init", "--model", "qwen\x1b[2J\x7f", "-o", "other.toml")
    assert r.returncode == 2 and r.stderr == "moot: --model cannot be empty or hold control or invisible characters\n"
    assert not (tmp_path / "other.toml").exists()


def test_a_debate_runs_on_the_config_init_wrote(tmp_path: Path) -> None:
    with LoopbackServer() as server:
        assert cli("init", "--base-url", server.base_url, "--model", "loopback-model", "-a", "kiss").returncode == 0
        r = cli("doctor")  # reads the endpoint and the model from ./moot.toml
        assert r.returncode == 0 and "✔ configuration loads (./moot.toml;" in r.stdout
        assert f"✔ endpoint {server.base_url} answers" in r.stdout and "✔ model loopback-model answers" in r.stdout
        r = cli("run", PROBLEM, "-r", "1", "--headless", "--state-dir", str(tmp_path / "debates"))
        assert r.returncode == 0, r.stderr
        assert server.calls >= 2 and {b["model"] for b in server.requests} == {"loopback-model"}


def test_config_names_the_source_of_each_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "moot.toml").write_text('[debate]\nrounds = 4\n\n[[agents]]\nid = "kiss"\nrole = "kiss"\n'
                                        'model = "qwen2.5"\n')
    monkeypatch.setenv("MOOT_STATE_DIR", str(tmp_path / "saved"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    found = _settings()
    assert found["debate.rounds"] == {"value": 4, "source": "./moot.toml"}
    assert found["debate.turns"] == {"value": 200, "source": "default"}
    assert found["agents[0].model"] == {"value": "qwen2.5", "source": "./moot.toml"}
    assert found["judge.model"] == {"value": "gpt-4o-mini", "source": "default"}
    assert found["agents[0].provider"] == {"value": "openai",
                                           "source": "environment (OPENAI_API_KEY in the environment)"}
    assert found["state_dir"] == {"value": str(tmp_path / "saved"), "source": "environment (MOOT_STATE_DIR)"}
    assert found["api_key"]["source"] == "OPENAI_API_KEY in the environment"
    flags = _settings("--model", "llama3", "-r", "2", "--state-dir", "elsewhere")
    assert flags["agents[0].model"] == {"value": "llama3", "source": "--model"}
    assert flags["debate.rounds"] == {"value": 2, "source": "--rounds"}
    assert flags["state_dir"] == {"value": "elsewhere", "source": "--state-dir"}
    (tmp_path / "team.json").write_text(json.dumps({"debate": {"protocol": "vote"}}))
    other = _settings("-c", "team.json")
    assert other["debate.protocol"] == {"value": "vote", "source": "-c team.json"}
    assert other["debate.rounds"]["source"] == "default"  # ./moot.toml is not read beside -c
    r = cli("config")
    assert KEY not in r.stdout and "debate.rounds = 4" in r.stdout and "# ./moot.toml" in r.stdout
    assert cli("config", "debate.context").stdout.splitlines()[0].startswith("debate.context.max_context_tokens")


def test_config_shows_hostile_values_without_control_characters(tmp_path: Path) -> None:
    (tmp_path / "moot.toml").write_text('[[agents]]\nid = "kiss"\nrole = "kiss"\n'
                                        'model = "qwen\\u001b]0;pwned\\u0007\\u001b[2J"\n')
    r = cli("config", "agents[0].model")
    assert r.returncode == 0 and "\x1b" not in r.stdout and "\x07" not in r.stdout and "qwen" in r.stdout
    assert "\x1b" not in cli("config", "--json").stdout


def test_config_errors_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "moot.toml").write_text("[debate]\nrounds = 0\n")
    r = cli("config")
    assert r.returncode == 4 and r.stderr.count("\n") == 1 and "debate.rounds" in r.stderr
    r = cli("config", "debate.nothing", "-c", "/nonexistent/moot.toml")
    assert r.returncode == 4 and r.stderr.startswith("moot:")
    assert cli("config", "debate.nothing").returncode == 4  # the bad file, still
    (tmp_path / "moot.toml").unlink()
    r = cli("config", "debate.nothing")
    assert r.returncode == 2 and "no configuration key 'debate.nothing'" in r.stderr


def test_the_schema_describes_every_key_and_accepts_what_init_writes(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    r = cli("config", "--schema")
    assert r.returncode == 0
    schema = json.loads(r.stdout)
    rounds = schema["$defs"]["DebateSettings"]["properties"]["rounds"]
    assert rounds["default"] == 3 and rounds["maximum"] == 1000 and "Rounds of the" in rounds["description"]
    assert {"debate", "agents", "judge", "tools", "providers"} <= schema["properties"].keys()
    assert cli("init", "--base-url", "http://127.0.0.1:11434/v1", "--model", "qwen2.5").returncode == 0
    jsonschema.validate(tomllib.loads((tmp_path / "moot.toml").read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"debate": {"rounds": "three"}}, schema)


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_init_in_a_terminal_asks_for_each_choice(tmp_path: Path) -> None:
    """In a terminal with no flags, `moot init` asks: provider, base URL, model, agents, protocol
    (a wrong answer is asked again)."""
    main, side = os.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY")}
    proc = subprocess.Popen([sys.executable, "-m", "moot", "init"], stdin=side, stdout=side, stderr=side,
                            cwd=tmp_path, env=env)
    os.close(side)
    os.write(main, b"openai\nhttp://127.0.0.1:8080/v1\nqwen2.5\nkiss,architect\ndebate\nvote\n")
    seen = b""
    while True:
        try:
            piece = os.read(main, 4096)
        except OSError:  # the terminal closed: the process has ended
            break
        if not piece:
            break
        seen += piece
    assert proc.wait(timeout=60) == 0, seen.decode(errors="replace")
    os.close(main)
    shown = seen.decode(errors="replace")
    assert "Provider" in shown and "Model [gpt-4o-mini]" in shown and "one of rounds, conversation" in shown
    data = tomllib.loads((tmp_path / "moot.toml").read_text())
    assert [a["id"] for a in data["agents"]] == ["kiss", "architect"] and data["debate"]["protocol"] == "vote"
    assert data["judge"] == {"provider": "openai", "model": "qwen2.5", "base_url": "http://127.0.0.1:8080/v1"}

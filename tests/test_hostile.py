"""A hostile server: what it sends never reaches a terminal raw, never leaks a key, never
leaves a debate stuck.

Each test drives the CLI (in-process for speed, as `tests.test_bad_input.cli` does)
against the loopback server in one of its hostile modes (`tests.loopback.Faults`):
escape sequences in replies, error bodies and the `model` field; chunks that are not
JSON or have no `choices`; impossible usage; a reply dripped a byte a second; empty
replies; the client's own key echoed back.
"""

from __future__ import annotations

import base64
import json
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moot.core.safety.sanitize import UNSAFE
from moot.core.safety.secrets import MASK
from moot.core.storage.folder import DebateFolder
from tests.conftest import Faults, LoopbackServer, read_jsonl
from tests.loopback import KEEP, _last_user_text, default_reply
from tests.test_bad_input import cli
from tests.test_resume import TRACEBACK, check_complete, only_debate, resume_hint

HOSTILE = ("Title\x1b]0;pwned\x07 clear\x1b[2J\x1b[H link \x1b]8;;http://evil.example/\x1b\\here\x1b]8;;\x1b\\ "
           "clip\x1b]52;c;ZXZpbA==\x07 csi\x9b31m dcs\x1bPq#0\x1b\\ bell\x07 del\x7f nul\x00 cr\rover "
           "[bold red]markup[/] [link=http://x.example]y[/link] rlo\u202eolr\u202c iso\u2066late\u2069 "
           "zero\u200bwidth\ufeff")
"""What a hostile server puts in every text it sends: window title, clear screen, a hidden
link (OSC 8), a clipboard write (OSC 52), 8-bit CSI, DCS, bare controls, Rich markup, bidi
overrides and isolates, zero-width characters (Trojan Source)."""


def unsafe(text: str) -> list[str]:
    """The characters no terminal output may hold (0x00–0x08, 0x0B–0x1F, 0x7F–0x9F, bidi and
    zero-width characters)."""
    return UNSAFE.findall(text)


def hostile_reply(text: str = HOSTILE) -> Any:
    """Replies carrying `text`: as prose, as the judge's JSON and as clarifying questions."""

    def reply(body: dict[str, Any], n: int) -> str:
        ask = _last_user_text(body).lower()
        if "json" in ask and "confidence" in ask:
            return json.dumps({"solution": f"## Solution\n\n{text}", "confidence": 70, "tradeoffs": [text],
                               "recommendations": [text], "unresolved": [text]})
        if "json" in ask and "questions" in ask:
            return json.dumps({"questions": [text]})
        return f"## Reply {n}\n\n{text}\n\n- a point\n- another point"

    return reply


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


def config(tmp_path: Path, **debate: Any) -> str:
    path = tmp_path / "moot.json"
    path.write_text(json.dumps({"debate": {"max_retries": 1, **debate}}))
    return str(path)


def run(srv: LoopbackServer, sd: Path, cfg: str, *extra: str, agents: str = "architect") -> Any:
    return cli("run", "Design a URL shortener", "--base-url", srv.base_url, "--headless", "-r", "1", "-a", agents,
               "-c", cfg, "--state-dir", str(sd), *extra)


# ---------------------------------------------------------------- escape sequences


def test_escape_sequences_from_a_server_never_reach_the_terminal(tmp_path: Path, server: LoopbackServer) -> None:
    """Replies, the judge's solution, clarifying questions, the reported model name and error
    bodies all carry escape sequences: no command prints one, markup is shown literally, and
    the event log keeps the raw text."""
    server.reply = hostile_reply()
    server.faults = Faults(model_name=HOSTILE, status_script=[500], error_message=HOSTILE)
    sd = tmp_path / "D"
    r = run(server, sd, config(tmp_path, clarify=True), agents="architect,kiss")
    assert r.returncode == 0, r.stderr
    outputs = {"run": r.stdout + r.stderr}
    assert "(retrying)" in r.stderr
    assert "[bold red]markup[/]" in r.stdout  # the solution, literally
    folder = only_debate(sd)
    views = {"show": ["show", folder.name], "show --json": ["show", folder.name, "--json"], "list": ["list"],
             "report": ["report", folder.name], "report --verbose": ["report", folder.name, "--verbose"],
             "context": ["context", folder.name, "--round", "1", "--agent", "architect"],
             "context --json": ["context", folder.name, "--round", "1", "--agent", "architect", "--json"],
             "watch --headless": ["watch", folder.name, "--headless"]}
    for name, argv in views.items():
        shown = cli(*argv, "--state-dir", str(sd))
        assert shown.returncode == 0, (name, shown.stderr)
        outputs[name] = shown.stdout + shown.stderr
    report = tmp_path / "report.md"
    assert cli("report", folder.name, "--verbose", "-o", str(report), "--state-dir", str(sd)).returncode == 0
    outputs["report file"] = report.read_text()

    assert {name: unsafe(text)[:5] for name, text in outputs.items() if unsafe(text)} == {}
    assert all(TRACEBACK not in text for text in outputs.values())
    assert "[bold red]markup[/]" in outputs["report"] and "[bold red]markup[/]" in outputs["context"]
    assert json.loads(outputs["show --json"])["rounds"][0]["contributions"][0]["content"].count("\x1b") == HOSTILE.count("\x1b")
    # The audit trail keeps what the server sent, byte for byte.
    events = read_jsonl(folder / "events.jsonl")
    contents = [e["contribution"]["content"] for e in events if e["type"] == "contribution_added"]
    assert all(HOSTILE in c for c in contents)
    assert {e["contribution"]["metadata"]["model"] for e in events if e["type"] == "contribution_added"} == {
        HOSTILE[:200]}
    asked = [e for e in events if e["type"] == "clarifications_asked"]
    assert asked and asked[0]["questions"][0]["question"] == HOSTILE.strip()


def test_an_error_body_with_escape_sequences_is_one_clean_line(tmp_path: Path, server: LoopbackServer) -> None:
    server.faults = Faults(status_script=[400], error_message=HOSTILE)
    r = run(server, tmp_path / "D", config(tmp_path))
    assert r.returncode == 3, r.stderr
    assert unsafe(r.stdout + r.stderr) == []
    last = r.stderr.splitlines()[-1]
    assert last.startswith("moot: architect proposal in round 1 failed: 400 from server") and "Title" in last
    assert "continue with `moot resume" in last


# ---------------------------------------------------------------- malformed answers


@pytest.mark.parametrize("bad", ["json", "no_choices", "content"])
def test_malformed_stream_data_is_a_provider_failure_then_resumes(tmp_path: Path, server: LoopbackServer,
                                                                   bad: str) -> None:
    """Every attempt of the first call gets a broken chunk: exit 3 (never 1), a terminal
    `debate_failed`, the resume hint; once the server is sane the resume completes."""
    server.faults = Faults(bad_chunk=bad, bad_chunk_calls=2)  # both attempts of the first call
    sd = tmp_path / "D"
    r = run(server, sd, config(tmp_path, max_concurrency=1), agents="architect,kiss")
    assert r.returncode == 3, r.stderr
    assert "unexpected" not in r.stderr and TRACEBACK not in r.stderr
    last = r.stderr.splitlines()[-1]
    assert last.startswith("moot: architect proposal in round 1 failed: malformed stream data"), last
    assert "after 2 attempts" in last
    folder = only_debate(sd)
    assert read_jsonl(folder / "events.jsonl")[-1]["type"] == "debate_failed"
    assert "failed" in cli("list", "--state-dir", str(sd)).stdout
    again = cli(*resume_hint(r.stderr), "--headless", "--base-url", server.base_url)
    assert again.returncode == 0, again.stderr
    check_complete(folder, 1, ["architect", "kiss"])


def test_one_malformed_chunk_is_retried_like_a_cut_stream(tmp_path: Path, server: LoopbackServer) -> None:
    server.faults = Faults(bad_chunk="json", bad_chunk_calls=1)
    r = run(server, tmp_path / "D", config(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "malformed stream data, retrying" in r.stderr
    state = DebateFolder(only_debate(tmp_path / "D")).load()
    assert state.all_contributions()[0].metadata.attempts == 2


IMPOSSIBLE_USAGE = {
    "negative": {"prompt_tokens": -10**9, "completion_tokens": -10**9, "total_tokens": -2 * 10**9},
    "strings": {"prompt_tokens": "12", "completion_tokens": "lots", "total_tokens": "many"},
    "null": None,
    "not an object": "lots",
}


def test_impossible_usage_is_counted_locally_and_caps_hold(tmp_path: Path, server: LoopbackServer) -> None:
    """Usage that is negative, not a number or missing is replaced by moot's own count
    (marked estimated, with a warning), so `--max-tokens` stops after exactly as many calls
    as with an honest server (the issue saw 37 calls instead of 10 and −37e9 tokens)."""
    calls: dict[str, int] = {}
    for name, usage in {"honest": KEEP, **IMPOSSIBLE_USAGE}.items():
        server.faults = Faults(usage=usage)
        before = server.calls
        sd = tmp_path / name
        r = run(server, sd, config(tmp_path), "--max-tokens", "1500", agents="architect,kiss")
        assert r.returncode == 0, (name, r.stderr)
        calls[name] = server.calls - before
        state = DebateFolder(only_debate(sd)).load()
        assert state.status == "stopped_budget", name
        metas = [c.metadata for c in state.all_contributions()]
        assert all(m.prompt_tokens > 0 and m.completion_tokens > 0 for m in metas), name
        assert all(m.usage_estimated == (name != "honest") for m in metas), name
        assert ("no usable token usage" in r.stderr) == (name != "honest"), name
    assert set(calls.values()) == {calls["honest"]}, calls
    assert calls["honest"] < 8


def test_empty_reply_is_asked_for_once_more_then_recorded_with_a_warning(tmp_path: Path,
                                                                          server: LoopbackServer) -> None:
    server.faults = Faults(empty_calls=1)
    r = run(server, tmp_path / "once", config(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "architect: the model returned an empty reply (retrying)" in r.stderr
    first = DebateFolder(only_debate(tmp_path / "once")).load().all_contributions()[0]
    assert first.content.strip() and first.metadata.attempts == 2

    server.faults = Faults(empty_calls=server.calls + 2)
    r = run(server, tmp_path / "twice", config(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "architect: the model returned an empty reply twice; recorded as empty" in r.stderr
    folder = only_debate(tmp_path / "twice")
    first = DebateFolder(folder).load().all_contributions()[0]
    assert first.content == "" and first.metadata.attempts == 2
    warnings = [e for e in read_jsonl(folder / "events.jsonl") if e["type"] == "warning"]
    assert any("empty reply twice" in w["message"] for w in warnings)


# ---------------------------------------------------------------- deadlines


def test_a_server_dripping_a_byte_a_second_meets_the_deadline(tmp_path: Path, server: LoopbackServer) -> None:
    """`timeout_s = 2` bounds each attempt from the request to its last byte: the drip
    (which would take minutes) costs one attempt of about 2 s, then exit 3."""
    server.faults = Faults(drip_s=1.0)
    r = run(server, tmp_path / "D", config(tmp_path, timeout_s=2, max_retries=0))
    assert r.returncode == 3, r.stderr
    assert "no complete answer within 2s" in r.stderr  # the deadline cut the drip, not a read timeout
    assert server.calls == 1  # one attempt, then the debate stopped resumably


# ---------------------------------------------------------------- keys


def leaked(key: str, text: str, window: int = 10) -> bool:
    """Does any run of `window` characters of the key appear in `text` (half a key counts)?"""
    return any(key[i : i + window] in text for i in range(len(key) - window + 1))


def test_keys_a_server_echoes_are_never_written(tmp_path: Path, server: LoopbackServer,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The server echoes the key in its replies (whole, and without its `sk-proj-` prefix),
    as its model name, and in error bodies, one cut at 200 characters across the key; a base
    URL carries a password (the HTTP client then sends it, Base64-encoded, and the server
    echoes that). None of it reaches a file moot writes, nor anything it prints; `moot eval`
    (its .json, .csv and .md output and stdout) included."""
    key = f"sk-proj-{secrets.token_hex(16)}"
    bare = key.removeprefix("sk-proj-")
    password = secrets.token_hex(12)
    basic = base64.b64encode(f"moot:{password}".encode()).decode()
    monkeypatch.setenv("OPENAI_API_KEY", key)
    url = server.base_url.replace("http://", f"http://moot:{password}@")

    def reply(body: dict[str, Any], n: int) -> str:
        ask = _last_user_text(body).lower()
        if "overall" in ask and "json" in ask:  # an evaluator
            scores = {c: {"score": 7, "reason": f"echo {{key}}, {key} and {bare}"} for c in ("overall", "security")}
            scores["performance"] = {"score": f"9 {key}", "reason": "a raw value that is no number"}
            return json.dumps({"scores": scores})
        text = default_reply(body, n)
        if text.startswith("{"):
            return text
        return f"{text}\n\nkey {{key}} and {key}, bare {bare}, in a URL http://u:{password}@h/"

    server.reply = reply
    server.faults = Faults(model_name="proxy-{key}", status_script=[500], error_message="x" * 190 + " {key} tail")
    sd = tmp_path / "D"
    outputs = []
    r = run(server, sd, config(tmp_path))
    assert r.returncode == 0, r.stderr
    outputs += [r.stdout, r.stderr]
    folder = only_debate(sd)
    events = read_jsonl(folder / "events.jsonl")
    models = {e["contribution"]["metadata"]["model"] for e in events if e["type"] == "contribution_added"}
    assert models == {f"proxy-{MASK}"}
    assert any(e["type"] == "call_failed" and e["will_retry"] for e in events)  # the 500 echoing the key

    # A 400 whose body puts the key across the 200-character cut of the error line.
    server.faults = Faults(status_script=[200] * server.calls + [400], error_message="y" * 185 + " {key}")
    failed = run(server, tmp_path / "F", config(tmp_path))
    assert failed.returncode == 3
    assert MASK in failed.stderr.splitlines()[-1]
    outputs += [failed.stdout, failed.stderr]

    # The password in the base URL: the server echoes the Basic credentials it got.
    server.faults = Faults(model_name="proxy-{key}")
    with_password = run(server, tmp_path / "P", config(tmp_path), "--base-url", url)
    assert with_password.returncode == 0, with_password.stderr
    outputs += [with_password.stdout, with_password.stderr]
    saved = json.loads((only_debate(tmp_path / "P") / "state.json").read_text())
    assert {a["base_url"] for a in saved["config"]["agents"]} == {server.base_url}

    for sd_, debate in ((sd, folder), (tmp_path / "P", only_debate(tmp_path / "P"))):
        for argv in (["show", debate.name], ["show", debate.name, "--json"], ["report", debate.name, "--verbose"],
                     ["context", debate.name, "--round", "1", "--agent", "architect"], ["list"]):
            shown = cli(*argv, "--state-dir", str(sd_))
            assert shown.returncode == 0, shown.stderr
            outputs += [shown.stdout, shown.stderr]

    # moot eval: the evaluator's reasons, raw values and reported model echo the key.
    server.faults = Faults(model_name="{key}")
    ev = tmp_path / "eval.json"
    for base in (server.base_url, url):
        ev.write_text(json.dumps({"agents": [{"id": "e1", "provider": "openai", "base_url": base}]}))
        for out in ("scores.json", "scores.csv", "scores.md", None):
            target = ["-o", str(tmp_path / f"{len(outputs)}-{out}")] if out else []
            done = cli("eval", folder.name, "-c", str(ev), "--state-dir", str(sd), *target)
            assert done.returncode == 0, done.stderr
            outputs += [done.stdout, done.stderr]
    assert MASK in "".join(p.read_text() for p in tmp_path.glob("*-scores.json"))

    files = [p for p in tmp_path.rglob("*") if p.is_file() and p != ev]  # the test's own config names the URL
    assert len(files) >= 12
    written = {str(p): p.read_text(errors="replace") for p in files}
    secret_texts = (password, basic)
    assert [name for name, text in written.items() if leaked(key, text) or any(s in text for s in secret_texts)] == []
    assert [o[:200] for o in outputs if leaked(key, o) or any(s in o for s in secret_texts)] == []


# ---------------------------------------------------------------- property: any text a server sends

ESCAPES = ["\x1b]0;title\x07", "\x1b[2J", "\x1b]8;;http://x/\x1b\\", "\x1b]52;c;eA==\x07", "\x9b31m", "\x1bP1$r",
           "\x1b", "\x07", "\r", "\x00", "\x7f", "\x9d", "[bold]", "[/]", "\r\n", "\u2028", "\t"]
SERVER_TEXT = st.lists(st.one_of(st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
                                 st.sampled_from(ESCAPES)), max_size=12).map("".join)


@pytest.fixture(scope="module")
def shared_server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


@settings(deadline=None, max_examples=10, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=SERVER_TEXT)
def test_no_command_prints_a_control_character_whatever_a_server_sends(shared_server: LoopbackServer,
                                                                        text: str) -> None:
    """Arbitrary text (with escape sequences mixed in) as every reply, the judge's solution,
    the clarifying questions, the reported model name and an error body: nothing `run`,
    `show`, `list`, `report`, `context` or `watch` prints (JSON output included) holds a
    character in 0x00–0x08, 0x0B–0x1F or 0x7F–0x9F."""
    srv = shared_server
    srv.reply = hostile_reply(text or " ")
    # The first call (a clarifying question) fails with the text as its error body: a warning line.
    srv.faults = Faults(model_name=text, status_script=[200] * srv.calls + [400], error_message=text)
    with tempfile.TemporaryDirectory() as d:
        sd = Path(d) / "D"
        cfg = Path(d) / "moot.json"
        cfg.write_text(json.dumps({"debate": {"max_retries": 1, "clarify": True}}))
        r = cli("run", "Design a URL shortener", "--base-url", srv.base_url, "--headless", "-r", "1", "-a",
                "kiss,security", "-c", str(cfg), "--state-dir", str(sd))
        outputs = [r.stdout, r.stderr]
        assert r.returncode in (0, 3), r.stderr
        (folder,) = [p for p in sd.iterdir() if not p.name.startswith(".")]
        for argv in (["show", folder.name], ["show", folder.name, "--json"], ["list"],
                     ["report", folder.name, "--verbose"], ["watch", folder.name, "--headless"],
                     ["context", folder.name, "--round", "1", "--agent", "kiss"],
                     ["context", folder.name, "--round", "1", "--agent", "kiss", "--json"]):
            shown = cli(*argv, "--state-dir", str(sd))
            outputs += [shown.stdout, shown.stderr]
    assert [unsafe(o)[:3] for o in outputs if unsafe(o)] == []

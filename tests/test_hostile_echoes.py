"""A hostile server's text that hides or reorders itself on screen (Trojan Source), and the
client's key echoed back encoded, driven through the CLI against the loopback server."""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import sys
import threading
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from moot.core.safety.sanitize import UNSAFE, terminal_safe
from moot.core.safety.secrets import MASK
from tests.conftest import LoopbackServer, moot, read_jsonl
from tests.loopback import Faults, default_reply
from tests.test_bad_input import cli
from tests.test_control import WAIT_S, _env, command_id, wait_for
from tests.test_hostile import config, hostile_reply, only_debate, run

# ---------------------------------------------------------------- text that reorders itself

TROJAN = ('access = "user\u202e \u2066// admin only\u2069 \u2066"  zero\u200bwidth\ufeff mark\u200f '
          'tag\U000e0041\U000e0042 iso\u2067late\u2069 embed\u202bded\u202c sep\u2028line')
"""Trojan Source: an override and isolates that make code read differently from what it is,
zero-width and tag characters that hide text, a right-to-left mark, a line separator."""
SCRIPTS = "مرحبا بالعالم · שלום עולם · می\u200cخواهم · 👩\u200d💻 👨\u200d👩\u200d👧"
"""Text that must survive as it is: Arabic, Hebrew, a Persian ZWNJ, emoji joined with ZWJ."""


def test_bidi_and_zero_width_characters_never_reach_the_terminal(tmp_path: Path) -> None:
    """Every reply, the judge's solution, the model's name and an error body carry the Trojan
    Source characters: no command prints one (headless stdout, `show`, `report`, `context`,
    `list`, `watch`), letters of every script and emoji sequences stay, and the log keeps the
    raw text."""
    with LoopbackServer(reply=hostile_reply(f"{TROJAN} {SCRIPTS}"),
                        faults=Faults(model_name=TROJAN, status_script=[500], error_message=TROJAN)) as srv:
        sd = tmp_path / "D"
        r = run(srv, sd, config(tmp_path))
        assert r.returncode == 0, r.stderr
    folder = only_debate(sd)
    outputs = {"run": r.stdout + r.stderr}
    for argv in (["show", folder.name], ["show", folder.name, "--json"], ["report", folder.name, "--verbose"],
                 ["context", folder.name, "--round", "1", "--agent", "architect"],
                 ["context", folder.name, "--round", "1", "--agent", "architect", "--json"], ["list"],
                 ["watch", folder.name, "--headless"]):
        shown = cli(*argv, "--state-dir", str(sd))
        assert shown.returncode == 0, shown.stderr
        outputs[" ".join(argv[:1] + argv[2:])] = shown.stdout + shown.stderr
    assert {name: UNSAFE.findall(text)[:5] for name, text in outputs.items() if UNSAFE.findall(text)} == {}
    assert SCRIPTS in outputs["run"] and SCRIPTS in outputs["report --verbose"]
    assert 'access = "user // admin only "' in outputs["run"]
    assert "sep\nline" in outputs["run"]
    assert json.loads(outputs["show --json"])["rounds"][0]["contributions"][0]["content"].count("\u202e") == 1
    contents = [e["contribution"]["content"] for e in read_jsonl(folder / "events.jsonl")
                if e["type"] == "contribution_added"]
    assert contents and all(TROJAN in c for c in contents)


BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200b",
        "\u200c", "\u200d", "\u200e", "\u200f", "\u2028", "\u2029", "\ufeff", "\u2060", "\u00ad", "\U000e0041",
        "👩", "💻", "\ufe0f", "م", "ש", "क", "\u094d"]


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(st.one_of(st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=8),
                          st.sampled_from(BIDI)), max_size=24).map("".join))
def test_terminal_safe_leaves_no_reordering_character_and_every_letter(text: str) -> None:
    """Whatever the text (escape sequences aside: they go whole, tested above): nothing
    `UNSAFE` is left (so no bidi override, isolate or stray zero-width character), cleaning
    twice changes nothing more, and every letter, mark and digit is still there, in order."""
    safe = terminal_safe(text)
    assert UNSAFE.findall(safe) == []
    assert terminal_safe(safe) == safe
    kept = [ch for ch in text if unicodedata.category(ch)[0] in "LMN"]
    assert [ch for ch in safe if unicodedata.category(ch)[0] in "LMN"] == kept


def test_ctl_echoes_an_injected_note_without_its_override(tmp_path: Path) -> None:
    """`moot ctl ID inject` follows the log and prints the note as the debate took it: an
    RLO in the note is not printed, the note reaches the debate as written."""
    release = threading.Event()

    def reply(body: dict[str, Any], n: int) -> str:
        if n > 1:
            release.wait(WAIT_S)
        return default_reply(body, n)

    note = "Budget is \u202e€ 000,01\u202c per month; keep it."
    with LoopbackServer(reply) as srv:
        sd = tmp_path / "D"
        proc = subprocess.Popen([sys.executable, "-m", "moot", "run", "Design a URL shortener", "--headless", "-r",
                                 "2", "-a", "architect", "--base-url", srv.base_url, "--state-dir", str(sd)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=_env())
        try:
            wait_for(lambda: srv.calls > 1, "the second call to reach the server")
            folder = only_debate(sd)
            inject = moot("ctl", folder.name, "inject", note, "--state-dir", str(sd), "--wait", str(WAIT_S))
            release.set()
            assert proc.wait(timeout=WAIT_S) == 0
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert inject.returncode == 0, inject.stderr
    command_id(inject.stdout)
    assert UNSAFE.findall(inject.stdout + inject.stderr) == []
    assert "Budget is € 000,01 per month" in inject.stdout
    notes = [e for e in read_jsonl(folder / "events.jsonl") if e["type"] == "note_injected"]
    assert notes and notes[0]["note"]["text"] == note


# ---------------------------------------------------------------- keys echoed encoded


def test_a_key_echoed_encoded_in_a_401_body_is_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 401 body echoes the key Base64-encoded (standard and URL-safe, alone and inside
    `Basic user:key`), hex-encoded and reversed; a reply carries the same: none of it is
    printed or written, and the error line says the key was masked where it stood."""
    key = f"sk-proj-{secrets.token_hex(20)}"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    basic = base64.b64encode(f"moot:{key}".encode()).decode()
    echoes = "b64 {key_b64} url {key_b64url} hex {key_hex} rev {key_reversed} creds " + basic
    encoded = [base64.b64encode(key.encode()).decode().rstrip("="),
               base64.urlsafe_b64encode(key.encode()).decode().rstrip("="), key.encode().hex(), key[::-1],
               basic[8:-4]]

    def reply(body: dict[str, Any], n: int) -> str:
        return hostile_reply(f"Echo: {echoes}")(body, n)

    with LoopbackServer(reply, faults=Faults(status_script=[401], error_message="Incorrect API key: " + echoes)) as srv:
        failed = run(srv, tmp_path / "F", config(tmp_path))
        assert failed.returncode == 3, failed.stderr
        last = failed.stderr.splitlines()[-1]
        assert "401 from server" in last and last.count(MASK) >= 5, last
        srv.faults = Faults()
        ok = run(srv, tmp_path / "D", config(tmp_path))
        assert ok.returncode == 0, ok.stderr
    folder = only_debate(tmp_path / "D")
    outputs = [failed.stdout, failed.stderr, ok.stdout, ok.stderr]
    for argv in (["show", folder.name, "--json"], ["report", folder.name, "--verbose"]):
        outputs.append(cli(*argv, "--state-dir", str(tmp_path / "D")).stdout)
    written = [p.read_text() for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")]
    assert "Echo: b64 " + MASK in outputs[2]  # the masked echo is still there to see
    assert [e[:12] for e in encoded if any(e in text for text in outputs + written)] == []


def test_a_key_split_across_streamed_deltas_is_masked_while_it_streams(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The live view (the TUI, any subscriber of the session's events) gets the reply as it
    streams, five characters a delta: the key and its encoded forms, split across deltas, are
    masked there too, and the streamed text adds up to the reply as kept."""
    import asyncio

    from moot.core.config import Overrides, build_config
    from moot.core.session import SessionOptions, new_session

    key = f"sk-proj-{secrets.token_hex(20)}"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    encoded = [key, base64.b64encode(key.encode()).decode().rstrip("="), key.encode().hex(), key[::-1]]

    def reply(body: dict[str, Any], n: int) -> str:
        return hostile_reply("Echo: {key}, {key_b64}, {key_hex}, Bearer {key_reversed}; done.")(body, n)

    async def main(base_url: str) -> tuple[dict[str, str], list[str]]:
        cfg = build_config({"debate": {"max_retries": 0}},
                           Overrides(rounds=1, roles=["architect"], provider="openai", base_url=base_url))
        session = new_session("Design a URL shortener", cfg, SessionOptions(state_dir=tmp_path / "D"))
        sub = session.bus.subscribe("live view")
        sub.TOKEN_BACKLOG = 10**6
        state = await session.run()
        streamed: dict[str, str] = {}
        while not sub.queue.empty():
            e = sub.queue.get_nowait()
            if e is not None and e.type == "token":
                streamed[e.call_id] = ("" if e.restart else streamed.get(e.call_id, "")) + e.delta
        return streamed, [c.content for c in state.all_contributions()]

    with LoopbackServer(reply, chunk_chars=5) as srv:
        streamed, kept = asyncio.run(main(srv.base_url))
    assert len(streamed) >= 2 and all(text in streamed.values() for text in kept)
    assert all(f"Echo: {MASK}, {MASK}, {MASK}, Bearer {MASK}; done." in text for text in kept)
    assert [e[:12] for e in encoded if any(e in text for text in streamed.values())] == []


@pytest.mark.parametrize("text", ["a\x7fb", "\x7f", "plain \x9b31m", "\u202eevil", "ok"])
def test_json_output_escapes_del_c1_and_reordering_characters_and_keeps_the_values(text: str) -> None:
    """`--json` output: DEL is ASCII, so a document of ASCII text must still be escaped
    (a hypothesis example found `moot show --json` printing DEL as is)."""
    import json

    from moot.core.safety.sanitize import UNSAFE, json_safe

    doc = json.dumps({"content": text}, ensure_ascii=False)
    safe = json_safe(doc)
    assert not UNSAFE.search(safe)
    assert json.loads(safe) == {"content": text}

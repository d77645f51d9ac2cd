"""`moot serve`: the TUI through textual-serve, behind a token. The real command in a subprocess
on a loopback port: its page fetched with and without the token, and its websocket opened, which
starts the TUI in a process of its own and streams its screen."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import cli

aiohttp = pytest.importorskip("aiohttp", reason="moot serve needs the serve extra (textual-serve)")
pytest.importorskip("textual_serve", reason="moot serve needs the serve extra (textual-serve)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


async def screen_text(ws_url: str, want: bytes, origin: str | None = None) -> bytes:
    """What the served TUI sends over its websocket, until `want` shows up in it."""
    headers = {"Origin": origin} if origin else {}
    async with aiohttp.ClientSession() as session, session.ws_connect(ws_url, headers=headers) as ws:
        seen = b""
        async with asyncio.timeout(60):
            async for message in ws:
                if message.type == aiohttp.WSMsgType.BINARY:
                    seen += message.data
                if want in seen:
                    return seen
        return seen


def children_of(marker: str) -> list[int]:
    """Processes whose command line holds `marker` (the served TUIs share the test's state dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_the_page_needs_the_token_and_its_websocket_runs_the_tui(tmp_path: Path) -> None:
    port = free_port()
    sd = tmp_path / "served-debates"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY")}
    proc = subprocess.Popen([sys.executable, "-m", "moot", "serve", "--port", str(port), "--state-dir", str(sd)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(f"moot serve: the TUI on http://127.0.0.1:{port}/"), line + proc.stderr.read()
        url = line.split(" on ", 1)[1].strip()
        token = url.rstrip("/").rsplit("/", 1)[1]
        assert len(token) >= 20
        status, page = get(url)
        assert status == 200 and f"ws://127.0.0.1:{port}/{token}/ws" in page
        assert f"/{token}/static/js/textual.js" in page
        assert get(f"http://127.0.0.1:{port}/{token}/static/js/textual.js")[0] == 200
        # Near misses: the last character changed, the case of every letter changed (a token that
        # ended in "x", or had no letter, would otherwise be its own "near miss" one time in 64).
        wrong_end = token[:-1] + ("y" if token[-1] == "x" else "x")
        for path in ("/", "/ws", "/static/js/textual.js", f"/{wrong_end}/",
                     *([f"/{token.swapcase()}/"] if token.swapcase() != token else [])):
            status, body = get(f"http://127.0.0.1:{port}{path}")
            assert status == 403 and "needs the token" in body, path
        ws_url = f"ws://127.0.0.1:{port}/{token}/ws?width=100&height=30"
        shown = asyncio.run(screen_text(ws_url, b"saved debates in", origin=f"http://127.0.0.1:{port}"))
        assert b"saved debates in" in shown and b"no debates in" in shown
        for bad, origin in ((f"ws://127.0.0.1:{port}/ws", None), (ws_url, "http://evil.example")):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                asyncio.run(screen_text(bad, b"never", origin=origin))
            assert refused.value.status == 403
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 0
    assert children_of(str(sd)) == []  # no served TUI outlives the server


def test_run_args_become_the_served_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import moot.tui.serve as served

    seen: dict[str, object] = {}
    monkeypatch.setattr(served, "serve", lambda command, **kw: seen.update(command=command, **kw))
    r = cli("serve", "--port", "8123", "--state-dir", str(tmp_path), "Design a rate limiter", "--provider", "demo",
            "-r", "2")
    assert r.returncode == 0, r.stderr
    argv = shlex.split(str(seen["command"]))
    assert argv[1:] == ["-m", "moot", "run", "Design a rate limiter", "--provider", "demo", "-r", "2", "--state-dir",
                        str(tmp_path)]
    assert seen["host"] == "127.0.0.1" and seen["port"] == 8123 and len(str(seen["token"])) >= 20
    r = cli("serve", "--", "-p", "problem.md", "--provider", "demo")
    assert r.returncode == 0 and shlex.split(str(seen["command"]))[3:] == ["run", "-p", "problem.md", "--provider",
                                                                           "demo"]
    plain = cli("serve", "Design a rate limiter", "--plain")
    assert plain.returncode == 2 and plain.stderr.count("\n") == 1 and "--headless and --plain" in plain.stderr
    bad = cli("serve", "Design a rate limiter", "--rounds", "zero")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_a_warning_when_listening_beyond_this_machine(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from aiohttp import web

    import moot.tui.serve as served

    started: list[str] = []
    monkeypatch.setattr(web, "run_app", lambda app, host, **kw: (app.close(), started.append(host)))  # no bind
    served.serve("true", host="127.0.0.1", port=8124, token="t" * 24)
    assert capsys.readouterr().err == ""
    served.serve("true", host="0.0.0.0", port=8124, token="t" * 24)
    err = capsys.readouterr().err
    assert "WARNING: listening on 0.0.0.0" in err and "API keys" in err
    assert started == ["127.0.0.1", "0.0.0.0"]
    assert served.is_loopback("::1") and served.is_loopback("localhost") and served.is_loopback("127.0.0.2")
    assert not served.is_loopback("192.0.2.1") and not served.is_loopback("example.org")


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = cli("serve", "--port", str(port), "--state-dir", str(tmp_path))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in r.stderr


def test_sessions_past_the_cap_get_a_page_saying_so_and_a_plain_get_on_the_websocket_is_no_traceback(
        tmp_path: Path) -> None:
    """Every websocket started a TUI process, with no limit; a plain GET on the websocket's path
    printed textual-serve's traceback on stderr."""
    port = free_port()
    sd = tmp_path / "served-debates"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY")}
    proc = subprocess.Popen([sys.executable, "-m", "moot", "serve", "--port", str(port), "--max-sessions", "1",
                             "--state-dir", str(sd)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    origin = {"Origin": f"http://127.0.0.1:{port}"}

    async def one_open_and_the_rest_refused(url: str, ws_url: str) -> tuple[int, str, int, int]:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(ws_url, headers=origin) as first:
                seen = b""
                async with asyncio.timeout(60):
                    async for message in first:
                        if message.type == aiohttp.WSMsgType.BINARY:
                            seen += message.data
                        if b"saved debates in" in seen:
                            break
                status, page = await asyncio.to_thread(get, url)
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    async with session.ws_connect(ws_url, headers=origin):
                        pass
            async with asyncio.timeout(60):  # the first tab closed: its place is free again
                while (again := await asyncio.to_thread(get, url))[0] != 200:
                    await asyncio.sleep(0.1)
            return status, page, refused.value.status, again[0]

    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split(" on ", 1)[1].strip()
        status, body = get(url.rstrip("/") + "/ws")
        assert status == 400 and "open the address the server printed" in body
        status, page, ws_status, after = asyncio.run(
            one_open_and_the_rest_refused(url, url.replace("http://", "ws://").rstrip("/") + "/ws"))
        assert status == 503 and "1 sessions are open" in page and "--max-sessions 1" in page
        assert ws_status == 503 and after == 200
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    err = proc.stderr.read() if proc.stderr is not None else ""
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert children_of(str(sd)) == []

"""A window a server stated is remembered between runs: the second run starts without asking.

And what the first request needs is made once, whichever thread asks first (`moot.commands.warmup`).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path

import openai

from moot.core import tokens
from moot.core.providers import window_cache
from moot.core.providers.discovery import Stated
from moot.core.providers.window_cache import discover_remembered
from tests.conftest import moot, read_jsonl
from tests.loopback import LoopbackServer, ModelServer

PROBLEM = "Design a rate limiter for a public API that thousands of tenants share"
KEY = "sk-test-remembered-windows-0123456789abcdef"


def _run(srv: LoopbackServer, state_dir: Path) -> list[dict[str, object]]:
    r = moot("run", PROBLEM, "--headless", "-r", "1", "-a", "kiss", "--provider", "openai", "--base-url",
             srv.base_url, "--state-dir", str(state_dir), env={"OPENAI_API_KEY": KEY})
    assert r.returncode == 0, r.stderr
    (folder,) = [p for p in state_dir.iterdir() if p.is_dir()]
    return read_jsonl(folder / "events.jsonl")


def test_a_second_run_does_not_ask_the_server_for_its_window(tmp_path: Path) -> None:
    served = ModelServer(window=2048, style="llama.cpp")
    with LoopbackServer(model=served, reply_chars=800) as srv:
        first = _run(srv, tmp_path / "one")
        asked = list(srv.probes)
        second = _run(srv, tmp_path / "two")
        assert srv.probes == asked  # nothing asked the second time
        bodies, url = srv.requests, srv.base_url
    assert any(p.startswith("GET /props") for p in asked)
    for events in (first, second):
        learned = [e for e in events if e["type"] == "window_learned"]
        assert learned and learned[0]["window"] == 2048 and learned[0]["source"] == "discovered"
        views = [e["view"] for e in events if e["type"] == "call_started"]
        assert views and {v["window"] for v in views} == {2048}
    assert all(served.prompt_tokens(b) < 2048 for b in bodies)  # every request within the remembered window
    # Both runs know it is llama.cpp's server (the second from the entry): every request asks it to
    # keep the prompt and names the speaker's slot.
    assert bodies and all(b.get("cache_prompt") is True and isinstance(b.get("id_slot"), int) for b in bodies)
    saved = Path(os.environ["MOOT_WINDOW_CACHE"]).read_text()
    entry = json.loads(saved)["entries"][window_cache.entry_key(url, first[0]['agents'][0]['model'])]  # type: ignore[index]
    assert entry["window"] == 2048 and entry["slots"] == 4 and entry["llama_cpp"] is True
    assert KEY not in saved and "sk-" not in saved and url not in saved  # a hash, never an address or a key


def test_an_old_entry_is_asked_again_and_a_server_saying_nothing_is_remembered(tmp_path: Path) -> None:
    with LoopbackServer() as srv:  # answers /models without a window, 404 to /props and /api/show
        client = openai.AsyncOpenAI(api_key="unused", base_url=srv.base_url, max_retries=0)
        window_cache.remember(srv.base_url, "m", Stated(4096, None), now=time.time() - window_cache.MAX_AGE_S - 5)
        stated = asyncio.run(discover_remembered(client, srv.base_url, "m", 3.0))
        assert stated.window is None and stated.answered and len(srv.probes) == 3  # expired: asked again
        again = asyncio.run(discover_remembered(client, srv.base_url, "m", 3.0))
        assert again.window is None and len(srv.probes) == 3  # "states none" is remembered too


def test_a_probe_without_an_answer_is_not_remembered_and_a_bad_file_is_rewritten(tmp_path: Path) -> None:
    path = Path(os.environ["MOOT_WINDOW_CACHE"])
    path.write_text('{"version": 3, "entries": [')  # cut short: ignored, then replaced whole
    with LoopbackServer() as srv:
        url = srv.base_url
    client = openai.AsyncOpenAI(api_key="unused", base_url=url, max_retries=0)
    stated = asyncio.run(discover_remembered(client, url, "m", 1.0))  # the server is gone
    assert stated.window is None and not stated.answered
    assert window_cache.recall(url, "m") is None and path.read_text().endswith("[")
    window_cache.remember(url, "m", Stated(8192, 2))
    assert window_cache.recall(url, "m") == Stated(8192, 2)
    assert json.loads(path.read_text())["version"] == window_cache.VERSION


def test_an_encoding_asked_by_two_threads_at_once_is_built_once() -> None:
    tokens._loaded.pop("o200k_base", None)
    found: list[object] = []
    threads = [threading.Thread(target=lambda: found.append(tokens.get_encoding("o200k_base"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(found) == 4 and all(e is found[0] for e in found)
    assert tokens.count_text("Measure before optimising.", "gpt-4o") == len(found[0].encode_ordinary(  # type: ignore[attr-defined]
        "Measure before optimising."))

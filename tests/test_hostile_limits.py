"""A hostile server that never stops: window probes that drip, stream or flood without end,
and replies that ignore `max_tokens`. Each is driven through the CLI against the loopback
server misbehaving that way.

No test here times anything: a probe or a reply without a bound never ends, so the test
itself would hang (pytest-timeout fails it); what bounds memory is shown in bytes the
server managed to send before moot hung up.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moot.core.providers.capped import reply_text_cap
from moot.core.storage.folder import DebateFolder
from moot.core.tokens import count_text, truncate_to_tokens
from tests.conftest import LoopbackServer, read_jsonl
from tests.loopback import Faults, ModelServer, default_reply
from tests.test_bad_input import cli
from tests.test_control import wait_for
from tests.test_hostile import config, only_debate, run

pytestmark = pytest.mark.timeout(600)  # hang guards; a loaded machine is slow

# ---------------------------------------------------------------- window discovery


@pytest.mark.parametrize(("path", "mode"), [("/props", "drip"), ("/api/show", "stream"), ("/api/show", "flood"),
                                            ("/models", "flood")])
def test_a_window_probe_that_never_ends_means_window_unknown(tmp_path: Path, path: str, mode: str) -> None:
    """One probe answers without end (a byte a second, an event a fifth of a second, 1 MiB
    chunks): the run goes on with the window unknown, and moot hung up on the flood after
    its byte cap, not after the deadline (the server got few megabytes out, not hundreds)."""
    with LoopbackServer(faults=Faults(discovery={path: mode})) as srv:
        sd = tmp_path / "D"
        r = run(srv, sd, config(tmp_path))
        assert r.returncode == 0, r.stderr
        events = read_jsonl(only_debate(sd) / "events.jsonl")
        assert events[-1]["type"] == "debate_completed"
        assert not [e for e in events if e["type"] == "window_learned"]
        if mode == "flood":
            wait_for(lambda: srv.hangups, "the server to see moot hang up")
            assert srv.hangups == [path if path != "/models" else "/v1/models"]
            assert srv.sent[srv.hangups[0]] < 64 << 20, srv.sent  # the cap (≤ 4 MiB) plus socket buffers


def test_a_compressed_probe_answer_is_read_and_a_gzip_bomb_is_cut(tmp_path: Path) -> None:
    """moot decodes gzip itself, counting decoded bytes against the cap: a sound compressed
    `/props` states its window; one that inflates without end (1 MiB of spaces a kilobyte on
    the wire) is cut and states nothing, and the run goes on."""
    for mode, window in (("gzip", 3072), ("bomb", None)):
        with LoopbackServer(faults=Faults(discovery={"/props": mode})) as srv:
            sd = tmp_path / mode
            r = run(srv, sd, config(tmp_path))
            assert r.returncode == 0, r.stderr
            learned = [e["window"] for e in read_jsonl(only_debate(sd) / "events.jsonl")
                       if e["type"] == "window_learned"]
            assert learned == ([window] if window else []), (mode, learned)
            if mode == "bomb":
                wait_for(lambda: srv.hangups, "the server to see moot hang up")
                assert srv.hangups == ["/props"]


def test_the_other_probes_still_state_the_window_while_one_never_ends(tmp_path: Path) -> None:
    """The probes run at once: `/props` dripping forever does not keep vLLM's `/v1/models`
    from stating the window, which the run then uses."""
    served = ModelServer(window=4096, style="vllm")
    with LoopbackServer(model=served, faults=Faults(discovery={"/props": "drip", "/api/show": "stream"})) as srv:
        sd = tmp_path / "D"
        r = run(srv, sd, config(tmp_path))
        assert r.returncode == 0, r.stderr
        learned = [e for e in read_jsonl(only_debate(sd) / "events.jsonl") if e["type"] == "window_learned"]
        assert learned and learned[0]["source"] == "discovered" and learned[0]["window"] == 4096


# ---------------------------------------------------------------- replies without end


def test_a_reply_that_never_ends_is_clipped_at_its_byte_cap(tmp_path: Path) -> None:
    """A server streams prose as fast as it is read and never finishes: each call keeps what
    came before its cap (32 bytes a token of `max_tokens` plus 16 KiB), stops reading, says
    so (stderr, the log, `moot show`, the report) and the debate completes."""
    with LoopbackServer(faults=Faults(endless_reply=True)) as srv:
        sd = tmp_path / "D"
        r = run(srv, sd, config(tmp_path, timeout_s=600))
        assert r.returncode == 0, r.stderr
        assert "answer ran far past its limit of 1000 tokens; moot stopped reading it at 48,384 bytes" in r.stderr
        assert srv.hangups and set(srv.hangups) == {"/v1/chat/completions"}
    folder = only_debate(sd)
    state = DebateFolder(folder).load()
    cap = reply_text_cap(1000)
    for c in state.all_contributions():
        assert c.metadata.clipped_at == cap
        assert 0.9 * cap < len(c.content.encode()) <= cap
        assert c.metadata.usage_estimated  # the usage chunk never came
    shown = cli("show", folder.name, "--state-dir", str(sd))
    assert "clipped: architect proposal ran far past its token limit; moot stopped reading it at 48,384 bytes" \
        in shown.stdout
    assert json.loads(cli("show", folder.name, "--json", "--state-dir", str(sd)).stdout)["rounds"][0][
        "contributions"][0]["metadata"]["clipped_at"] == cap
    assert "moot stopped reading it at 48,384 bytes" in cli("report", folder.name, "--state-dir", str(sd)).stdout
    warnings = [e["message"] for e in read_jsonl(folder / "events.jsonl") if e["type"] == "warning"]
    assert any("stopped reading it at 48,384 bytes" in w for w in warnings)


def test_a_five_megabyte_reply_is_clipped_and_later_views_stay_small(tmp_path: Path) -> None:
    """The issue's case: a 5,243,162-character proposal from a call allowed 1000 tokens. It is
    kept to its cap, and the critiques and refinements that quote it send requests of a few
    thousand tokens, not megabytes."""
    with LoopbackServer(reply_chars=5_243_162, chunk_chars=65536) as srv:
        sd = tmp_path / "D"
        r = run(srv, sd, config(tmp_path, max_concurrency=1), agents="architect,kiss")
        assert r.returncode == 0, r.stderr
        bodies = srv.requests
    state = DebateFolder(only_debate(sd)).load()
    assert {c.metadata.clipped_at for c in state.all_contributions()} == {reply_text_cap(1000)}
    sizes = [sum(len(m["content"]) for m in b["messages"]) for b in bodies]
    assert len(sizes) >= 6 and max(sizes) < 64_000, sizes


def test_cutting_megabytes_to_a_few_tokens_reads_only_their_head() -> None:
    """`truncate_to_tokens` (what quoting a long message in a view uses) gives the same cut
    for a 5 MB text as for its first page, so its cost follows the limit, not the text."""
    text = default_reply({"messages": [{"role": "user", "content": "Design a cache"}]}, 1, reply_chars=5_000_000)
    cut = truncate_to_tokens(text, 300)
    assert cut == truncate_to_tokens(text[:20_000], 300)
    assert count_text(cut) <= 300 and text.startswith(cut) and len(cut) > 1000
    assert truncate_to_tokens("short text", 300) == "short text" and truncate_to_tokens("anything", 0) == ""
    spaces = " " * 100_000  # freak text: far more characters a token than any prose
    assert count_text(truncate_to_tokens(spaces, 10)) <= 10

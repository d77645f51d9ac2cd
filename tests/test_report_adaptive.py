"""`moot report --html` on an `adaptive` debate: every decision (why it stopped or debated, what
the step cost) closes its round, as in the markdown report, escaped like all model text."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from moot.core.storage.state_dir import StateDir
from tests.conftest import cli
from tests.loopback import LoopbackServer, arithmetic_reply


def test_the_html_report_shows_each_adaptive_decision(tmp_path: Path) -> None:
    sd = tmp_path / "d"
    with LoopbackServer(arithmetic_reply(0.35)) as srv:
        r = cli("bench", "arithmetic:2:terms=3", "--protocols", "adaptive", "--provider", "openai", "--base-url",
                srv.base_url, "--model", "loop", "--headless", "--state-dir", str(sd), "-o", str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr
    kinds = set()
    for row in json.loads((tmp_path / "r.json").read_text())["results"]:
        state = StateDir(sd).open(row["debate_id"]).load()
        assert state.adaptive
        page = cli("report", state.id, "--html", "--state-dir", str(sd))
        assert page.returncode == 0, page.stderr
        text = re.sub(r"<[^>]+>", "", page.stdout)  # the words a reader sees
        shown = re.findall(r"Adaptive decision after round (\d+):", text)
        assert shown == [str(d.round) for d in state.adaptive]
        for d in state.adaptive:
            kinds.add(d.decision)
            assert html.escape(d.reason, quote=False) in page.stdout
            assert f"this {d.step} cost {d.calls} call" in text and f"{d.tokens:,} tokens" in text
    assert "debate" in kinds  # a model right a third of the time: some question was debated

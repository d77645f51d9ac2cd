"""What each summary lost, wherever a debate is read after the fact: `moot report` (Markdown and
HTML) lists the facts a summary dropped under it, escaped; `moot trace` carries how many facts it
found, kept and dropped on the summary's span.

One conversation through the CLI against the loopback server, with prose replies; an early reply
state measurements whose text carries markup and a terminal escape.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from moot.core.models.state import DebateState, Summary
from moot.core.storage.folder import DebateFolder
from tests.conftest import LoopbackServer, cli
from tests.prose import reply, turn_of
from tests.test_recall import KEY, run, write_config

HOSTILE = ("The soak test measured {n} MB per upload at the <script>alert('x')</script> proxy, "
           "in \x1b[31mthe storage edge\x1b[0m.")


def answer(body: dict[str, Any], n: int) -> str:
    turn = turn_of(body) or n
    text = reply(turn * 31 + 7, 500).text
    return f"{text}\n\n{HOSTILE.format(n=20 + turn)}" if turn in (2, 3, 4, 5) else text


@pytest.fixture(scope="module")
def debate(tmp_path_factory: pytest.TempPathFactory) -> tuple[DebateState, DebateFolder]:
    tmp = tmp_path_factory.mktemp("dropped")
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", KEY)
    try:
        with LoopbackServer(reply=answer) as srv:
            _, folder = run(srv, tmp, write_config(tmp, turns=12))
    finally:
        mp.undo()
    return folder.load(), folder


def summaries(state: DebateState) -> list[Summary]:
    return [s for r in state.rounds for s in [*r.replaced_summaries, *r.summaries.values()]]


def test_the_report_lists_each_fact_a_summary_dropped_escaped(debate: tuple[DebateState, DebateFolder]) -> None:
    state, folder = debate
    made = summaries(state)
    lost = [f for s in made for f in s.dropped_facts or []]
    assert lost and any("<script>" in f.text for f in lost)  # a hostile measurement is among them
    sd = str(folder.path.parent)
    md = cli("report", folder.id, "--state-dir", sd)
    assert md.returncode == 0, md.stderr
    for s in made:
        assert s.metadata.facts is not None and s.metadata.facts_kept is not None
        assert f"_Kept {s.metadata.facts_kept} of {s.metadata.facts} facts of what it covered" in md.stdout
    for f in lost:
        if "<script>" not in f.text:
            assert f"{f.text} ({f.source})" in md.stdout
    listed = [line for line in md.stdout.splitlines() if line.startswith(("- number: ", "- decision: ", "- open "))]
    assert len(listed) >= len(lost)
    hostile = [line for line in listed if "script" in line]
    assert hostile and all("\x1b" not in line and "<script>" not in line for line in hostile)
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in hostile[0]

    page = cli("report", folder.id, "--html", "--state-dir", sd)
    assert page.returncode == 0, page.stderr
    assert page.stdout.count('<ul class="dropped-facts">') == sum(1 for s in made if s.dropped_facts)
    for f in lost:
        if "<script>" not in f.text:
            assert html.escape(f.text, quote=True) in page.stdout
    assert "\x1b" not in page.stdout and "<script>" not in page.stdout
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page.stdout


def test_the_trace_counts_the_facts_each_summary_found_kept_and_dropped(
        debate: tuple[DebateState, DebateFolder], tmp_path: Path) -> None:
    state, folder = debate
    out = tmp_path / "trace.json"
    done = cli("trace", folder.id, "--state-dir", str(folder.path.parent), "-o", str(out))
    assert done.returncode == 0, done.stderr
    spans = json.loads(out.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]

    def attrs(span: dict[str, Any]) -> dict[str, Any]:
        return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}

    by_id = {attrs(s).get("moot.summary.id"): attrs(s) for s in spans if "moot.summary.id" in attrs(s)}
    made = summaries(state)
    assert made and set(by_id) == {s.id for s in made}
    for s in made:
        a = by_id[s.id]
        found, kept = s.metadata.facts, s.metadata.facts_kept
        assert found is not None and kept is not None
        assert (int(a["moot.summary.facts_found"]), int(a["moot.summary.facts_kept"]),
                int(a["moot.summary.facts_dropped"])) == (found, kept, found - kept)
    assert any(int(a["moot.summary.facts_dropped"]) > 0 for a in by_id.values())

"""`moot report ID --html`: one self-contained page, parsed for its structure, fed hostile text,
and drawn by a real browser (headless Chromium; skipped where none is installed)."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from moot.core.context.inspect import calls_for
from moot.core.models.state import DebateState
from moot.core.report.html import render_html
from moot.core.safety.sanitize import UNSAFE, terminal_safe
from moot.core.storage.folder import DebateFolder
from tests.browser import dump_dom, ink, screenshot
from tests.conftest import cli, run_debate
from tests.loopback import LoopbackServer, _last_user_text

CONFIG = {"debate": {"summarization": {"threshold": 500}}}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Page(HTMLParser):
    """The page's elements: tag counts, attributes, nesting errors, and the text of every
    `<pre>` with the ids of the elements around it."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: Counter[str] = Counter()
        self.attrs: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[tuple[str, str | None]] = []
        self.errors: list[str] = []
        self.pres: list[tuple[str, tuple[str, ...]]] = []
        self._pre: list[str] | None = None
        self.text_parts: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        self.attrs.append((tag, dict(attrs)))
        if tag in VOID:
            return
        self.stack.append((tag, dict(attrs).get("id")))
        if tag == "pre":
            self._pre = []

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        self.attrs.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1][0] if self.stack else 'nothing'}")
            return
        if tag == "pre" and self._pre is not None:
            self.pres.append(("".join(self._pre), tuple(i for _, i in self.stack if i)))
            self._pre = None
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text_parts.append(data)
        if self._pre is not None:
            self._pre.append(data)

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.attrs if a.get("id")}  # type: ignore[misc]

    def pres_in(self, element_id: str) -> list[str]:
        return [text for text, ids in self.pres if element_id in ids]


@pytest.fixture(scope="module")
def debate(tmp_path_factory: pytest.TempPathFactory) -> tuple[DebateState, DebateFolder]:
    """A finished 2-round demo debate with summaries."""
    state, folder = asyncio.run(run_debate(tmp_path_factory.mktemp("html"), config=CONFIG, rounds=2))
    assert state.status == "completed" and any(r.summaries for r in state.rounds)
    return state, folder


def self_contained(page: Page) -> None:
    """No script, no fetch: nothing that loads a resource, and every link stays in the page
    or is one a person would have to click."""
    assert page.tags["script"] == 0 and page.tags["img"] == 0 and page.tags["link"] == 0
    assert page.tags["iframe"] == 0 and page.tags["object"] == 0 and page.tags["style"] == 1
    for tag, attrs in page.attrs:
        assert "src" not in attrs and "srcset" not in attrs, tag
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
    csp = next(a["content"] for t, a in page.attrs if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert csp is not None and "default-src 'none'" in csp


def test_the_page_holds_every_part_of_the_debate(debate: tuple[DebateState, DebateFolder]) -> None:
    state, _ = debate
    text = render_html(state)
    assert text.startswith("<!DOCTYPE html>")
    page = Page(text)
    assert page.errors == [] and page.stack == []
    self_contained(page)
    ids = page.ids()
    for section in ("problem", "agents", "steps", "synthesis", "costs", "what-they-saw"):
        assert section in ids
    assert "DEMO" in page.text and "Design a URL shortener" in page.text
    # Every round collapsible, every contribution in one <details> of its own, each summary with what it covered.
    contributions = state.all_contributions()
    assert {f"round-{r.number}" for r in state.rounds} <= ids
    assert sum(1 for i in ids if i.startswith("c-")) == len(contributions)
    summaries = [s for r in state.rounds for s in r.summaries.values()]
    assert summaries and page.text.count("Summary for ") >= len(summaries)
    assert "Covers " in page.text and " items: r1 proposal" in page.text
    assert state.final_solution is not None
    assert f"Confidence: {state.final_solution.confidence}/100 · synthesized by judge" in page.text
    assert f"${state.totals.cost_usd:.4f}" in page.text
    assert page.tags["details"] >= len(contributions) + len(state.rounds)


def test_each_agent_section_shows_what_moot_context_prints(debate: tuple[DebateState, DebateFolder]) -> None:
    """The messages under an agent's section are those of `moot context` for each of its calls."""
    state, _ = debate
    page = Page(render_html(state))
    for agent in state.agents:
        anchor = f"saw-{agent.id}"
        shown = page.pres_in(anchor)
        calls = [c for r in state.rounds for c in calls_for(state, r.number, agent.id)]
        assert calls and len(shown) == sum(len(c["messages"]) for c in calls) - len(calls) + 1  # one shared system
        for call in calls:
            for message in call["messages"]:
                assert terminal_safe(message["content"]) in shown
    judge = page.pres_in("saw-judge")
    assert any("synthes" in p.lower() for p in judge)


def test_max_calls_keeps_the_latest_and_says_how_to_see_the_rest(debate: tuple[DebateState, DebateFolder]) -> None:
    state, _ = debate
    page = Page(render_html(state, max_calls=2))
    assert "--max-calls" in page.text and f"moot context {state.id} --round N --agent architect" in page.text
    assert page.errors == []


HOSTILE = ("<script>alert('x')</script> </details></summary></section><img src=http://evil.example/t.png "
           "onerror=alert(1)> \x1b]0;pwned\x07\x1b[2J rlo\u202eolr\u202c iso\u2066late\u2069 zero\u200bwidth "
           "[link](javascript:alert(1)) ![pixel](http://evil.example/p.png) key {key}")


def hostile_server_reply(body: dict[str, Any], n: int) -> str:
    ask = _last_user_text(body).lower()
    if "json" in ask and "confidence" in ask:
        return json.dumps({"solution": f"# Solution\n\n{HOSTILE}", "confidence": 60, "tradeoffs": [HOSTILE],
                           "recommendations": [HOSTILE], "unresolved": [HOSTILE]})
    return (f"# Reply {n}\n\nThe design keeps one database and a cache in front of it, as the load allows. "
            f"{HOSTILE}\n\n- the write path stays synchronous\n- reads go through the cache")


KEY = "sk-test-html-report-9f8e7d6c5b4a3210"


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """A debate against a loopback server whose every reply is hostile and echoes the key, run and
    reported through the CLI; the page's text and its path."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    sd = tmp_path / "debates"
    with LoopbackServer(reply=hostile_server_reply) as server:
        run = cli("run", f"Design a URL shortener {HOSTILE.replace('{key}', KEY)}", "--base-url", server.base_url,
                  "--headless", "-r", "1", "-a", "architect,kiss", "--state-dir", str(sd))
    assert run.returncode == 0, run.stderr
    debate_id = next(p.name for p in sd.iterdir() if not p.name.startswith("."))
    out = tmp_path / "debate.html"
    report = cli("report", debate_id, "--html", "-o", str(out), "--state-dir", str(sd))
    assert report.returncode == 0 and report.stdout == "" and str(out) in report.stderr
    state = DebateFolder(sd / debate_id).load()
    assert state.totals.cost_usd > 0  # priced as the model the server answered for
    text = out.read_text(encoding="utf-8")
    assert f"cost ${state.totals.cost_usd:.4f}" in Page(text).text
    return text, out


def test_hostile_text_is_escaped_and_keys_are_masked(hostile: tuple[str, Path]) -> None:
    text, _ = hostile
    page = Page(text)
    assert page.errors == [] and page.stack == []
    self_contained(page)
    assert KEY not in text and KEY[3:] not in text
    assert UNSAFE.findall(text) == []
    assert "\x1b" not in text and "\u202e" not in text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text
    assert "&lt;/details&gt;&lt;/summary&gt;" in text
    assert "javascript:" not in [a.get("href", "") for _, a in page.attrs]
    assert not any((a.get("href") or "").startswith("javascript") for _, a in page.attrs)
    assert "<script>" in page.text  # shown as text, to the reader


def test_a_browser_draws_the_page_and_builds_the_same_structure(hostile: tuple[str, Path],
                                                               tmp_path: Path) -> None:
    """Headless Chromium: the DOM it builds from the hostile page has no script and no image, and
    as many `<details>` as we wrote (a `</details>` in a reply closed nothing); the screenshot
    is a drawn page, not a blank one."""
    text, path = hostile
    dom = Page(dump_dom(path.as_uri(), tmp_path))
    ours = Page(text)
    assert dom.tags["script"] == 0 and dom.tags["img"] == 0
    assert dom.tags["details"] == ours.tags["details"] > 0
    assert dom.tags["section"] == ours.tags["section"]
    shot = screenshot(path.as_uri(), tmp_path / "page.png", size=(900, 700))
    share, colours = ink(shot)
    assert share > 0.02 and colours > 16, (share, colours)


def test_cli_html_to_stdout_and_bad_flags(debate: tuple[DebateState, DebateFolder]) -> None:
    state, folder = debate
    sd = str(folder.path.parent)
    out = cli("report", state.id, "--html", "--state-dir", sd)
    assert out.returncode == 0 and out.stdout == render_html(folder.load())
    bad = cli("report", state.id, "--max-calls", "3", "--state-dir", sd)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--html" in bad.stderr


@pytest.mark.parametrize("protocol", ["vote", "council"])
def test_votes_and_rankings(tmp_path: Path, protocol: str) -> None:
    """A vote's answers and counts, a council's mean ranks and each ranking's anonymized labels."""
    config = {"debate": {"protocol": protocol, "answer": {"kind": "number"}}}
    state, _ = asyncio.run(run_debate(tmp_path, "What is 17 * 23?", config=config, rounds=None))
    tally = state.final_solution.tally if state.final_solution else None
    assert tally is not None
    page = Page(render_html(state))
    assert page.errors == [] and "votes" in page.ids()
    assert f"Decided: {tally.summary()}" in page.text
    if protocol == "vote":
        assert tally.winner is not None and tally.counts[tally.winner] >= 2
        assert "AnswerVotes" in page.text.replace("\n", "") and tally.winner in page.text
    else:
        assert tally.ranks and "Mean rank (1 = best)" in page.text
        rankings = [c for c in state.all_contributions() if c.type == "ranking"]
        assert rankings and page.text.count("Anonymized as: Response A = ") == len(rankings)


def test_empty_headings_are_dropped_and_a_json_reply_is_shown_as_escaped_code(
        debate: tuple[DebateState, DebateFolder]) -> None:
    from tests.test_report import CUT_JSON, _with_empty_headings_and_a_json_reply

    page_text = render_html(_with_empty_headings_and_a_json_reply(debate[0]))
    assert re.findall(r"<h[1-6][^>]*>\s*</h[1-6]>", page_text) == []
    page = Page(page_text)
    assert page.errors == []
    assert CUT_JSON in page.pres_in("synthesis")  # as written, in a <pre>
    assert "&lt;b&gt;Postgres&lt;/b&gt;" in page_text and "<b>Postgres</b>" not in page_text


def test_code_like_names_in_a_reply_survive_as_written(debate: tuple[DebateState, DebateFolder]) -> None:
    """Python's double-underscore names are code, not emphasis; emphasis a model meant stays."""
    state = debate[0].model_copy(deep=True)
    state.rounds[0].contributions[0].content = (
        "Put the version in pkg/__init__.py and read it back as pkg.__version__, so the __main__ "
        "module and the tests agree. This is __Important__ and **bold** as the author meant it.")
    page_text = render_html(state)
    page = Page(page_text)
    assert page.errors == []
    for name in ("pkg/__init__.py", "pkg.__version__", "the __main__ module"):
        assert name in page.text, name
    assert "<strong>init</strong>" not in page_text and "<strong>version</strong>" not in page_text
    assert "<strong>Important</strong>" in page_text and "<strong>bold</strong>" in page_text

"""`moot report ID --html`: a saved debate as one self-contained HTML file.

Everything is in the file: the style sheet is inline, there are no scripts (collapsible parts
are `<details>`), no web fonts and no images, and a Content-Security-Policy forbids the page
any fetch, so it opens the same offline, attached to a mail or from an archive. Rendered from
the folded DebateState alone, like the markdown report (`markdown.py`), which it follows section
by section, and adds to: what every summary covered, the tool calls and what was read, votes
and rankings where a protocol has them, and a section per agent with the exact messages of
each of its calls (`html_views.py`).

Like the markdown report, a long debate's page is written a step at a time as its steps are
read back from the log (`html_chunks`): what a summary covers is worked out from the
perspectives seen so far (`covered.py`), each agent's latest calls are kept as they go by, and
the index that rebuilds their messages holds only what those calls saw.

Just over 400 lines: the page's sections follow the markdown report's outline one to one, and
splitting them would put one document's order in two places; the per-agent calls already live
in `html_views.py` and the dropped facts in `dropped.py`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..context.index import DebateIndex
from ..context.log_index import bare_index
from ..models.provider_kinds import kind_of
from ..models.state import Contribution, DebateState, Round, Summary, Usage, ViewRecord
from .covered import Covered
from .dropped import facts_html
from .experiments import by_call
from .html_parts import STYLE, Html, anchor_id, collapsible, count, table, usd
from .html_views import Calls, agent_anchor, agent_views, people
from .markdown import STATUS_TEXT, _adaptive_text, looks_like_json, uses_demo

if TYPE_CHECKING:
    from ..experiments import Experiment

CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'"
"""No fetch of any kind, no script; only the inline style sheet."""

TYPE_WORDS = {"proposal": "Proposal", "critique": "Critique", "refinement": "Refinement", "answer": "Answer",
              "message": "Turn", "ranking": "Ranking"}
RANKING: frozenset[str] = frozenset({"rank", "ranking"})
"""A council's ranking phase and the contributions it makes (the `council` protocol)."""
ViewsIndex = Callable[[list[ViewRecord]], DebateIndex]
"""Builds the index that rebuilds the messages of the calls shown (those records)."""
ORDER = {"proposal": 0, "answer": 0, "message": 0, "critique": 1, "ranking": 1, "refinement": 2}


def render_html(state: DebateState, secrets: Sequence[str] = (), max_calls: int | None = None) -> str:
    """The whole debate as one HTML document (pure: no provider, no network, no file read).

    `secrets` are masked wherever they appear; `max_calls` keeps only each agent's latest calls
    in the section of what it saw (None: every call)."""
    return "".join(html_chunks(state, secrets=secrets, max_calls=max_calls))


def html_chunks(state: DebateState, steps: Iterable[Round] | None = None, secrets: Sequence[str] = (),
                max_calls: int | None = None, views_index: ViewsIndex | None = None,
                experiments: Iterable[Experiment] = ()) -> Iterator[str]:
    """The document in consecutive pieces, a step (then a call) at a time, so a long debate's
    page is written without being held: `steps` are the debate's steps (default: those `state`
    holds; a long debate's come from `DebateFolder.steps()`), and `views_index` builds the index
    that rebuilds the shown calls' messages (default: one over `state`; for a folder,
    `log_index.index_for_records` reads just what those calls saw from the log); `experiments`
    (the folder's re-runs) are shown under the calls they vary."""
    h = Html(secrets)
    title = _title(state)
    yield ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
           '<meta name="referrer" content="no-referrer">'
           '<meta name="viewport" content="width=device-width, initial-scale=1">'
           f"<title>{h.text('moot · ' + title)}</title><style>{STYLE}</style></head>\n<body><main>\n")
    for section in (_header(h, state, title), _toc(h, state), _problem(h, state), _agents(h, state),
                    _tools(h, state), _clarifications(h, state)):
        if section:
            yield section + "\n"
    covered = Covered(state, bare_index(state))
    calls = Calls({p.id for p in people(state)}, max_calls)
    yield from _steps(h, state, state.rounds if steps is None else steps, covered, calls)
    for section in (_votes(h, state), _synthesis(h, state, covered), _costs(h, state)):
        if section:
            yield section + "\n"
    index = views_index(calls.shown()) if views_index is not None else DebateIndex(state)
    yield from agent_views(h, state, calls, index, by_call(experiments))
    yield "</main></body></html>\n"


def _title(state: DebateState) -> str:
    first = next((line.strip() for line in state.problem.splitlines() if line.strip()), "")
    return first.lstrip("#").strip() or state.id


def _step_word(state: DebateState) -> str:
    return "turn" if state.protocol == "conversation" else "round"


# --------------------------------------------------------------------------- top of the page


def _header(h: Html, state: DebateState, title: str) -> str:
    status = STATUS_TEXT.get(state.status, state.status)
    if state.error:
        status += f" — {'by ' if state.status == 'interrupted' else ''}{state.error}"
    created = time.strftime("%Y-%m-%d %H:%M", time.localtime(state.created_at))
    word = _step_word(state)
    out = [f"<header><h1>Debate report: {h.text(title)}</h1>",
           f'<p class="meta"><strong>Status:</strong> {h.text(status)} · <strong>Protocol:</strong> '
           f"{h.text(state.protocol)} · <strong>{word.capitalize()}s:</strong> "
           f"{state.round_count}/{state.total_rounds}"
           f" · <strong>Debate:</strong> <code>{h.text(state.id)}</code> · <strong>Created:</strong> {created}</p>"]
    if uses_demo(state):
        out.append('<p class="banner">DEMO — agents in this debate used the offline demo provider: every answer '
                   "below is scripted, not written by a language model.</p>")
    return "".join(out) + "</header>"


def _toc(h: Html, state: DebateState) -> str:
    links = [("problem", "Problem"), ("agents", "Agents")]
    if getattr(state, "tools", None) is not None:
        links.append(("references", "References and tools"))
    if state.clarifications:
        links.append(("clarifications", "Clarifications"))
    links.append(("steps", "Transcript" if state.protocol == "conversation" else "Rounds"))
    if _tally(state) is not None:
        links.append(("votes", "Votes and rankings"))
    links += [("synthesis", "Final synthesis"), ("costs", "Tokens and cost"), ("what-they-saw", "What each agent saw")]
    items = "".join(f'<li><a href="#{a}">{h.text(label)}</a></li>' for a, label in links)
    agents = "".join(f'<li><a href="#{agent_anchor(p.id)}">{h.text(p.name)}</a></li>' for p in people(state))
    return (f'<nav class="toc"><strong>Contents</strong><ul>{items}</ul>'
            f"<strong>Per agent</strong><ul>{agents}</ul></nav>")


def _problem(h: Html, state: DebateState) -> str:
    return f'<section id="problem"><h2>Problem</h2>{h.markdown(state.problem, 3)}</section>'


def _agents(h: Html, state: DebateState) -> str:
    rows = []
    for p in people(state):
        judge = state.judge is not None and p.id == state.judge.id
        name = f'<a href="#{agent_anchor(p.id)}">{h.text(p.name)}</a>'
        name += ' <span class="tag">judge</span>' if judge else ""
        provider = kind_of(p.provider).show()
        cells = [h.text(p.id), name, h.text(p.role), h.text(p.model), h.text(provider),
                 h.text(f"{p.temperature:g}"), count(p.budget)]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells[:-1]) + f'<td class="num">{cells[-1]}</td></tr>')
    head = "".join(f"<th>{c}</th>" for c in ("Id", "Name", "Role", "Model", "Provider", "Temperature"))
    return (f'<section id="agents"><h2>Agents</h2><table><thead><tr>{head}<th class="num">View budget</th></tr>'
            f"</thead><tbody>{''.join(rows)}</tbody></table></section>")


def _tools(h: Html, state: DebateState) -> str:
    """The references and tools the agents had (debates run with `--ref` or MCP servers)."""
    setup: Any = getattr(state, "tools", None)
    if setup is None:
        return ""
    out = ['<section id="references"><h2>References and tools</h2>']
    roots = list(getattr(setup, "roots", []))
    refs = list(getattr(setup, "references", []))
    out.append(f"<p>{count(len(refs))} reference files under {h.text(', '.join(roots) or '(none)')}.</p>")
    if refs:
        out.append(collapsible(h.text(f"Reference files ({len(refs)})"),
                               table(h, ["Path", "Bytes"], [(r.path, count(r.size)) for r in refs], numeric=(1,))))
    skipped = dict(getattr(setup, "skipped", {}))
    if skipped:
        out.append(collapsible(h.text(f"Left out ({len(skipped)})"), table(h, ["Path", "Why"], skipped.items())))
    servers = list(getattr(setup, "servers", []))
    if servers:
        out.append(table(h, ["Tool server", "Tools offered", "Withheld", "Error"],
                         [(s.name, ", ".join(s.tools) or "—", ", ".join(s.withheld) or "—", s.error or "—")
                          for s in servers]))
    agents = dict(getattr(setup, "agents", {}))
    if agents:
        out.append(table(h, ["Agent", "Reads references through"], agents.items()))
    return "".join(out) + "</section>"


def _clarifications(h: Html, state: DebateState) -> str:
    if not state.clarifications:
        return ""
    items = "".join(f"<li><strong>{h.text(c.agent_id)}</strong> asked: {h.text(c.question)}<br>"
                    f"Answer: {h.text(c.answer.strip()) if c.answer.strip() else '<em>(no answer)</em>'}</li>"
                    for c in state.clarifications)
    return f'<section id="clarifications"><h2>Clarifications</h2><ul>{items}</ul></section>'


# --------------------------------------------------------------------------- rounds and turns


def _steps(h: Html, state: DebateState, steps: Iterable[Round], covered: Covered, calls: Calls) -> Iterator[str]:
    conversation = state.protocol == "conversation"
    yield f'<section id="steps"><h2>{"Transcript" if conversation else "Rounds"}</h2>'
    names = {p.id: p.name for p in people(state)}
    for rnd in steps:
        covered.add(rnd.contributions)
        calls.add(rnd.calls)
        body = _summaries(h, state, covered, rnd) + _contributions(h, state, rnd, names) + _after(h, state, rnd.number)
        if conversation:
            yield body
            continue
        kinds: dict[str, int] = {}
        for c in rnd.contributions:
            kinds[c.type] = kinds.get(c.type, 0) + 1
        what = ", ".join(f"{n} {TYPE_WORDS.get(t, t).lower()}{'s' if n != 1 else ''}" for t, n in kinds.items())
        summaries = len(rnd.summaries) + len(rnd.replaced_summaries)
        what += f"; {summaries} summar{'ies' if summaries != 1 else 'y'}" if summaries else ""
        head = f'<strong>Round {rnd.number}</strong> <span class="muted">{h.text(what or "nothing recorded")}</span>'
        yield collapsible(head, body or '<p class="muted">No contributions recorded in this round.</p>',
                          open_=True, anchor=f"round-{rnd.number}")
    yield "</section>\n"


def _contributions(h: Html, state: DebateState, rnd: Round, names: dict[str, str]) -> str:
    rank_views = {v.call_id: v for v in rnd.calls if v.phase in RANKING}
    authors = {c.id: c.agent_id for c in rnd.contributions}
    out: list[str] = []
    for c in sorted(rnd.contributions, key=lambda c: ORDER.get(c.type, 3)):
        out.append(_contribution(h, state, c, names, rank_views, authors))
    return "".join(out)


def _contribution(h: Html, state: DebateState, c: Contribution, names: dict[str, str],
                  rank_views: dict[str, Any], authors: dict[str, str]) -> str:
    word = TYPE_WORDS.get(c.type, c.type.capitalize())
    name = names.get(c.agent_id, c.agent_id)
    who = name if name.lower() == c.agent_id.lower() else f"{name} ({c.agent_id})"
    if c.type == "critique":
        who += f" → {c.target_agent_id or '?'}"
    step = f"turn {c.round}" if c.type == "message" else f"round {c.round}"
    m = c.metadata
    size = "carried over" if c.carried_from else f"{count(m.completion_tokens)} tokens out"
    head = f"<strong>{h.text(word)}</strong> · {h.text(who)} <span class=\"muted\">· {step} · {size}</span>"
    body: list[str] = []
    if c.carried_from:
        body.append(f'<p class="note">Carried over from its previous refinement ({h.text(c.carried_from)}); '
                    "no new call.</p>")
    if m.clipped_at is not None:
        body.append(f'<p class="note">The answer ran far past its output limit; moot stopped reading it at '
                    f"{count(m.clipped_at)} bytes.</p>")
    elif m.server_truncated:
        body.append('<p class="note">The server ended the answer early: the request filled its context window.</p>')
    elif m.finish_reason == "length":
        body.append('<p class="note">The answer was cut at its output limit.</p>')
    view = rank_views.get(m.call_id or "") if c.type in RANKING else None
    if view is not None:  # a council's anonymized labels, revealed to the reader
        labels = ", ".join(f"Response {chr(65 + k)} = {authors.get(i, '?')}"
                           for k, i in enumerate(view.task_contribution_ids))
        body.append(f'<p class="note">Anonymized as: {h.text(labels)}.</p>')
    body.append(h.markdown(c.content, 4))
    reads = list(getattr(c, "reads", []))
    if reads:
        body.append(collapsible(h.text(f"What it read with tools ({len(reads)})"),
                                "<ul>" + "".join(f"<li>{h.text(r)}</li>" for r in reads) + "</ul>"))
    if not c.carried_from:
        cost = f" · {usd(m.cost_usd)}" if m.cost_usd else ""
        tries = f" · {m.attempts} attempts" if m.attempts > 1 else ""
        body.append(f'<p class="muted">model {h.text(m.model or "n/a")} · {count(m.prompt_tokens)} prompt + '
                    f"{count(m.completion_tokens)} completion tokens · {m.latency_ms} ms{cost}{tries}</p>")
    return collapsible(head, "".join(body), anchor=anchor_id("c", c.id))


def _summaries(h: Html, state: DebateState, covered: Covered, rnd: Round) -> str:
    summaries = [*rnd.replaced_summaries, *rnd.summaries.values()]
    if not summaries:
        return ""
    replaced = {s.id for s in rnd.replaced_summaries}
    rows = []
    for s in summaries:
        m = s.metadata
        who = s.agent_id + (" (replaced later)" if s.id in replaced else "")
        trigger = f"{s.trigger}: {s.focus}" if s.focus else s.trigger
        rows.append((who, trigger, f"{s.method}/{s.strategy}", f"{count(m.before_tokens)} → {count(m.after_tokens)}",
                     covered.text(s), m.fallback_reason or "—"))
    where = f"Rolling summary before turn {rnd.number}" if state.protocol == "conversation" else "Summaries"
    out = [f"<h3>{where}</h3>",
           table(h, ["Agent", "Trigger", "Method/strategy", "Tokens before → after", "Covers", "Fallback"], rows)]
    out += [_summary_text(h, covered, s) for s in summaries]
    return "".join(out)


def _summary_text(h: Html, covered: Covered, s: Summary) -> str:
    m = s.metadata
    head = (f"Summary for {h.text(s.agent_id)} <span class=\"muted\">· {h.text(s.trigger)} · "
            f"{count(m.before_tokens)} → {count(m.after_tokens)} tokens</span>")
    what = f'<p class="muted">Covers {h.text(covered.text(s))}.</p>'
    return collapsible(head, what + h.markdown(s.summary, 5)) + facts_html(h, s)


def _after(h: Html, state: DebateState, number: int) -> str:
    """What closes a round or turn: `adaptive`'s decision, the judge's convergence score, the moderator's notes."""
    out: list[str] = []
    word = _step_word(state)
    for d in (d for d in state.adaptive if d.round == number):  # why it stopped or went on, at what cost
        out.append(h.markdown(f"**Adaptive decision after round {number}:** {_adaptive_text(d)}", 4))
    for s in state.convergence:
        if s.round == number:
            raw = " ".join((s.raw or "").split())[:200]
            text = (f"{s.confidence} — {s.reason}" if s.confidence is not None
                    else "not parsed" + (f" (the judge answered: {raw})" if raw else ""))
            out.append(f"<p><strong>Convergence score after {word} {number}:</strong> {h.text(text)}</p>")
    for n in state.notes:
        if n.after_round == number:
            out.append(f'<p class="note"><strong>Moderator note:</strong> {h.text(n.text)}</p>')
    return "".join(out)


# --------------------------------------------------------------------------- the outcome


def _tally(state: DebateState) -> Any:
    return getattr(state.final_solution, "tally", None) if state.final_solution else None


def _votes(h: Html, state: DebateState) -> str:
    """A vote's answers and counts, or a council's mean ranks (protocols `vote`, `council`)."""
    tally = _tally(state)
    if tally is None:
        return ""
    out = ['<section id="votes"><h2>Votes and rankings</h2>']
    answers = dict(getattr(tally, "answers", {}))
    if answers:
        out.append(table(h, ["Agent", "Answer"], [(a, _answer(v)) for a, v in answers.items()]))
    counts = dict(getattr(tally, "counts", {}))
    if counts and not all(str(k).startswith(FREE_FORM) for k in counts):
        out.append(table(h, ["Answer", "Votes"], [(_answer(k), n) for k, n in counts.items()], numeric=(1,)))
    ranks = dict(getattr(tally, "ranks", {}))
    if ranks:
        out.append(table(h, ["Author", "Mean rank (1 = best)"], [(a, f"{r:.2f}") for a, r in ranks.items()],
                         numeric=(1,)))
    summary = tally.summary() if callable(getattr(tally, "summary", None)) else ""
    if summary:
        out.append(f"<p><strong>Decided:</strong> {h.text(summary)}</p>")
    return "".join(out) + "</section>"


FREE_FORM = "text#"
"""How a tally keys a free-form reply (its whole text votes, by a hash of it)."""


def _answer(value: str | None) -> str:
    if value is None:
        return "(none in the asked form)"
    return "(a free-form reply: its text is in the rounds above)" if value.startswith(FREE_FORM) else value


def _synthesis(h: Html, state: DebateState, covered: Covered) -> str:
    out = ['<section id="synthesis">']
    if state.judge_summary:
        s = state.judge_summary
        out.append("<h2>Judge summary</h2><p>The judge's synthesis read this summary of the final round.</p>")
        out.append(_summary_text(h, covered, s))
    sol = state.final_solution
    out.append("<h2>Final synthesis</h2>")
    if sol is None:
        return "".join(out) + '<p class="muted">No final synthesis: the debate did not finish.</p></section>'
    conf = f"{sol.confidence}/100" if sol.confidence is not None else "n/a"
    out.append(f"<p><strong>Confidence:</strong> {conf} · synthesized by {h.text(sol.synthesized_by)}</p>")
    if state.convergence:
        out.append('<p class="muted">The confidence is the judge\'s in this final answer; the convergence scores '
                   "above rate how far the agents agreed.</p>")
    if not sol.parsed and looks_like_json(sol.description):  # cut short, or not the fields asked for
        out.append('<p class="note">The judge\'s reply could not be read as the synthesis it was asked for; it '
                   "is shown as written.</p>")
        out.append(h.pre(sol.description.strip()))
    elif not sol.parsed:
        out.append('<p class="note">The judge\'s reply was not structured JSON; it is shown as written.</p>')
        out.append(h.markdown(sol.description, 3))
    else:
        out.append(h.markdown(sol.description, 3))
    for title, items in (("Trade-offs", sol.tradeoffs), ("Recommendations", sol.recommendations),
                         ("Unresolved", sol.unresolved)):
        if items:
            out.append(f"<h3>{title}</h3><ul>" + "".join(f"<li>{h.text(i.strip())}</li>" for i in items) + "</ul>")
    return "".join(out) + "</section>"


def _costs(h: Html, state: DebateState) -> str:
    ids = [p.id for p in people(state)]
    ids += [p for p in state.agent_totals if p not in ids]
    t = state.totals
    cache = t.cached_tokens > 0  # a column only where a server reported its prompt cache

    def row(who: str, u: Usage) -> tuple[object, ...]:
        cached = (f"{count(u.cached_tokens)} ({u.cached_tokens / u.prompt_tokens:.0%})" if u.prompt_tokens else "0",)
        return (who, count(u.calls), count(u.prompt_tokens), *(cached if cache else ()), count(u.completion_tokens),
                count(u.summary_tokens), usd(u.cost_usd))

    rows = [row(who, state.agent_totals.get(who, Usage())) for who in ids]
    rows.append(row("Total", t))
    head = ["Agent", "Calls", "Prompt", *(["Prompt from cache"] if cache else []), "Completion",
            "Summarization (included)", "Cost (USD)"]
    out = ['<section id="costs"><h2>Tokens and cost</h2>',
           f"<p><strong>{count(t.total_tokens)} tokens</strong> ({count(t.prompt_tokens)} prompt + "
           f"{count(t.completion_tokens)} completion) · <strong>cost {usd(t.cost_usd)}</strong></p>",
           table(h, head, rows, numeric=tuple(range(1, len(head))))]
    if cache:
        out.append(f'<p class="muted">Of the prompt tokens, {count(t.cached_tokens)} '
                   f"({t.cached_tokens / t.prompt_tokens:.0%}) were served from the provider's prompt cache, as its "
                   "usage reported them, and are priced at the model's cached-input rate.</p>")
    if uses_demo(state):
        out.append('<p class="muted">Demo provider calls are free; token counts are real tiktoken counts of the '
                   "scripted text.</p>")
    return "".join(out) + "</section>"

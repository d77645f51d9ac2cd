"""The sessions screen's columns: what each shows, how it sorts, and how rows are filtered.

Pure functions over `SessionRow`s, so sorting and filtering hundreds of debates never touches
the disk (the rows come from `moot.core.storage.sessions`, cached).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...core.models.provider_kinds import kind_of
from ...core.observe.describe import k, usd
from ...core.safety.sanitize import one_line_safe
from ...core.storage.sessions import SessionRow
from ...core.storage.tidy import bench_group

STATUS_WORDS = {"stopped_budget": "at budget"}
BENCH = "bench"
"""The protocol column of a row that stands for a whole bench's debates."""
MEMBER = "↳ "
"""Before the problem of a debate shown under its bench's row."""


def _date(row: SessionRow, wide: bool) -> str:
    if not row.created_at:
        return ""
    return time.strftime("%Y-%m-%d %H:%M" if wide else "%m-%d %H:%M", time.localtime(row.created_at))


def _progress(row: SessionRow, wide: bool) -> str:
    if row.status == "unreadable":
        return ""
    if row.protocol == BENCH:  # debates completed of the bench's
        return f"{row.done}/{row.total} done" if wide else f"{row.done}/{row.total}"
    step = f"{row.done}/{row.total}"
    return f"{step} {row.unit}" if wide else step


def _protocol(row: SessionRow, wide: bool) -> str:
    name = row.protocol or "?"
    if not wide and len(name) > 8:
        name = name[:7] + "."
    return name + (" · DEMO" if row.demo and wide else "")


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    cell: Callable[[SessionRow, bool], str]
    sort: Callable[[SessionRow], Any]
    numeric: bool = False
    short: str = ""
    """The label below `WIDE` columns (default: the same)."""


COLUMNS: tuple[Column, ...] = (
    Column("date", "Date", _date, lambda r: (r.created_at, r.id)),
    Column("status", "Status", lambda r, w: STATUS_WORDS.get(r.status, r.status), lambda r: r.status),
    Column("protocol", "Protocol", _protocol, lambda r: (r.protocol, r.demo)),
    Column("progress", "Rounds/turns", _progress, lambda r: (r.done, r.total), short="Done"),
    Column("tokens", "Tokens", lambda r, w: k(r.tokens) if r.tokens else "0", lambda r: r.tokens, numeric=True),
    Column("cost", "Cost", lambda r, w: usd(r.cost_usd), lambda r: r.cost_usd, numeric=True),
    Column("problem", "Problem", lambda r, w: (f"⑂ {r.fork_at} · " if r.forked_from else "") + (r.problem or r.error),
           lambda r: (r.problem or r.error).lower()),
)
BY_KEY = {c.key: c for c in COLUMNS}
PROBLEM = "problem"


def detail(row: SessionRow) -> str:
    """The line under the table for the selected debate: what the narrow columns leave out."""
    who = "+".join(kind_of(p).show() for p in row.providers)
    what = row.problem or row.error
    fork = f" · fork of {row.forked_from} at {row.fork_at}" if row.forked_from else ""
    return one_line_safe(f"{row.id} · {row.protocol or 'unreadable'} · {who or '?'}{fork} · {what}", 400)


def haystack(row: SessionRow) -> str:
    """What the filter searches: every column's words, the id, the providers, DEMO."""
    demo = " demo" if row.demo else ""
    fork = f" fork {row.forked_from}" if row.forked_from else ""
    return " ".join([row.id, row.problem, row.error, row.protocol, row.status, STATUS_WORDS.get(row.status, ""),
                     *row.providers, demo, fork]).lower()


def matches(row: SessionRow, query: str) -> bool:
    """Every word of `query` is somewhere in the row (case-insensitive)."""
    text = haystack(row)
    return all(word in text for word in query.lower().split())


def arrange(rows: list[SessionRow], query: str, sort_key: str, descending: bool,
            opened: frozenset[str] = frozenset()) -> list[SessionRow]:
    """The rows the table shows: filtered, then sorted (ties keep the newest first). A bench's
    debates (hundreds, one per question and protocol) are one row, followed by its debates
    when it is in `opened`; a bench is shown when its row or any of its debates matches."""
    alone: list[SessionRow] = []
    benches: dict[str, list[SessionRow]] = {}
    for r in rows:
        group = bench_group(r.id)
        if group is None:
            alone.append(r)
        else:
            benches.setdefault(group, []).append(r)
    shown = [r for r in alone if matches(r, query)]
    inside: dict[str, list[SessionRow]] = {}
    for group, members in benches.items():
        summary = bench_row(group, members, group in opened)
        hits = [m for m in members if matches(m, query)]
        if hits or matches(summary, query):
            shown.append(summary)
            inside[group] = hits if hits else members
    shown = under_parents(_sorted(shown, sort_key, descending))
    out: list[SessionRow] = []
    for r in shown:
        out.append(r)
        if r.protocol == BENCH and r.id in opened and r.id in inside:
            out.extend(m.model_copy(update={"problem": MEMBER + m.problem})
                       for m in _sorted(inside[r.id], sort_key, descending))
    return out


def _sorted(rows: list[SessionRow], sort_key: str, descending: bool) -> list[SessionRow]:
    column = BY_KEY[sort_key]
    rows = sorted(rows, key=lambda r: (r.created_at, r.id), reverse=True)
    rows.sort(key=column.sort, reverse=descending)  # stable: equal keys stay newest first
    return rows


def bench_row(group: str, members: list[SessionRow], opened: bool) -> SessionRow:
    """The one row that stands for a bench's debates: how many, in which protocols, their totals."""
    protocols: dict[str, int] = {}
    for m in members:
        protocols[m.protocol] = protocols.get(m.protocol, 0) + 1
    statuses = {m.status for m in members}
    what = ", ".join(f"{p} ×{n}" for p, n in protocols.items())
    hint = "enter hides them" if opened else "enter shows them"
    return SessionRow(
        id=group, created_at=max(m.created_at for m in members), protocol=BENCH,
        problem=f"bench of {len(members)} debates ({what}) · {hint}",
        status=statuses.pop() if len(statuses) == 1 else "mixed",
        done=sum(m.status == "completed" for m in members), total=len(members),
        tokens=sum(m.tokens for m in members), cost_usd=sum(m.cost_usd for m in members),
        providers=sorted({p for m in members for p in m.providers}))


def under_parents(rows: list[SessionRow]) -> list[SessionRow]:
    """Each fork right under the debate it was forked from (when that one is shown), forks of a fork
    under it in turn; the rest keep their order."""
    ids = {r.id for r in rows}
    forks: dict[str, list[SessionRow]] = {}
    for r in rows:
        if r.forked_from in ids and r.forked_from != r.id:
            forks.setdefault(r.forked_from, []).append(r)
    out: list[SessionRow] = []
    seen: set[str] = set()

    def place(row: SessionRow) -> None:
        if row.id in seen:
            return
        seen.add(row.id)
        out.append(row)
        for child in forks.get(row.id, []):
            place(child)

    for r in rows:
        if not (r.forked_from in ids and r.forked_from != r.id):
            place(r)
    for r in rows:  # a loop of forks (a hand-edited log) is still shown, in its order
        place(r)
    return out


def cells(row: SessionRow, wide: bool, problem_width: int) -> list[str]:
    """The row's cells, made safe for the terminal (they come from files), the problem cut to fit."""
    out = [one_line_safe(c.cell(row, wide), 60) for c in COLUMNS]
    out[-1] = one_line_safe(out[-1], max(8, problem_width))
    return out

"""The benchmark's results: one document (`results.json`), the table a person reads (`.md`, and
the terminal), one row per question × protocol (`.csv`), and a plot of accuracy against tokens
per question (an SVG written beside the markdown; bars in the terminal)."""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Sequence
from typing import Any

from ..safety.sanitize import csv_cell, one_line_safe
from .results import ResultRow
from .runner import BASELINES, BenchPlan
from .stats import Comparison, ProtocolStats, comparisons, pareto_front, protocol_stats

FORMATS = {".json": "json", ".md": "md", ".csv": "csv"}


def summarize(plan: BenchPlan, rows: Sequence[ResultRow], *, executor: str, demo: bool) -> dict[str, Any]:
    """Everything the outputs show, as plain data (this is `results.json`)."""
    by_protocol: dict[str, list[ResultRow]] = {p: [] for p in plan.protocols}
    for r in rows:
        by_protocol.setdefault(r.protocol, []).append(r)
    planned: dict[str, int] = {p: sum(1 for j in plan.jobs if j.protocol == p) for p in plan.protocols}
    stats = {p: protocol_stats(rs, unfinished=planned[p] - sum(r.complete for r in rs))
             for p, rs in by_protocol.items()}
    order = {j.slot: i for i, j in enumerate(plan.jobs)}
    agents = [a for c in plan.configs.values() for a in c.get("agents", [])]
    return {
        "dataset": plan.dataset.name,
        "fingerprint": plan.dataset.fingerprint,
        "questions": len({j.question_id for j in plan.jobs}),
        "executor": executor,
        "repeat": plan.repeat,
        "temperature_zero": bool(agents) and all(a.get("temperature") == 0 for a in agents),
        "demo": demo,
        "vote_samples": plan.samples if "vote" in plan.protocols else None,
        "vote_samples_note": plan.samples_note if "vote" in plan.protocols else "",
        "protocols": {p: s.model_dump(mode="json") for p, s in stats.items()},
        "pareto": pareto_front({p: (s.tokens_per_question, s.accuracy) for p, s in stats.items() if s.n}),
        "comparisons": [c.model_dump(mode="json") for c in comparisons(by_protocol)],
        "results": [r.model_dump(mode="json")
                    for r in sorted(rows, key=lambda r: order.get((r.id, r.protocol, r.repeat), 0))],
    }


def _stats(doc: dict[str, Any]) -> dict[str, ProtocolStats]:
    return {p: ProtocolStats.model_validate(s) for p, s in doc["protocols"].items()}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def table_rows(doc: dict[str, Any]) -> list[list[str]]:
    head = ["protocol", "n", "correct", "accuracy % ± se", "tokens/q", "tokens/correct", "calls/q", "cost/q $",
            "s/q", "unparsed", "ties", "turned r→w, w→r %", "majority %"]
    repeated = doc.get("repeat", 1) > 1
    if repeated:
        head[4:4] = ["sd between runs", "differed"]
    rows = [head]
    for p, s in _stats(doc).items():
        per = max(1, s.n)
        rows.append([p, str(s.n), str(s.correct), f"{_pct(s.accuracy)} ± {_pct(s.stderr)}",
                     f"{s.tokens_per_question:,.0f}",
                     "–" if s.tokens_per_correct is None else f"{s.tokens_per_correct:,.0f}",
                     f"{s.calls / per:.1f}" + (f" ({s.calls_min}–{s.calls_max})" if s.calls_min != s.calls_max else ""),
                     f"{s.cost_per_question:.5f}",
                     f"{s.seconds_per_question:.1f}", str(s.unparsed), str(s.ties),
                     "–" if p in BASELINES else f"{_pct(s.turned_right_to_wrong)}, {_pct(s.turned_wrong_to_right)}",
                     _pct(s.majority_accuracy)])
        if repeated:
            rows[-1][4:4] = [_pct(s.run_sd), str(s.differed)]
    return rows


def comparison_rows(doc: dict[str, Any]) -> list[list[str]]:
    rows = [["a − b", "n", "difference (95% CI)", "only a right", "only b right", "McNemar p", "within noise",
             "questions needed"]]
    for raw in doc["comparisons"]:
        c = Comparison.model_validate(raw)
        rows.append([f"{c.a} − {c.b}", str(c.n),
                     f"{100 * c.difference:+.1f} pts ({100 * c.ci_low:+.1f}, {100 * c.ci_high:+.1f})",
                     str(c.only_a), str(c.only_b), f"{c.mcnemar_p:.3f}", "yes" if c.within_noise else "no",
                     "–" if c.questions_needed is None else f"{c.questions_needed:,}"])
    return rows


def model_rows(doc: dict[str, Any]) -> list[list[str]]:
    """A mixed panel's models beside the panel: per protocol whose agents ran on more than one model."""
    rows = [["protocol", "model", "answers", "accuracy % ± se", "panel %"]]
    for p, s in _stats(doc).items():
        if len(s.per_model) < 2:
            continue
        for m, ms in s.per_model.items():
            rows.append([p, one_line_safe(m, 60), str(ms.answers), f"{_pct(ms.accuracy)} ± {_pct(ms.stderr)}",
                         _pct(s.accuracy)])
    return rows if len(rows) > 1 else []


def _plain(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def _markdown_table(rows: list[list[str]]) -> str:
    esc = [[cell.replace("|", "\\|") for cell in r] for r in rows]
    lines = ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(esc[0])]
    lines += ["| " + " | ".join(r) + " |" for r in esc[1:]]
    return "\n".join(lines)


def bars(doc: dict[str, Any], width: int = 30) -> str:
    """Accuracy as bars with its error and tokens per question beside: what a token buys (◆: on
    the Pareto front of accuracy against tokens per question)."""
    stats = _stats(doc)
    front = set(doc.get("pareto", []))
    name_w = max((len(p) for p in stats), default=8)
    lines = []
    for p, s in stats.items():
        full = round(s.accuracy * width)
        lines.append(f"{p.ljust(name_w)}  {'█' * full}{'░' * (width - full)}  {_pct(s.accuracy):>5}% ± "
                     f"{_pct(s.stderr):<4}  {s.tokens_per_question:>8,.0f} tokens/question"
                     + ("  ◆ Pareto front" if p in front else ""))
    return "\n".join(lines)


def _header(doc: dict[str, Any]) -> list[str]:
    lines = [f"data set {one_line_safe(doc['dataset'], 200)} ({doc['questions']} questions, "
             f"fingerprint {doc['fingerprint']}); executor {doc['executor']}"]
    if doc.get("vote_samples"):
        lines.append(f"vote: {doc['vote_samples']} answers per question ({doc['vote_samples_note']})")
    if doc.get("repeat", 1) > 1:
        lines.append(f"each question ran {doc['repeat']} times with different seeds (n counts question runs)")
        differed = sum(s.differed for s in _stats(doc).values())
        if doc.get("temperature_zero") and differed:
            lines.append(f"at temperature 0 the final answers differed between runs on {differed} question × "
                         "protocol pairs: the server is not deterministic (parallel slots, batching)")
    if doc.get("demo"):
        lines.append("DEMO provider: scripted answers (right about two times in three), not a model; "
                     "the figures only show the tool working")
    return lines


def render_text(doc: dict[str, Any]) -> str:
    """The table for a terminal (stdout of a headless run)."""
    parts = [*_header(doc), "", _plain(table_rows(doc)), "", bars(doc)]
    if models := model_rows(doc):
        parts += ["", "per model (each agent's last answer):", _plain(models)]
    if doc["comparisons"]:
        parts += ["", "paired comparisons:", _plain(comparison_rows(doc))]
    return "\n".join(parts) + "\n"


def render_markdown(doc: dict[str, Any], plot: str | None = None) -> str:
    parts = ["# moot bench", "", *(f"- {line}" for line in _header(doc)), "",
             _markdown_table(table_rows(doc)), "",
             "accuracy ± its standard error; tokens, calls, cost and seconds per question; *turned*: the share "
             "of questions whose first answers' majority (before any agent read another) was right and whose "
             "final answer is wrong (r→w), and the other way round (w→r): what the rounds broke and mended; "
             "*majority*: the majority of the agents' "
             "last answers (beside the judge's for rounds and council); *tokens/correct*: all the tokens over "
             "the questions answered right. An answer not in the asked form counts as wrong. ◆: on the Pareto "
             "front (no other protocol is at least as accurate for at most as many tokens per question)."
             + (" *sd between runs*: the standard deviation of the protocol's accuracy over the runs; *differed*: "
                "questions whose final answers were not the same in every run." if doc.get("repeat", 1) > 1 else ""),
             "", "```", bars(doc), "```"]
    if plot:
        parts += ["", f"![accuracy against tokens per question]({plot})"]
    if models := model_rows(doc):
        parts += ["", "## Per model", "", "A mixed panel's models beside the panel: how often the last answers of "
                  "the agents on each model were right.", "", _markdown_table(models)]
    if doc["comparisons"]:
        parts += ["", "## Paired comparisons", "", "On the questions both protocols finished; the interval is a "
                  "bootstrap over questions, the p-value McNemar's exact test. *Within noise*: p ≥ 0.05, or the "
                  "interval holds 0, or the difference is no larger than the spread between runs; *questions needed*: how many "
                  "questions a paired test would need to detect a difference of this size (two-sided α = 0.05, "
                  "power 0.8).", "",
                  _markdown_table(comparison_rows(doc))]
    return "\n".join(parts) + "\n"


def render_csv(doc: dict[str, Any]) -> str:
    cols = ["id", "repeat", "protocol", "answer", "expected", "correct", "debate_id", "status", "decided_by", "majority",
            "tie", "calls", "prompt_tokens", "completion_tokens", "cost_usd", "seconds", "changed",
            "right_to_wrong", "wrong_to_right", "first_majority", "agent_answers", "error"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in doc["results"]:
        ch = r["changes"]
        cells = [r["id"], r["repeat"], r["protocol"], r["answer"] if r["answer"] is not None else "", r["expected"],
                 r["correct"], r["debate_id"], r["status"], r["decided_by"], r["majority"] or "", r["tie"],
                 r["calls"], r["prompt_tokens"], r["completion_tokens"], r["cost_usd"], r["seconds"],
                 ch["changed"], ch["right_to_wrong"], ch["wrong_to_right"], r["first_majority"] or "",
                 json.dumps(r["agent_answers"], ensure_ascii=False), r["error"] or ""]
        w.writerow([csv_cell(c) for c in cells])  # answers, errors, questions' data: untrusted text
    return buf.getvalue()


def render_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def render_svg(doc: dict[str, Any]) -> str:
    """Accuracy (± one standard error) against tokens per question, one labelled point per protocol;
    the protocols on the Pareto front (`doc["pareto"]`) in red, joined by a dashed staircase."""
    stats = _stats(doc)
    w, h, left, right, top, bottom = 640, 400, 70, 30, 30, 60
    xmax = max([s.tokens_per_question for s in stats.values()] + [1.0]) * 1.15
    px = lambda x: left + (w - left - right) * x / xmax  # noqa: E731
    py = lambda y: top + (h - top - bottom) * (1 - y)  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
           'font-size="12">', f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<line x1="{left}" y1="{py(0)}" x2="{w - right}" y2="{py(0)}" stroke="black"/>',
           f'<line x1="{left}" y1="{py(0)}" x2="{left}" y2="{py(1)}" stroke="black"/>']
    for k in range(0, 11, 2):
        y = py(k / 10)
        out.append(f'<line x1="{left - 4}" y1="{y}" x2="{w - right}" y2="{y}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{k * 10}%</text>')
    for k in range(5):
        x = xmax / 1.15 * k / 4
        out.append(f'<text x="{px(x)}" y="{py(0) + 18}" text-anchor="middle">{x:,.0f}</text>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - 15}" text-anchor="middle">tokens per question</text>')
    out.append(f'<text x="18" y="{(top + h - bottom) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 18 {(top + h - bottom) / 2})">accuracy</text>')
    front = [p for p in doc.get("pareto", []) if p in stats]
    if len(front) > 1:  # the front as a staircase: what the best protocol for each budget reaches
        steps = []
        for a, b in zip(front, front[1:], strict=False):
            steps += [(px(stats[a].tokens_per_question), py(stats[a].accuracy)),
                      (px(stats[b].tokens_per_question), py(stats[a].accuracy))]
        steps.append((px(stats[front[-1]].tokens_per_question), py(stats[front[-1]].accuracy)))
        out.append('<polyline class="pareto-front" fill="none" stroke="#d62728" stroke-dasharray="4 3" points="'
                   + " ".join(f"{x:.1f},{y:.1f}" for x, y in steps) + '"/>')
    for p, s in stats.items():
        x, y = px(s.tokens_per_question), py(s.accuracy)
        lo, hi = py(max(0.0, s.accuracy - s.stderr)), py(min(1.0, s.accuracy + s.stderr))
        color, mark = ("#d62728", ' class="pareto"') if p in front else ("#1f77b4", "")
        out.append(f'<line x1="{x}" y1="{lo}" x2="{x}" y2="{hi}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<circle{mark} cx="{x}" cy="{y}" r="5" fill="{color}"/>')
        # A point in the right half is labelled to its left: the label never runs off the plot.
        label = f"{html.escape(one_line_safe(p, 40))} {_pct(s.accuracy)}%"
        if x > (left + w - right) / 2:
            out.append(f'<text x="{x - 8}" y="{y - 6}" text-anchor="end">{label}</text>')
        else:
            out.append(f'<text x="{x + 8}" y="{y - 6}">{label}</text>')
    title = html.escape(one_line_safe(doc["dataset"], 80)) + (" · DEMO" if doc.get("demo") else "")
    out.append(f'<text x="{left}" y="18" font-weight="bold">{title}</text>')
    if front:
        out.append(f'<text x="{w - right}" y="18" text-anchor="end" fill="#d62728">red: the Pareto front '
                   '(no protocol more accurate for fewer tokens)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"

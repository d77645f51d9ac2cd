"""The evaluation as markdown, JSON or CSV (`moot eval -o FILE`, by extension); every
rendering is terminal-safe."""

from __future__ import annotations

import csv
import io
import json

from ..models.provider_kinds import any_scripted
from ..models.state import DebateState
from ..report.markdown import cell, table
from ..safety.sanitize import csv_cell, json_safe, terminal_safe
from .scores import CRITERIA, EvaluatorResult, Score, averages

FORMATS = {".md": "md", ".markdown": "md", ".json": "json", ".csv": "csv"}



def _shown(s: Score | None) -> str:
    if s is None:
        return "—"
    if s.value is not None:
        return str(s.value)
    return "missing" if s.raw is None else f"invalid ({s.raw})"


def render_markdown(state: DebateState, results: list[EvaluatorResult]) -> str:
    avg = averages(results)
    ok = [r for r in results if not r.error]
    conf = state.final_solution.confidence if state.final_solution else None
    first = next((line.strip() for line in state.problem.splitlines() if line.strip()), "")
    title = first.lstrip("#").strip() or state.id  # a problem that is itself a heading: not "# Evaluation: # …"
    out = [f"# Evaluation: {title}", "",
           f"Debate `{state.id}` · judge's confidence {conf if conf is not None else 'n/a'} · "
           f"{len(results)} evaluator{'' if len(results) == 1 else 's'}, {len(ok)} with valid scores", ""]
    if any_scripted(r.provider for r in results):
        out += ["> **DEMO** — scores from the offline demo provider are scripted, not a model's judgement.", ""]
    header = ["Criterion", *(r.id for r in results), "Average"]
    rows = [[c, *("error" if r.error else _shown(r.scores.get(c)) for r in results),
             "—" if avg[c] is None else f"{avg[c]:.1f}"] for c in CRITERIA]
    out += [*table(header, rows, right=range(1, len(header))), "", "## Reasons", ""]
    for r in results:
        name = f"{cell(r.name)}; " if r.name != r.id else ""
        out += [f"### {r.id} ({name}{r.provider}: {r.model})", ""]
        if r.error:
            out += [f"**Failed:** {r.error}", ""]
            continue
        for c, s in r.scores.items():
            mark = str(s.value) if s.value is not None else f"{_shown(s)}, excluded: {s.note}"
            out.append(f"- **{c}** — {mark}" + (f": {s.reason}" if s.reason else ""))
        out.append("")
    return terminal_safe("\n".join(out).rstrip() + "\n")


def render_json(state: DebateState, results: list[EvaluatorResult]) -> str:
    evaluators = [{
        "id": r.id, "name": r.name, "provider": r.provider, "model": r.model, "error": r.error,
        "latency_ms": r.latency_ms, "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens,
        "scores": {c: {"score": s.value, "valid": s.value is not None, "reason": s.reason, "raw": s.raw,
                       "note": s.note} for c, s in r.scores.items()},
    } for r in results]
    data = {"debate_id": state.id, "problem": state.problem, "criteria": list(CRITERIA),
            "demo": any_scripted(r.provider for r in results), "evaluators": evaluators,
            "averages": averages(results)}
    return json_safe(json.dumps(data, indent=2, ensure_ascii=False, default=str)) + "\n"


def render_csv(results: list[EvaluatorResult]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["criterion", "evaluator", "score", "reason", "note"])
    for r in results:
        for c in CRITERIA:
            s = r.scores.get(c)
            if r.error or s is None:
                w.writerow([c, r.id, "", "", f"error: {r.error}" if r.error else "not scored"])
            else:  # a reason is a model's text: never a spreadsheet formula
                w.writerow([c, r.id, "" if s.value is None else s.value, csv_cell(s.reason),
                            csv_cell(s.note or "")])
    for c, a in averages(results).items():
        w.writerow([c, "average", "" if a is None else f"{a:.2f}", "", ""])
    return terminal_safe(buf.getvalue())

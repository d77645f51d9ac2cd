"""`moot eval`: independent evaluator agents score a debate's final solution.

Evaluators are configured separately from the debate (their own JSON/TOML file),
run concurrently through the same Provider interface as the debaters, and are
parsed tolerantly: one evaluator's garbage or failure is reported, never fatal,
unless every evaluator fails. The debate folder is only read, never written. What comes back from the servers is
masked (`redact`) before anything is rendered, and every rendering is terminal-safe.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from . import prompts
from .config import (DEFAULT_DEMO_MODEL, DEFAULT_OPENAI_MODEL, ResolvedAgent, describe_validation_error,
                              read_config_file)
from .errors import ConfigError, ContextTooLong, ProviderError
from .judge import parse_json_object
from .models.config import AgentConfig, ContextConfig, SummarizationConfig
from .models.state import DebateState, Solution
from .providers.base import CallHint, ChatRequest, Message, Provider, complete
from .providers.pool import ProviderPool, default_provider_name
from .report.markdown import cell, table
from .safety.sanitize import json_safe, terminal_safe
from .safety.secrets import known_secrets, redact
from .tokens import count_messages, count_text, truncate_to_tokens

CRITERIA: tuple[str, ...] = ("functional_completeness", "performance", "security", "maintainability",
                             "testability", "requirements_fulfilment", "overall")
_ALIASES = {"requirements_fulfillment": "requirements_fulfilment", "requirements": "requirements_fulfilment",
            "completeness": "functional_completeness", "overall_score": "overall"}
_NUMBER = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*(?:/\s*10)?\s*$")
EVAL_MAX_TOKENS = 1200
EVAL_MIN_TOKENS = 320
"""The floor of an evaluator's answer at a small window: seven scores with a short reason each."""
SHORTENED = "\n\n[… shortened to fit the evaluator's context window]"
FORMATS = {".md": "md", ".markdown": "md", ".json": "json", ".csv": "csv"}


class EvaluatorConfig(BaseModel):
    """One evaluator. Unset provider/model fall back as for debaters (demo without a key)."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    name: str | None = None
    model: str | None = None
    provider: Literal["openai", "demo"] | None = None
    base_url: str | None = None
    temperature: float = Field(0.1, ge=0, le=2)
    system_prompt_path: str | None = None
    user_prompt_path: str | None = None
    timeout_s: float = Field(60.0, gt=0, le=86400, allow_inf_nan=False)


class EvalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agents: list[EvaluatorConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> EvalConfig:
        ids = [a.id for a in self.agents]
        dup = next((i for i in ids if ids.count(i) > 1), None)
        if dup:
            raise ValueError(f"duplicate evaluator id {dup!r}")
        return self


def load_eval_config(path: Path, *, provider: str | None = None, model: str | None = None,
                     base_url: str | None = None) -> list[EvaluatorConfig]:
    """Evaluators with CLI overrides applied and provider/model resolved; ConfigError (exit 4) if invalid."""
    try:
        cfg = EvalConfig.model_validate(read_config_file(path))
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, str(path))) from None
    return _resolved(cfg.agents, provider, model, base_url)


def default_evaluators(state: DebateState, *, provider: str | None = None, model: str | None = None,
                       base_url: str | None = None) -> list[EvaluatorConfig]:
    """`moot eval ID` without `-c`: one evaluator per model the debate ran on (the judge's first),
    on the provider and endpoint recorded for it, so a demo debate is evaluated offline and a
    debate on a local server by that server. The flags override as they do a file's; a
    `--provider` or `--base-url` that leaves the recorded provider drops its model and endpoint."""
    urls: dict[str, str | None] = {}
    for entry in [*state.config.get("agents", []), state.config.get("judge", {})]:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            urls[entry["id"]] = entry.get("base_url") if isinstance(entry.get("base_url"), str) else None
    recorded: list[EvaluatorConfig] = []
    for person in [state.judge, *state.agents]:
        if person is None:
            continue
        prov = provider or ("openai" if base_url else person.provider)
        kept = prov == person.provider
        recorded.append(EvaluatorConfig(id="eval", provider="demo" if prov == "demo" else "openai",
                                        model=person.model if kept else None,
                                        base_url=urls.get(person.id) if kept else None))
    if not recorded:
        raise ConfigError(f"debate {state.id} records no agents to take a provider from; give -c FILE")
    unique: list[EvaluatorConfig] = []
    for ev in _resolved(recorded, None, model, base_url):
        if all((e.provider, e.model, e.base_url) != (ev.provider, ev.model, ev.base_url) for e in unique):
            unique.append(ev.model_copy(update={"id": f"eval-{len(unique) + 1}"}))
    return unique


def _resolved(evaluators: list[EvaluatorConfig], provider: str | None, model: str | None,
              base_url: str | None) -> list[EvaluatorConfig]:
    """Flags over each evaluator's own settings; an unset provider and model as for debaters."""
    out = []
    for ev in evaluators:
        url = base_url or ev.base_url
        prov = provider or ev.provider or default_provider_name(url)
        mod = model or ev.model or (DEFAULT_DEMO_MODEL if prov == "demo" else DEFAULT_OPENAI_MODEL)
        out.append(ev.model_copy(update={"provider": prov, "model": mod, "base_url": url}))
    return out


# --------------------------------------------------------------------------- parsing


@dataclass
class Score:
    value: int | None
    """1–10, or None when the evaluator's value was missing or invalid (then `note` says why)."""
    reason: str = ""
    raw: Any = None
    note: str | None = None


@dataclass
class EvaluatorResult:
    id: str
    name: str
    provider: str
    model: str
    scores: dict[str, Score] = field(default_factory=dict)
    error: str | None = None
    latency_ms: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def parse_value(raw: Any) -> tuple[int | None, str | None]:
    """An int 1–10 from an int, a float (rounded half up) or a numeric string like "8" or "7.5/10"."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        return None, "no score given" if raw is None else f"{raw!r} is not a number"
    m = _NUMBER.match(raw) if isinstance(raw, str) else None
    if isinstance(raw, str) and not m:
        return None, f"{raw!r} is not a number"
    number = float(m.group(1)) if m else float(raw)
    if not math.isfinite(number) or not 1 <= number <= 10:
        return None, f"{raw!r} is outside 1–10"
    return int(math.floor(number + 0.5)), None


def _key(name: object) -> str:
    k = re.sub(r"[\s-]+", "_", str(name).strip().lower())
    return _ALIASES.get(k, k)


def parse_scores(text: str) -> dict[str, Score]:
    """Scores per criterion from an evaluator's reply; ValueError when nothing usable is in it."""
    obj = parse_json_object(text)
    if obj is None:
        snippet = " ".join(text.split())[:60]
        raise ValueError(f"the answer is not JSON: {snippet!r}" if snippet else "the answer is empty")
    found: dict[str, Any] = {}
    raw_scores = obj.get("scores", obj)
    if isinstance(raw_scores, list):  # [{"criterion": ..., "score": ..., "reason": ...}, ...]
        raw_scores = {e.get("criterion", e.get("name")): e for e in raw_scores if isinstance(e, dict)}
    if isinstance(raw_scores, dict):
        for key, value in raw_scores.items():
            found.setdefault(_key(key), value)
    if not any(c in found for c in CRITERIA):
        raise ValueError("the answer names none of the criteria")
    scores: dict[str, Score] = {}
    for c in CRITERIA:
        entry = found.get(c)
        raw, reason = entry, ""
        if isinstance(entry, dict):
            raw = next((entry[k] for k in ("score", "value", "rating") if k in entry), None)
            reason = next((str(entry[k]) for k in ("reason", "justification", "rationale") if entry.get(k)), "")
        value, note = parse_value(raw) if c in found else (None, "not scored")
        scores[c] = Score(value, " ".join(reason.split()), raw, note)
    if all(s.value is None for s in scores.values()):
        first = next(f"{c}: {s.note}" for c, s in scores.items())
        raise ValueError(f"no valid score in the answer ({first})")
    return scores


def averages(results: list[EvaluatorResult]) -> dict[str, float | None]:
    """Mean per criterion over the valid scores only (invalid values and failed evaluators are excluded)."""
    out: dict[str, float | None] = {}
    for c in CRITERIA:
        vals = [r.scores[c].value for r in results if not r.error and c in r.scores]
        nums = [v for v in vals if v is not None]
        out[c] = round(sum(nums) / len(nums), 2) if nums else None
    return out


# --------------------------------------------------------------------------- running


def solution_block(sol: Solution) -> str:
    """The final solution as the evaluators see it (without the judge's confidence, to avoid anchoring)."""
    parts = [sol.description.strip()]
    for title, items in (("Trade-offs", sol.tradeoffs), ("Recommendations", sol.recommendations),
                         ("Unresolved points", sol.unresolved)):
        if items:
            parts.append(f"{title}:\n" + "\n".join(f"- {i}" for i in items))
    return "\n\n".join(parts)


async def run_evaluators(state: DebateState, evaluators: list[EvaluatorConfig], *,
                         demo_delay: float | None = None) -> list[EvaluatorResult]:
    """Every evaluator, concurrently; a failure is recorded on its result, never raised.

    Prompts and providers are prepared first, so a bad prompt path or a missing key is
    a configuration error (exit 4) before any call is made."""
    assert state.final_solution is not None
    solution = solution_block(state.final_solution)
    pools: dict[float, ProviderPool] = {}
    jobs: list[tuple[EvaluatorConfig, Provider, EvalPrompt]] = []
    for ev in evaluators:
        pool = pools.setdefault(ev.timeout_s, ProviderPool(demo_delay=demo_delay, timeout_s=ev.timeout_s,
                                                           max_retries=2))
        agent = AgentConfig(id=ev.id, name=ev.name, role="generalist", model=ev.model, provider=ev.provider,
                            temperature=ev.temperature, base_url=ev.base_url)
        provider = pool.get(ResolvedAgent(config=agent, summarization=SummarizationConfig(), context=ContextConfig(),
                                          provider=str(ev.provider), model=str(ev.model)))
        template = prompts.load("evaluator", "evaluate", ev.user_prompt_path)
        system = prompts.load("evaluator", "system", ev.system_prompt_path)
        jobs.append((ev, provider, EvalPrompt(system, template, state.problem, solution)))
    # Every key in use is known once the providers exist: what comes back is masked before
    # anything reads it (a parse error quotes the reply, cut to a snippet).
    secrets = [*known_secrets(), *(s for pool in pools.values() for s in pool.secrets)]
    try:
        results = list(await asyncio.gather(*(_evaluate_one(ev, provider, prompt, state.problem, secrets)
                                              for ev, provider, prompt in jobs)))
    finally:
        for pool in pools.values():
            await pool.aclose()
    return [mask_result(r, secrets) for r in results]


def mask_result(result: EvaluatorResult, secrets: Sequence[str]) -> EvaluatorResult:
    """`result` with every text a server wrote (the model name it reported, reasons, raw values,
    errors) masked: a proxy can echo the key anywhere."""
    result.model = redact(result.model, secrets)[:200]
    result.name = redact(result.name, secrets)
    result.error = redact(result.error, secrets) if result.error is not None else None
    for score in result.scores.values():
        score.reason = redact(score.reason, secrets)
        score.raw = _redact_value(score.raw, secrets)
        score.note = redact(score.note, secrets) if score.note is not None else None
    return result


def _redact_value(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, list):
        return [_redact_value(v, secrets) for v in value]
    if isinstance(value, dict):
        return {redact(str(k), secrets): _redact_value(v, secrets) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class EvalPrompt:
    """An evaluator's request before it is fitted to a window."""

    system: str
    template: str
    problem: str
    solution: str

    def messages(self, window: int | None, ratio: float = 1.0, model: str | None = None) -> tuple[list[Message], int]:
        """The messages and the answer's limit for a server `window` (None: unknown) whose
        tokenizer counts `ratio` × moot's: the solution is shortened (marked) where the whole
        would not fit beside the answer, and the answer shrinks to its floor before that."""
        def build(solution: str) -> list[Message]:
            return [{"role": "system", "content": self.system},
                    {"role": "user", "content": prompts.render(self.template, problem=self.problem,
                                                               solution=solution)}]

        messages = build(self.solution)
        if window is None:
            return messages, EVAL_MAX_TOKENS
        reply = min(EVAL_MAX_TOKENS, max(EVAL_MIN_TOKENS, window // 3))
        need = math.ceil(count_messages(messages, model) * ratio)
        if need + reply <= window:
            return messages, reply
        reply = max(min(reply, EVAL_MIN_TOKENS), window - need)
        over = math.ceil((need + reply - window) / ratio) + 16
        if over > 16:
            keep = max(32, count_text(self.solution, model) - over)
            messages = build(truncate_to_tokens(self.solution, keep, model) + SHORTENED)
        return messages, max(1, min(reply, window - math.ceil(count_messages(messages, model) * ratio)))


async def _evaluate_one(ev: EvaluatorConfig, provider: Provider, prompt: EvalPrompt,
                        problem: str, secrets: Sequence[str] = ()) -> EvaluatorResult:
    result = EvaluatorResult(ev.id, ev.name or ev.id, str(ev.provider), str(ev.model))
    hint = CallHint(phase="evaluate", role="evaluator", agent_id=ev.id, problem=problem)
    started = time.perf_counter()
    model = str(ev.model)
    try:
        window = await provider.discover_window(model)
        ratio = 1.0
        for attempt in range(3):  # a context-length refusal teaches the window (and the count), then again
            messages, max_tokens = prompt.messages(window, ratio, model)
            try:
                done = await complete(provider, ChatRequest(messages=messages, model=model,
                                                            temperature=ev.temperature, max_tokens=max_tokens,
                                                            hint=hint))
                break
            except ContextTooLong as exc:
                if attempt == 2:
                    raise
                counted = count_messages(messages, model)
                if exc.prompt_tokens and counted:
                    ratio = max(ratio, exc.prompt_tokens / counted * 1.02)
                tried = window or EVAL_MAX_TOKENS + counted
                window = exc.window if exc.window and exc.window < tried else int(tried * 0.8)
    except ProviderError as exc:
        result.error = str(exc)
        return result
    except Exception as exc:  # noqa: BLE001 - one evaluator must not sink the others
        result.error = f"{type(exc).__name__}: {exc}"
        return result
    model = redact(done.model, secrets)[:200] if done.model else result.model
    result.latency_ms, result.model = int((time.perf_counter() - started) * 1000), model
    result.prompt_tokens, result.completion_tokens = done.prompt_tokens, done.completion_tokens
    try:
        result.scores = parse_scores(redact(done.content, secrets))
    except ValueError as exc:
        result.error = str(exc)
    return result


# --------------------------------------------------------------------------- output


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
    if any(r.provider == "demo" for r in results):
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
            "demo": any(r.provider == "demo" for r in results), "evaluators": evaluators,
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
            else:
                w.writerow([c, r.id, "" if s.value is None else s.value, s.reason, s.note or ""])
    for c, a in averages(results).items():
        w.writerow([c, "average", "" if a is None else f"{a:.2f}", "", ""])
    return terminal_safe(buf.getvalue())

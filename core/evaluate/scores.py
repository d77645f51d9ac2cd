"""An evaluator's reply read tolerantly: scores per criterion (1–10), a value that is missing or
invalid noted and excluded, the averages, and everything a server wrote masked."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..judge import parse_json_object
from ..safety.secrets import redact

CRITERIA: tuple[str, ...] = ("functional_completeness", "performance", "security", "maintainability",
                             "testability", "requirements_fulfilment", "overall")
_ALIASES = {"requirements_fulfillment": "requirements_fulfilment", "requirements": "requirements_fulfilment",
            "completeness": "functional_completeness", "overall_score": "overall"}
_NUMBER = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*(?:/\s*10)?\s*$")


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

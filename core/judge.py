"""Reading the judge's structured answer, tolerantly: a reply that is not JSON is kept as text."""

from __future__ import annotations

import json
import re
from typing import Any

from .models.state import Solution

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def _first_json_object(text: str) -> dict[str, Any] | None:
    """The first decodable `{...}` in text (inside code fences or not)."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for cand in candidates:
        start = cand.find("{")
        while start != -1:
            try:
                obj, _ = decoder.raw_decode(cand[start:])
            except (json.JSONDecodeError, RecursionError):
                start = cand.find("{", start + 1)
                continue
            if isinstance(obj, dict):
                return obj
            start = cand.find("{", start + 1)
    return None


def parse_confidence(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        m = re.search(r"-?\d+(?:\.\d+)?", str(value))
        if not m:
            return None
        number = float(m.group(0))
    if number != number:  # NaN
        return None
    if 0 < number < 1 or (number == 1 and isinstance(value, float)):
        number *= 100  # 0.85 (or "0.85") means 85
    return int(round(min(100.0, max(0.0, number))))


def _strings(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        out = []
        for v in value:
            if isinstance(v, str):
                out.append(v)
            elif isinstance(v, dict):
                out.append("; ".join(f"{k}: {x}" for k, x in v.items()))
            elif v is not None:
                out.append(str(v))
        return [s for s in out if s.strip()]
    return [str(value)]


def parse_solution(text: str) -> Solution:
    """Parse the judge's reply into a Solution; never raises."""
    obj = _first_json_object(text)
    if obj is None:
        return Solution(description=text.strip() or "(the judge returned an empty answer)", confidence=None, parsed=False)
    desc = obj.get("solution", obj.get("description", obj.get("final_solution")))
    if isinstance(desc, dict):
        desc = json.dumps(desc, indent=2)
    if not isinstance(desc, str) or not desc.strip():
        desc = text.strip()
    return Solution(
        description=desc.strip(),
        confidence=parse_confidence(obj.get("confidence")),
        tradeoffs=_strings(obj.get("tradeoffs", obj.get("trade_offs"))),
        recommendations=_strings(obj.get("recommendations")),
        unresolved=_strings(obj.get("unresolved", obj.get("unresolved_points"))),
        parsed=True,
    )


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in a model's reply, or None."""
    return _first_json_object(text)

"""The model's true context window, and how moot's token count compares with the server's.

moot budgets every view with its own tiktoken count, but a real model has its own window
(llama.cpp serves 2,048 tokens a slot, say) and its own tokenizer (the server counted up
to 19% more than moot for SmolLM2). Per endpoint and model, this keeps:
- the window: the configured `max_context_tokens`, lowered to what the server says
  (`discovered` at start: llama.cpp `/props`, vLLM or OpenRouter `/models`, Ollama `/api/show`)
  or to what a refusal taught us (`learned`);
- the count ratio: the server's prompt tokens over moot's count of the same messages. The
  next request's ratio is known only once the server has counted it, and two tokenizers
  disagree more on some texts than on others (SmolLM2's server counted ×1.155, then ×1.20 in
  one conversation), so views are built with `count × ratio` in mind where `ratio` is the
  largest seen plus a margin: at least `MIN_MARGIN`, more when the ratios seen lie further
  apart (up to `MAX_MARGIN`).
A configured `max_context_tokens` lower than the server's window still wins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

WindowSource = Literal["configured", "discovered", "learned"]
MIN_MARGIN = 0.05
"""Budget at least this share above the largest ratio seen: the next request's text tokenizes
differently (a 2% margin let a request 1.8% past the largest ratio overrun a 1,024-token slot)."""
MAX_MARGIN = 0.10
"""The margin grows with the spread of the ratios seen (largest over smallest), up to this."""
REFUSAL_STEP = 0.8
"""A refusal that states no window lowers it to this share of what was tried."""
MIN_OUTPUT = 128
"""The smallest reply a window smaller than configured keeps, and the floor of a prose answer."""
REPLY_FLOORS: dict[str, int] = {"synthesis": 256, "score": 96, "clarify": 128, "summarize": 96}
"""The floor an answer's reserve may shrink to when its view needs the room, by phase: enough
for a JSON answer to close (the judge's synthesis, a score, questions); `MIN_OUTPUT` for prose."""


def reply_floor(phase: str, max_tokens: int) -> int:
    """How far the reply limit of a `phase` call with `max_tokens` may shrink (never above it)."""
    return min(max_tokens, REPLY_FLOORS.get(phase, MIN_OUTPUT))


@dataclass
class Window:
    tokens: int | None = None
    """The server's window for this model, when known."""
    source: WindowSource = "configured"
    ratio: float = 1.0
    """What views are budgeted with: the largest ratio seen and its margin (never below 1)."""
    low: float | None = None
    high: float = 1.0
    """The smallest and largest ratios the server's counts have shown (the margin's measure)."""


@dataclass(frozen=True)
class Fit:
    """What one call may use: the view's budget in moot's tokens and the reply's limit."""

    input_budget: int
    """Tokens moot may count for the view (the server's room divided by the count ratio)."""
    max_tokens: int
    window: int
    """The context tokens this call is fitted into: min(configured, the server's window)."""
    source: WindowSource
    ratio: float

    def stretch(self, floor: int) -> int:
        """Tokens (moot's count) a view may take beyond `input_budget` by shrinking the reply to `floor`."""
        return max(0, int((self.max_tokens - min(floor, self.max_tokens)) / self.ratio))

    def reply_room(self, view_tokens: int) -> int:
        """The reply tokens a view of `view_tokens` (moot's count) leaves in the window."""
        return self.window - math.ceil(view_tokens * self.ratio)


class Windows:
    def __init__(self) -> None:
        self._known: dict[tuple[str, str], Window] = {}

    def get(self, endpoint: str, model: str) -> Window:
        return self._known.setdefault((endpoint, model), Window())

    def fit(self, endpoint: str, model: str, context_tokens: int, max_tokens: int) -> Fit:
        """The budget of a call configured for `context_tokens` with `max_tokens` of reply."""
        w = self.get(endpoint, model)
        window = context_tokens
        source: WindowSource = "configured"
        if w.tokens is not None and w.tokens < context_tokens:
            window, source = w.tokens, w.source
            # A window smaller than configured keeps a third for the reply at most.
            max_tokens = min(max_tokens, max(MIN_OUTPUT, window // 3))
        room = max(0, window - max_tokens)
        return Fit(input_budget=int(room / w.ratio), max_tokens=max_tokens, window=window, source=source,
                   ratio=w.ratio)

    def discovered(self, endpoint: str, model: str, tokens: int) -> bool:
        """The server states its window; True when that changes what we know."""
        w = self.get(endpoint, model)
        if w.tokens == tokens:
            return False
        w.tokens, w.source = tokens, "discovered"
        return True

    def refused(self, endpoint: str, model: str, stated: int | None, tried: int,
                server_prompt: int | None = None, counted: int | None = None) -> Window:
        """A context-length refusal: learn the window it states (or lower it by a step) and,
        when the server said how long our request was, how its count compares with ours."""
        w = self.get(endpoint, model)
        lower = stated if stated is not None and stated < tried else int(tried * REFUSAL_STEP)
        if w.tokens is None or lower < w.tokens:
            w.tokens = lower
        w.source = "learned"
        if server_prompt and counted:
            self.observe(endpoint, model, counted, server_prompt)
        return w

    def observe(self, endpoint: str, model: str, counted: int, reported: int) -> bool:
        """After a call: the server counted `reported` prompt tokens for what moot counted as
        `counted`. True when the ratio moved (views are built smaller from now on)."""
        if counted <= 0 or reported <= 0:
            return False
        w = self.get(endpoint, model)
        seen = reported / counted
        w.low = seen if w.low is None else min(w.low, seen)
        w.high = max(w.high, seen)
        if w.high <= 1.0:  # the server never counted more than moot: nothing to allow for
            return False
        margin = min(MAX_MARGIN, max(MIN_MARGIN, w.high / max(1.0, w.low) - 1))
        ratio = math.ceil(w.high * (1 + margin) * 1000) / 1000
        if ratio > w.ratio:
            w.ratio = ratio
            return True
        return False

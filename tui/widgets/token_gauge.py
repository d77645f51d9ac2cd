"""A one-line gauge of an agent's latest view: tokens per tier against the view's budget.

The budget is the window less the tokens kept for the answer (`max_context_tokens −
reserve_output_tokens`: 7k of the default 8k); `/context` shows both numbers. Once a call
ends whose server said how much of its prompt came from its prompt cache, the label adds
that share (`5.2k / 7k · 64% cached`)."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.reactive import reactive

from ...core.models.state import TierTokens
from ..format import k
from .kept_lines import KeptLines

TIERS = ("system", "summary", "pinned", "recall", "history", "task", "tools")
"""`pinned`: items kept verbatim by `/pin` and the config's constraints (drawn ▒ in the history's
colour); `recall`: old items the summary covers, brought back verbatim (drawn ▓ in the summary's colour);
`tools`: what the call read (tool results and definitions, or the retrieval tier's passages)."""
WARN_RATIO = 0.8
"""Matches the default summarization trigger ratio: past it a summary is due."""
CRITICAL_RATIO = 0.95


class TokenGauge(KeptLines):
    """`▕███▒▒▒░░░░▏ 5.2k / 7k`: system, summary, history and task tiers, then free space.

    Not a ProgressBar: no ETA, fixed width text, and classes `-warn` / `-critical`
    when the view nears its budget."""

    DEFAULT_CSS = """
    TokenGauge { height: 1; width: 1fr; }
    TokenGauge > .token-gauge--system { color: $gauge-system; }
    TokenGauge > .token-gauge--summary { color: $gauge-summary; }
    TokenGauge > .token-gauge--pinned { color: $gauge-history; }
    TokenGauge > .token-gauge--recall { color: $gauge-summary; }
    TokenGauge > .token-gauge--history { color: $gauge-history; }
    TokenGauge > .token-gauge--task { color: $gauge-task; }
    TokenGauge > .token-gauge--tools { color: $accent; }
    TokenGauge > .token-gauge--free { color: $gauge-free; }
    TokenGauge > .token-gauge--label { color: $text-muted; }
    TokenGauge.-warn > .token-gauge--label { color: $warning; text-style: bold; }
    TokenGauge.-critical > .token-gauge--label { color: $error; text-style: bold reverse; }
    """
    COMPONENT_CLASSES = {
        "token-gauge--system", "token-gauge--summary", "token-gauge--pinned", "token-gauge--recall", "token-gauge--history",
        "token-gauge--task", "token-gauge--tools", "token-gauge--free", "token-gauge--label",
    }

    tokens: reactive[TierTokens | None] = reactive(None)
    budget: reactive[int] = reactive(0)
    cached: reactive[float | None] = reactive(None)
    """Share of the agent's last finished request the provider served from its prompt cache
    (None until a server reports any)."""

    def __init__(self, *, compact: bool = False, id: str | None = None,  # noqa: A002 - Textual's name
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._tip = ""
        self.compact = compact
        """A short label (`2.1k/7k`) for one-line rows."""
        self.label_width = 0
        """The cells the label takes at least (right-aligned): gauges listed one above another
        share it, so their bars are as wide as each other whatever their numbers."""

    def update_view(self, tokens: TierTokens, budget: int) -> None:
        """Show a new view's token counts (from `call_started.view`)."""
        self.set_reactive(TokenGauge.tokens, tokens)
        self.budget = budget
        ratio = tokens.total / budget if budget else 0.0
        self.set_class(WARN_RATIO <= ratio < CRITICAL_RATIO, "-warn")
        self.set_class(ratio >= CRITICAL_RATIO, "-critical")
        recall = f"recall {tokens.recall} · " if tokens.recall else ""
        pinned = f"pinned {tokens.pinned} · " if tokens.pinned else ""
        read = tokens.tools + tokens.references
        self._tip = (f"system {tokens.system} · summary {tokens.summary} · {pinned}{recall}history {tokens.history} · "
                     f"task {tokens.task} · " + (f"tools {read} · " if read else "")
                     + f"view {tokens.total} of its {budget} budget (the window less the tokens kept for the "
                     "answer)")
        self.tooltip = self._tip + self._cache_tip()
        self.refresh()

    def _cache_tip(self) -> str:
        if self.cached is None:
            return ""
        return f" · {self.cached:.0%} of the last request's prompt came from the provider's prompt cache"

    def show_cached(self, cached_tokens: int, prompt_tokens: int) -> None:
        """A call ended: the share of its prompt the server reported as served from its cache."""
        if prompt_tokens <= 0 or (cached_tokens <= 0 and self.cached is None):
            return  # a server that never reports a cache shows no share at all
        self.cached = cached_tokens / prompt_tokens
        self.tooltip = self._tip + self._cache_tip()

    @property
    def label(self) -> str:
        if self.tokens is None or not self.budget:
            return "– / –"
        sep = "/" if self.compact else " / "
        cached = f" · {self.cached:.0%} cached" if self.cached is not None and not self.compact else ""
        return f"{k(self.tokens.total)}{sep}{k(self.budget)}{cached}"

    def render(self) -> Text:
        label = self.label.rjust(self.label_width)
        width = max(4, self.size.width - len(label) - 3)
        free = self.get_component_rich_style("token-gauge--free")
        t = self.tokens
        parts: list[tuple[int, Style, str]] = []
        if t is not None and self.budget:
            read = t.tools + t.references
            values = [t.system, t.summary, t.pinned, t.recall, t.history,
                      max(0, t.total - t.system - t.summary - t.pinned - t.recall - t.history - read), read]
            parts = [(v, self.get_component_rich_style(f"token-gauge--{tier}"),
                      "▒" if tier == "pinned" else "▓" if tier in ("recall", "tools") else "█")
                     for tier, v in zip(TIERS, values)]
        text = Text("▕", free, no_wrap=True, overflow="crop")
        text.append_text(tier_bar(parts, self.budget, width, free))
        text.append("▏ ", free)
        text.append(label, self.get_component_rich_style("token-gauge--label"))
        return text


def tier_bar(parts: list[tuple[int, Style, str]], total: int, width: int, rest: Style, rest_char: str = "░") -> Text:
    """`width` cells: each part (tokens, style, character) in proportion to `total`, then `rest`.

    Boundaries come from cumulative sums, so rounding never adds up past the bar."""
    text = Text(no_wrap=True, overflow="crop")
    used = acc = 0
    if total > 0:
        for value, style, char in parts:
            acc += value
            end = min(width, round(width * acc / total))
            if end > used:
                text.append(char * (end - used), style)
                used = end
    if used < width:
        text.append(rest_char * (width - used), rest)
    return text

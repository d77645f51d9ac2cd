"""The debate screen's header: problem, round, phase, elapsed time, tokens, cost, provider, DEMO."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label

from ...core.models.provider_kinds import any_scripted, is_person
from ...core.models.state import DebateState
from ...core.safety.sanitize import one_line_safe
from ..format import PHASE_LABELS, clock_time, first_line, k, usd
from .kept_lines import KeptLines
from .label_text import update_label


class DebateHeader(Horizontal, KeptLines):
    """One line; the DEMO badge shows whenever any agent runs on the demo provider."""

    def __init__(self, title: str = "") -> None:
        """`title`: the problem's first line when it is known before the debate (in the first frame)."""
        super().__init__()
        self._texts: dict[str, str] = {"title": first_line(title)} if title else {}
        """What each label shows now: a label is updated only when its text changes."""

    def compose(self) -> ComposeResult:
        yield Label("moot", id="hdr-app")
        yield Label(Text(self._texts.get("title", "")), id="hdr-title")
        yield Label("", id="hdr-round")
        yield Label("", id="hdr-phase")
        yield Label("", id="hdr-elapsed")
        yield Label("", id="hdr-tokens")
        yield Label("", id="hdr-cost")
        yield Label("", id="hdr-model")
        yield Label("DEMO", id="hdr-demo")
        yield Label("", id="hdr-status")

    def on_mount(self) -> None:
        self.query_one("#hdr-demo").display = False
        self.query_one("#hdr-status").display = False
        self.query_one("#hdr-cost").display = False

    def _set(self, name: str, text: str) -> None:
        # Only on change, and with a layout of the whole screen only when the width changes.
        before = self._texts.get(name)
        if before != text:
            self._texts[name] = text
            update_label(self.query_one(f"#hdr-{name}", Label), Text(text), before)

    def show_state(self, state: DebateState, phase: str, mode: str, pending: str = "") -> None:
        """`pending`: the title until the debate is loaded (its problem, known before the rest)."""
        title = first_line(state.problem) or first_line(pending) or "(no debate yet)"
        origin = state.forked_from
        at = one_line_safe(origin.at, 40) if origin is not None else ""
        if origin is not None:  # a fork says so first, as the debates list does
            title = f"⑂ {at} · {title}"
        self._set("title", title)
        label = self.query_one("#hdr-title", Label)
        # Text, not a str: a tooltip string is read as markup, and these come from a log.
        tip = Text(f"a fork of {one_line_safe(origin.debate, 80)} at {at}") if origin is not None else None
        if label.tooltip != tip:
            label.tooltip = tip
        step = "turn" if state.protocol == "conversation" else "round"
        self._set("round", f"{step} {state.current_round}/{state.total_rounds}" if state.problem else "")
        self._set("phase", PHASE_LABELS.get(phase, phase) if phase else "")
        total = state.totals.prompt_tokens + state.totals.completion_tokens
        debate = state.config.get("debate") or {}
        token_cap = debate.get("max_total_tokens")
        self._set("tokens", f"Σ {k(total)}/{k(token_cap)} tok" if token_cap else f"Σ {k(total)} tok")
        self._show_cost(state.totals.cost_usd, debate.get("max_cost_usd"))
        infos = [a for a in [*state.agents, *([state.judge] if state.judge else [])] if not is_person(a.provider)]
        providers = sorted({a.provider for a in infos})
        models = sorted({a.model for a in infos})
        model = models[0] if len(models) == 1 else f"{len(models)} models"
        self._set("model", f"{'/'.join(providers)} · {model}" if infos else "")
        demo = any_scripted(providers)
        badge = self.query_one("#hdr-demo", Label)
        if badge.display != demo:
            badge.display = demo
            badge.tooltip = "the offline demo provider: scripted answers, no model" if demo else None

    def _show_cost(self, cost: float, cap: float | None) -> None:
        """Hidden while nothing was spent and no cap is set (the demo provider costs $0)."""
        text = f"{usd(cost)}/{usd(cap)}" if cap else (usd(cost) if cost > 0 else "")
        self._set("cost", text)
        label = self.query_one("#hdr-cost", Label)
        if label.display != bool(text):
            label.display = bool(text)
            label.tooltip = "cost so far / the debate's budget cap (debate.max_cost_usd)" if cap else (
                "cost so far (estimated from the model's prices)" if text else None)

    def show_elapsed(self, seconds: float | None) -> None:
        self._set("elapsed", f"elapsed {clock_time(seconds)}" if seconds is not None else "")

    @property
    def status_text(self) -> str:
        """The badge's text now ("" when hidden)."""
        return getattr(self, "_status", ("", ""))[0]

    def show_status(self, text: str, kind: str = "") -> None:
        """A badge such as PAUSED, COMPLETED, FAILED, WATCH or REPLAY (empty hides it)."""
        if (text, kind) == getattr(self, "_status", None):
            return
        self._status = (text, kind)
        label = self.query_one("#hdr-status", Label)
        update_label(label, text)
        label.display = bool(text)
        label.set_classes(f"-{kind}" if kind else "")

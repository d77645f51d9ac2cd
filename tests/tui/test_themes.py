"""moot's three themes: the only ones offered by default, and legible in a 256-colour terminal.

A 256-colour terminal shows each colour as the nearest of its palette (Rich's downgrade);
two colours that meet there vanish into each other — as the light theme's pane borders did
(colour 231 on 231). The checks below are on the colours after that downgrade."""

from __future__ import annotations

import itertools

from rich.color import Color as RichColor
from rich.color import ColorSystem
from textual.color import Color, rgb_to_lab

from moot.tui.app import MootApp, create_app
from moot.tui.theming import BUNDLED
from tests.tui.scripted import ScriptedRuntime

from .conftest import command, feedback, fixed_clock, settle, upto


def in_256(value: str) -> Color:
    rgb = Color.parse(value).rgb
    return Color(*RichColor.from_rgb(*rgb).downgrade(ColorSystem.EIGHT_BIT).get_truecolor())


def contrast(a: Color, b: Color) -> float:
    """WCAG contrast ratio."""
    def lum(c: Color) -> float:
        def ch(v: int) -> float:
            x = v / 255
            return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4
        r, g, b = c.rgb
        return 0.2126 * ch(r) + 0.7152 * ch(g) + 0.0722 * ch(b)
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def delta_e(a: Color, b: Color) -> float:
    """CIE76 colour difference: about 2 is just noticeable, 25 plainly different."""
    la, lb = rgb_to_lab(a), rgb_to_lab(b)
    return float(((la.L - lb.L) ** 2 + (la.a - lb.a) ** 2 + (la.b - lb.b) ** 2) ** 0.5)


TIERS = ("gauge-system", "gauge-summary", "gauge-history", "gauge-task", "gauge-output")
MINIMUM = {  # (colour, against, contrast ratio at least)
    "text": ("foreground", "background", 7.0),
    "pane borders": ("pane-border", "background", 2.0),
    "the focused pane's border and the selection": ("primary", "background", 3.0),
    "the judge's border": ("secondary", "background", 2.0),
    "free gauge cells": ("gauge-free", "background", 1.3),
}


async def test_each_theme_is_legible_in_256_colours() -> None:
    app = MootApp(state_dir=None)
    async with app.run_test() as pilot:
        for theme in BUNDLED:
            app.theme = theme
            await pilot.pause()
            v = app.theme_variables
            bg = in_256(v["background"])
            for what, (fg, against, least) in MINIMUM.items():
                ratio = contrast(in_256(v[fg]), in_256(v[against]))
                assert ratio >= least, f"{theme}: {what} ({fg} on {against}) has contrast {ratio:.2f} < {least}"
            tiers = [in_256(v[t]) for t in TIERS]
            free = in_256(v["gauge-free"])
            for name, c in zip(TIERS, tiers):
                assert contrast(c, bg) >= 2.5, f"{theme}: {name} on the background"
                assert contrast(c, free) >= 2.0, f"{theme}: {name} next to free cells"
            for (n1, c1), (n2, c2) in itertools.combinations(zip(TIERS, tiers), 2):
                assert delta_e(c1, c2) >= 25, f"{theme}: {n1} and {n2} look alike in 256 colours"


async def test_theme_lists_and_palette_offer_moots_three(recorded) -> None:  # type: ignore[no-untyped-def]
    events = upto(recorded, lambda e: e.type == "call_started")
    runtime = ScriptedRuntime(events=events, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, runtime)
        await command(pilot, "/theme")
        assert "themes: dark, light, high-contrast (/theme all adds Textual's own)" in feedback(app)
        await command(pilot, "/theme all")
        assert "nord" in feedback(app)
        entries = [title for title, _, _ in app.screen.palette_entries() if title.startswith("Theme:")]
        assert entries == ["Theme: dark", "Theme: light", "Theme: high-contrast"]
        assert "Theme" not in [c.title for c in app.get_system_commands(app.screen)]
        assert "Quit" in [c.title for c in app.get_system_commands(app.screen)]


async def test_an_unknown_theme_is_named_literally(recorded) -> None:  # type: ignore[no-untyped-def]
    """A theme named in a config or on the command line is text: "[/x]" is said as written."""
    from textual.app import Notify
    from textual.widgets._toast import Toast

    notices: list[Notify] = []
    runtime = ScriptedRuntime(events=recorded, clock=fixed_clock)
    app = create_app(runtime, cursor_blink=False, clock=fixed_clock, theme="[/x]dark")
    hook = lambda m: notices.append(m) if isinstance(m, Notify) else None  # noqa: E731
    async with app.run_test(size=(100, 30), message_hook=hook) as pilot:
        await settle(pilot, runtime)
    [notice] = notices
    assert str(Toast(notice.notification).render()).startswith("unknown theme '[/x]dark'; using ")

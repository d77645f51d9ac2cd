"""Commands about the app rather than the debate: /theme, /debates, /help, /quit."""

from __future__ import annotations

from ..theming import theme_names
from .base import CommandContext, CommandError


def theme(ctx: CommandContext, name: str | None = None) -> None:
    """`/theme [name]`: switch (the app remembers it); without a name, list them."""
    app = ctx.app
    if name is None or name.lower() == "all":
        shown = theme_names(app.available_themes, everything=name is not None)
        more = "" if name is not None else " (/theme all adds Textual's own)"
        ctx.feedback(f"theme {app.theme}; themes: {', '.join(shown)}{more} — /theme NAME to switch")
        return
    if name not in app.available_themes:
        names = theme_names(app.available_themes)
        raise CommandError(f"unknown theme {name!r} — themes: {', '.join(names)} (/theme all lists more)")
    app.theme = name  # the app remembers it
    ctx.feedback(f"theme {name} (remembered)")


def debates(ctx: CommandContext) -> None:
    """`/debates`: the saved debates, sortable and searchable; this one keeps running."""
    ctx.feedback("")
    ctx.open_debates()


def help_(ctx: CommandContext) -> None:
    """`/help`: every command and key."""
    ctx.feedback("")
    ctx.open_help()


def quit_(ctx: CommandContext) -> None:
    """`/quit`: as the `q` key."""
    ctx.quit_app()

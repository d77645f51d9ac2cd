"""Updating a label's text so that its width follows it, whatever Textual's layout is doing.

Why: Textual (8.2) caches a widget's box model (its size) under a counter that
`refresh(layout=True)` bumps only when no layout of the widget is pending yet. A screen
layout that runs between a label's update and the label's next idle (when its request
reaches the screen) measures the new text and caches it under that counter; another update
before that idle does not bump the counter, so every later layout reuses the size of the
earlier text. Seen here as the header's "turn 12/16" drawn as "turn 12/1" (updated twice in
one step when the screen took events one loop step at a time) and a summary badge that
stayed 0 wide (updated while the layout asked for at its mount was still pending).
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

from ..textual_compat import invalidate_box_model, layout_pending


def update_label(label: Static, text: Text | str, before: str | None = None) -> None:
    """Show `text` in `label`; `before` (the text it showed, when known) spares the layout of
    the whole screen when the width does not change (a counter ticking over)."""
    plain = text.plain if isinstance(text, Text) else text
    if before is not None and cell_len(before) == cell_len(plain) and "\n" not in plain + before:
        label.update(text, layout=False)
        return
    pending = layout_pending(label)
    label.update(text)
    if pending:
        # The layout already asked for will measure this text, not one cached before it.
        invalidate_box_model(label)

"""What each summary lost, in a report: how many facts of what it covered it kept, then each one
it dropped with where it came from (`moot.core.context.facts`), under the summary's text.

Fact texts and their sources quote the debate's messages: one line each, with no control
characters, and escaped (HTML for the page; `<`, `>` and `&` for Markdown, which a viewer may
render as HTML).
"""

from __future__ import annotations

import html

from ..models.state import Summary
from ..safety.sanitize import one_line_safe
from .html_parts import Html

KINDS = {"decision": "decision", "number": "number", "open": "open question"}


def _md(text: str) -> str:
    return html.escape(one_line_safe(text), quote=False)


def facts_markdown(s: Summary) -> list[str]:
    """Markdown lines under a summary (none for a summary whose facts were not counted)."""
    total, kept = s.metadata.facts, s.metadata.facts_kept
    if total is None or kept is None:
        return []
    lost = s.dropped_facts or []
    out = [f"_Kept {kept} of {total} facts of what it covered" + ("; lost:_" if lost else "._"), ""]
    if lost:
        out += [f"- {KINDS[f.kind]}: {_md(f.text)} ({_md(f.source)})" for f in lost] + [""]
    return out


def facts_html(h: Html, s: Summary) -> str:
    """The same as HTML (empty for a summary whose facts were not counted)."""
    total, kept = s.metadata.facts, s.metadata.facts_kept
    if total is None or kept is None:
        return ""
    lost = s.dropped_facts or []
    head = f'<p class="muted">Kept {kept} of {total} facts of what it covered{"; lost:" if lost else "."}</p>'
    items = "".join(f"<li>{KINDS[f.kind]}: {h.text(one_line_safe(f.text))} "
                    f'<span class="muted">({h.text(one_line_safe(f.source))})</span></li>' for f in lost)
    return head + (f'<ul class="dropped-facts">{items}</ul>' if lost else "")

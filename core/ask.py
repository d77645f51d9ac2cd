"""Asking the user clarifying questions on the terminal (headless mode)."""

from __future__ import annotations

import sys

from .models.state import Clarification
from .safety.sanitize import one_line_safe


async def ask_on_stdin(questions: list[Clarification]) -> list[str]:
    """Print each question on stderr and read one line per answer from stdin.

    A blank line means "no answer"; end of input answers every remaining question
    with no answer, so a non-interactive run never hangs."""
    answers: list[str] = []
    print(f"\n{len(questions)} clarifying question(s); answer each on one line (blank = no answer):",
          file=sys.stderr, flush=True)
    eof = False
    for i, q in enumerate(questions, 1):
        # A model wrote the question: one line, no escape sequences.
        print(f"  {i}. [{one_line_safe(q.agent_id)}] {one_line_safe(q.question)}", file=sys.stderr, flush=True)
        if eof:
            answers.append("")
            continue
        line = await _readline()
        if line == "":
            eof = True
        answers.append(line.strip())
    return answers


async def _readline() -> str:
    """One line of stdin without blocking the event loop (the reader a person's turns share)."""
    from .human.stdin_lines import stdin_lines

    return await stdin_lines().readline()

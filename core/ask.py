"""Asking the user clarifying questions on the terminal (headless mode)."""

from __future__ import annotations

import asyncio
import sys

from core.models import Clarification


async def ask_on_stdin(questions: list[Clarification]) -> list[str]:
    """Print each question on stderr and read one line per answer from stdin.

    A blank line means "no answer"; end of input answers every remaining question
    with no answer, so a non-interactive run never hangs."""
    answers: list[str] = []
    print(f"\n{len(questions)} clarifying question(s); answer each on one line (blank = no answer):",
          file=sys.stderr, flush=True)
    eof = False
    for i, q in enumerate(questions, 1):
        print(f"  {i}. [{q.agent_id}] {q.question}", file=sys.stderr, flush=True)
        if eof:
            answers.append("")
            continue
        line = await asyncio.to_thread(sys.stdin.readline)
        if line == "":
            eof = True
        answers.append(line.strip())
    return answers

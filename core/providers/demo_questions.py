"""The demo provider on a question with a checkable answer (`debate.answer` set, as `moot bench` does).

Offline and scripted like the rest of the demo, but with answers a benchmark can score: an
arithmetic expression in the question is worked out with the usual precedence, and about one
reply in three makes a slip a person makes (left to right, ignoring precedence; or a term
dropped or doubled), seeded per call so the same inputs give the same reply. From round 2, an
agent that reads the others' answers takes the majority of them (its own included) when two
or more agree, so debate and vote can differ from a single answer. Questions without
arithmetic get a seeded guess. It is no model: the figures it gives only exercise the tool.
"""

from __future__ import annotations

import ast
import json
import random
import re
from collections import Counter
from collections.abc import Sequence

from .base import CallHint, Message
from .demo_text import QUESTION

_VERDICTS = (
    "names concrete components and numbers, which makes it easy to check, but it leaves operations vague.",
    "keeps the moving parts few; it says less about how the design behaves under peak load.",
    "covers the failure modes well, at the price of more infrastructure than the problem needs.",
    "is the most complete of the set, though some of its numbers are guesses it does not mark as such.",
)
SLIP = 0.35
"""How often a demo answer goes wrong."""

_EXPR = re.compile(r"\d+(?:\s*[-+*]\s*\d+)+")
_ANSWER = re.compile(r"Answer:\s*\(?([-\w.]+)\)?")


def _value(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        a, b = _value(node.left), _value(node.right)
        return a + b if isinstance(node.op, ast.Add) else a - b if isinstance(node.op, ast.Sub) else a * b
    raise ValueError("not integer arithmetic")


def arithmetic(problem: str) -> tuple[str, int] | None:
    """The first integer expression with + - * in the problem, and its value."""
    m = _EXPR.search(problem)
    if m is None:
        return None
    expr = re.sub(r"\s+", "", m.group(0))
    try:
        return expr, _value(ast.parse(expr, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError):
        return None


def numeric_question(problem: str) -> bool:
    """A question whose answer is a number: it asks ("What is…", "…?") about an arithmetic
    expression. "Design a cache for 200 + 300 rps" asks for a design and is not one."""
    text = problem.strip()
    return arithmetic(text) is not None and (text.endswith("?") or QUESTION.match(text) is not None)


def _left_to_right(expr: str) -> int:
    tokens = re.findall(r"\d+|[-+*]", expr)
    total = int(tokens[0])
    for op, n in zip(tokens[1::2], tokens[2::2], strict=True):
        total = total + int(n) if op == "+" else total - int(n) if op == "-" else total * int(n)
    return total


def _work(expr: str, rng: random.Random, slip: bool) -> tuple[str, int]:
    """Prose steps and the result, right or with one slip."""
    value = _value(ast.parse(expr, mode="eval").body)
    products = re.findall(r"\d+(?:\*\d+)+", expr)
    steps = ", ".join(f"{p.replace('*', ' × ')} = {_value(ast.parse(p, mode='eval').body)}" for p in products)
    if not slip:
        first = f"Multiplication comes before addition and subtraction: {steps}. " if steps else ""
        return f"{first}Adding and subtracting from left to right gives {value}.", value
    kind = rng.choice(["order", "term", "term"]) if products else "term"
    if kind == "order":
        wrong = _left_to_right(expr)
        return f"Working from left to right through {expr.replace('*', ' × ')} gives {wrong}.", wrong
    wrong = value + rng.choice([-10, -2, -1, 1, 2, 10])
    first = f"The products are {steps}. " if steps else ""
    return f"{first}Putting the terms together, the total comes to {wrong}.", wrong


def _guess(hint: CallHint, rng: random.Random) -> str:
    kind = str(hint.extra.get("answer_kind"))
    choices = list(hint.extra.get("choices") or [])
    if kind == "choice":
        return chr(65 + rng.randrange(max(1, len(choices)) if choices else 4))
    if kind in ("number", "boxed"):
        return str(rng.randint(0, 100))
    return rng.choice(["yes", "no"])


def _others(messages: Sequence[Message]) -> list[str]:
    """The answers quoted in the last user message (the previous round's, critiques, material)."""
    last = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
    return [a.strip(".") for a in _ANSWER.findall(last)]


def _form(answer: str, kind: str) -> str:
    return f"\\boxed{{{answer}}}" if kind == "boxed" else f"Answer: {answer}"


def question_reply(messages: Sequence[Message], hint: CallHint, rng: random.Random) -> str | None:
    """The demo's reply on a question, or None for the calls it leaves to the design writer
    (summaries, scores, clarifying questions)."""
    kind = str(hint.extra.get("answer_kind"))
    phase = hint.phase
    if phase not in ("answer", "proposal", "refinement", "critique", "turn", "rank", "synthesis"):
        return None
    found = arithmetic(hint.problem)
    slip = rng.random() < SLIP
    if found is not None:
        reasoning, value = _work(found[0], rng, slip)
        mine = str(value)
    else:
        reasoning, mine = "I weighed the options against what the question states.", _guess(hint, rng)
    others = _others(messages)
    if phase == "rank":
        return _rank(messages, mine, rng)
    if others and phase in ("answer", "refinement", "turn", "synthesis"):
        top, votes = Counter([*others, mine]).most_common(1)[0]
        if votes >= 2 and top != mine:
            reasoning += f" The other answers make a good case for {top}, and on checking I agree with them."
            mine = top
        elif votes >= 2:
            reasoning += " The other answers agree with mine."
    if phase == "synthesis":
        solution = f"{reasoning}\n\n{_form(mine, kind)}"
        return json.dumps({"solution": solution, "confidence": 70 if others else 50, "tradeoffs": [],
                           "recommendations": [], "unresolved": []})
    if phase == "critique":
        return f"Checking the answer step by step. {reasoning}\n\n{_form(mine, kind)}\n"
    return f"{reasoning}\n\n{_form(mine, kind)}\n"


def design_rank(messages: Sequence[Message], rng: random.Random) -> str:
    """A council ranking of free-form answers: a line on each, then a seeded order."""
    return _rank(messages, None, rng)


def _rank(messages: Sequence[Message], mine: str | None, rng: random.Random) -> str:
    """Responses that agree with the ranker's own answer first, the rest in a seeded order."""
    last = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
    blocks = re.split(r"^### Response ([A-Z])\s*$", last, flags=re.MULTILINE)
    labels = blocks[1::2]
    said = {label: (_ANSWER.findall(body) or ["?"])[-1].strip(".") for label, body in zip(labels, blocks[2::2],
                                                                                            strict=False)}
    agree = [x for x in labels if said.get(x) == mine]
    rest = [x for x in labels if x not in agree]
    rng.shuffle(rest)
    if mine is None:
        verdicts = rng.sample(_VERDICTS, len(_VERDICTS)) * (len(labels) // len(_VERDICTS) + 1)
        lines = [f"Response {x} {verdicts[i]}" for i, x in enumerate(labels)]
    else:
        lines = [f"Response {x} reaches {said.get(x, '?')}, which {'matches' if x in agree else 'differs from'} "
                 f"my own result of {mine}." for x in labels]
    order = "\n".join(f"{i}. Response {x}" for i, x in enumerate([*agree, *rest], start=1))
    return "\n".join(lines) + f"\n\nFINAL RANKING:\n{order}\n"

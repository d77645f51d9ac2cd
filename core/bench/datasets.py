"""Questions for `moot bench`: a JSONL file, or a built-in generator.

A JSONL line is `{"id": …, "question": …, "answer": …}` with optional `"choices": [...]`
(lettered A, B, …; the answer is a letter or a choice's text). The answer's form follows:
choices → `choice`; an answer that is a number → `number`; `\\boxed{…}` → `boxed`; else `text`.

`arithmetic:N[:terms=K][:seed=S]` is Du et al.'s (2023) arithmetic task: `a+b*c+d-e*f` with
integers 0–29 at the default six terms; fewer terms make it easier (`a+b*c` at three), more
continue the pattern. Seeded (default 0): the same spec gives the same questions.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..inputs import read_text_file
from ..models.config import AnswerFormat
from ..protocols.answers import normalize_number

OPERATORS = ("+", "*", "+", "-", "*")
"""Operators between consecutive terms, cycled: six terms give Du et al.'s a+b*c+d-e*f."""
MAX_QUESTIONS = 100_000
MAX_DATASET_BYTES = 64 * 1024 * 1024
MAX_ANSWER_DIGITS = 1000
"""A longer number is refused: Python will not even turn it into text past 4,300 digits, and no
model's reply could be compared with it."""


class _Unscorable(ValueError):
    """A JSON constant (NaN, Infinity) that parses but can never equal a model's answer."""


def _refuse_constant(name: str) -> object:
    raise _Unscorable(f"{name} is not a number an answer can be compared with")


def _parse_line(line: str, where: str) -> object:
    """One JSONL line, or one line naming what is wrong with it: a nesting deep enough to
    exhaust the recursion limit and an integer too long for Python are refusals too."""
    try:
        return json.loads(line, parse_constant=_refuse_constant)
    except _Unscorable as exc:
        raise InputError(f"{where}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not JSON ({exc.msg})") from None
    except ValueError:
        raise InputError(f"{where}: a number longer than {MAX_ANSWER_DIGITS} digits cannot be scored") from None
    except RecursionError:
        raise InputError(f"{where}: nested too deeply to be a question") from None


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answer: str
    choices: list[str] = field(default_factory=list)

    @property
    def format(self) -> AnswerFormat:
        if self.choices:
            return AnswerFormat(kind="choice", choices=self.choices)
        if "\\boxed" in self.answer:
            return AnswerFormat(kind="boxed")
        if normalize_number(self.answer) is not None and re.fullmatch(r"[-+\d.,\s]+", self.answer.strip()):
            return AnswerFormat(kind="number")
        return AnswerFormat(kind="text")

    @property
    def expected(self) -> str:
        """The answer as compared (a `\\boxed{x}` answer compares as x)."""
        m = re.search(r"\\boxed\{(.*)\}", self.answer)
        return m.group(1) if m else self.answer


@dataclass(frozen=True)
class Dataset:
    name: str
    """As given on the command line (a path, or the generator spec)."""
    questions: list[Question]
    fingerprint: str
    """A short hash of the questions: part of every debate id, so another data set never
    resumes this one's debates."""


def _fingerprint(questions: list[Question]) -> str:
    h = hashlib.sha256()
    for q in questions:
        h.update(json.dumps([q.id, q.question, q.answer, q.choices], ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()[:8]


def arithmetic(n: int, terms: int = 6, seed: int = 0) -> list[Question]:
    """Du et al.'s arithmetic questions: `terms` integers 0–29 joined by OPERATORS, evaluated with
    the usual precedence."""
    rng = random.Random(f"moot-arithmetic-{terms}-{seed}")
    out = []
    for i in range(n):
        nums = [rng.randint(0, 29) for _ in range(terms)]
        expr = str(nums[0]) + "".join(f"{OPERATORS[k % len(OPERATORS)]}{x}" for k, x in enumerate(nums[1:]))
        value = eval_arithmetic(expr)
        out.append(Question(id=f"a{i + 1:0{len(str(n))}d}",
                            question=f"What is the result of {expr}? Give the final answer as a single number "
                                     "on the last line, in the form `Answer: <number>`.",
                            answer=str(value)))
    return out


def eval_arithmetic(expr: str) -> int:
    """`+ - *` over non-negative integers with the usual precedence (no eval)."""
    total, term, sign = 0, 1, 1
    for op, num in re.findall(r"([-+*]?)(\d+)", expr):
        if op in ("+", "-"):
            total += sign * term
            sign, term = (1 if op == "+" else -1), int(num)
        elif op == "*":
            term *= int(num)
        else:
            term = int(num)
    return total + sign * term


def _generator(spec: str) -> Dataset:
    parts = spec.split(":")
    if len(parts) < 2 or not parts[1].isdigit() or int(parts[1]) < 1:
        raise InputError(f"bad data set {spec!r}: write arithmetic:N[:terms=K][:seed=S], e.g. arithmetic:100")
    n = int(parts[1])
    opts = {"terms": 6, "seed": 0}
    for part in parts[2:]:
        key, _, value = part.partition("=")
        if key not in opts or not value.lstrip("-").isdigit():
            raise InputError(f"bad data set option {part!r} in {spec!r}: terms=K (2–20) or seed=S")
        opts[key] = int(value)
    if not 2 <= opts["terms"] <= 20 or n > MAX_QUESTIONS:
        raise InputError(f"bad data set {spec!r}: terms must be 2–20 and N at most {MAX_QUESTIONS}")
    questions = arithmetic(n, opts["terms"], opts["seed"])
    return Dataset(spec, questions, _fingerprint(questions))


def _jsonl(path: Path) -> Dataset:
    text = read_text_file(path, "data set", max_bytes=MAX_DATASET_BYTES, error=InputError)
    questions: list[Question] = []
    seen: set[str] = set()
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{no}"
        row = _parse_line(line, where)
        if not isinstance(row, dict):
            raise InputError(f"{where}: expected an object with id, question, answer")
        missing = [k for k in ("question", "answer") if k not in row]
        if missing:
            raise InputError(f"{where}: missing {', '.join(missing)}")
        qid = str(row.get("id", no))
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", qid):
            raise InputError(f"{where}: id {qid[:50]!r} must be 1–40 letters, digits, _ . -")
        if qid in seen:
            raise InputError(f"{where}: duplicate id {qid!r}")
        seen.add(qid)
        choices = row.get("choices") or []
        if not isinstance(choices, list) or not all(isinstance(c, (str, int, float)) for c in choices) \
                or len(choices) > 26:
            raise InputError(f"{where}: choices must be a list of at most 26 texts")
        if not isinstance(row["question"], str) or not str(row["question"]).strip():
            raise InputError(f"{where}: question must be non-empty text")
        questions.append(Question(qid, row["question"], _answer(row["answer"], where), [str(c) for c in choices]))
        if len(questions) > MAX_QUESTIONS:
            raise InputError(f"{path}: more than {MAX_QUESTIONS} questions")
    if not questions:
        raise InputError(f"{path}: no questions")
    return Dataset(str(path), questions, _fingerprint(questions))


_JSON_KINDS = {list: "a list", dict: "an object", bool: "true or false", type(None): "null"}


def _answer(value: object, where: str) -> str:
    """A row's expected answer as text. Text or a number only: `str()` would make a list
    "[12, 13]" and null "None", answers no model gives, and every question would be scored
    wrong without a word."""
    if isinstance(value, str) and value.strip():
        digits = sum(ch.isdigit() for ch in value)
        if digits > MAX_ANSWER_DIGITS and re.fullmatch(r"[-+\d.,\s]+", value.strip()):
            raise InputError(f"{where}: the answer has {digits} digits; at most {MAX_ANSWER_DIGITS} can be scored")
        return value
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{where}: the answer {value} is not a finite number and can never be scored")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = str(value)
        if len(text) > MAX_ANSWER_DIGITS:
            raise InputError(f"{where}: the answer has {len(text)} digits; at most {MAX_ANSWER_DIGITS} can be scored")
        return text
    kind = "empty text" if isinstance(value, str) else _JSON_KINDS.get(type(value), type(value).__name__)
    raise InputError(f"{where}: answer must be text or a number, not {kind}")


def load_dataset(spec: str) -> Dataset:
    """A data set from a JSONL path or a generator spec (`arithmetic:100:terms=3`)."""
    if spec.startswith("arithmetic:") or spec == "arithmetic":
        return _generator(spec)
    path = Path(spec).expanduser()
    if not path.exists():
        raise InputError(f"no data set {spec!r}: give a JSONL file or a generator such as arithmetic:100")
    return _jsonl(path)


def problem_text(q: Question) -> str:
    """The problem each debate gets: the question, its choices, and the form of the answer."""
    fmt = q.format
    parts = [q.question.strip()]
    if fmt.kind == "choice":
        parts.append("\n".join(f"{chr(65 + i)}) {c}" for i, c in enumerate(q.choices)))
    form = {"number": "a single number, in the form `Answer: <number>`",
            "choice": "the letter of one choice, in the form `Answer: <letter>`",
            "boxed": "in LaTeX as `\\boxed{<answer>}`",
            "text": "in the form `Answer: <answer>`, exactly as short as possible"}[fmt.kind]
    if "Answer:" not in q.question and "\\boxed" not in q.question:
        parts.append(f"Give the final answer on the last line, {form}.")
    return "\n\n".join(parts)

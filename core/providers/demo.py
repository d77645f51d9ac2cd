"""DemoProvider: an offline, deterministic, clearly labelled stand-in for a real model.

It lets the whole app (debate flow, context management, TUI streaming, cost display)
run with no API key and no network. Replies are written from the CallHint with
per-role phrase banks (package data, `demo_phrases`), seeded from a stable hash of the call
so that the same inputs always give the same text (tests and snapshots rely on that).

Over 400 lines: the scripted answers for every kind of call (proposals, critiques, turns,
summaries, judge JSON, tool calls) in one provider; its phrases and texts live beside it
(`demo_phrases`, `demo_text`, `demo_questions`, `demo_tools`, `demo_people`).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import re
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from ..errors import ProviderError
from ..models.provider_kinds import DEMO
from ..tokens import count_messages, count_text, encoding_for_model, truncate_to_tokens
from .base import CallHint, ChatRequest, Completion, Finished, JsonMode, Message, StreamItem, TextDelta
from .demo_people import answer_person
from .demo_phrases import phrase_banks
from .demo_questions import design_rank, numeric_question, question_reply
from .demo_text import (
    MARKER,
    PART,
    TURN_HEAD,
    bullets,
    last_user,
    merge_parts,
    problem_nouns,
    problem_topic,
    stable_seed,
    text_blocks,
    without_repeats,
)
from .demo_tools import next_call, reading_note

DEFAULT_DELAY_S = 0.02
DELAY_ENV = "MOOT_DEMO_DELAY"


class DemoProvider:
    """Scripted replies written from the CallHint; no key, no network, same input → same text."""

    name = DEMO.name
    kind = DEMO
    label = "DEMO (offline, scripted)"
    slots: int | None = None
    llama_cpp: bool = False
    supports_tools: bool | None = True
    json_mode: JsonMode = "schema"
    """Every JSON answer it writes follows the schema it was given."""

    def keep_slots(self, speakers: Sequence[str]) -> dict[str, int]:
        return {}

    def __init__(
        self,
        delay_s: float | None = None,
        chunk_tokens: int = 3,
        *,
        fail_phases: set[str] | frozenset[str] = frozenset(),
    ) -> None:
        if delay_s is None:
            try:
                delay_s = float(os.environ.get(DELAY_ENV, DEFAULT_DELAY_S))
            except ValueError:  # a bad env value should not stop the demo
                delay_s = DEFAULT_DELAY_S
        if not math.isfinite(delay_s):  # `inf` would hang every call, `nan` is no delay at all
            delay_s = DEFAULT_DELAY_S
        self.delay_s = max(0.0, delay_s)
        self.chunk_tokens = max(1, int(chunk_tokens))
        self.fail_phases = frozenset(fail_phases)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamItem]:
        """Write, cap at max_tokens, then stream the reply in small word-aligned chunks."""
        hint = request.hint
        model = request.model or "demo"
        if hint.phase in self.fail_phases:
            raise ProviderError(f"demo provider: injected failure in {hint.phase}")
        call = next_call(request.messages, hint, request.tools)
        if call is not None:  # a scripted tool call, as a real model's comes: no text, finish "tool_calls"
            await asyncio.sleep(0)
            yield Finished(Completion(content="", prompt_tokens=count_messages(request.messages, model),
                                      completion_tokens=count_text(call.arguments, model) + 8, model=model,
                                      finish_reason="tool_calls", tool_calls=[call]))
            return
        text = self.write(request.messages, hint, model=model, max_tokens=request.max_tokens)
        if hint.phase in ("proposal", "answer", "turn"):
            text += reading_note(request.messages)
        finish = "stop"
        if count_text(text, model) > request.max_tokens:
            text = truncate_to_tokens(text, request.max_tokens, model)
            finish = "length"
        await asyncio.sleep(0)  # like any real call, let the event loop run (commands, other views)
        for i, chunk in enumerate(self._chunks(text, model)):
            if i and self.delay_s > 0:
                await asyncio.sleep(self.delay_s)
            yield TextDelta(chunk)
        yield Finished(Completion(
            content=text,
            prompt_tokens=count_messages(request.messages, model),
            completion_tokens=count_text(text, model),
            model=model,
            finish_reason=finish,
            json_constrained=request.json_answer is not None,
        ))

    async def aclose(self) -> None:
        """Nothing to release."""

    async def discover_window(self, model: str) -> int | None:
        """The demo provider has no window: the configured budget is the truth."""
        return None

    async def discover_tools(self) -> None:
        """The demo provider calls tools (scripted)."""

    def _chunks(self, text: str, model: str) -> list[str]:
        """Word-aligned pieces of about chunk_tokens tokens that concatenate back to text."""
        enc = encoding_for_model(model)
        chunks: list[str] = []
        current, n = "", 0
        for piece in re.findall(r"\s*\S+|\s+", text):
            current += piece
            n += len(enc.encode_ordinary(piece))
            if n >= self.chunk_tokens:
                chunks.append(current)
                current, n = "", 0
        if current:
            chunks.append(current)
        return chunks

    # ----------------------------------------------------------------- writing

    def write(
        self, messages: Sequence[Message], hint: CallHint, *, model: str = "demo", max_tokens: int = 4096
    ) -> str:
        """The full reply for a call, before streaming (public so tools can preview it). When a
        person takes part (`--human`), a debater's reply opens by answering what they wrote."""
        text = self._write(messages, hint, model=model, max_tokens=max_tokens)
        people = [str(p) for p in hint.extra.get("people", [])]
        if hint.phase == "turn":  # a turn answers its previous speaker by name already (`_turn`)
            heads = [h for m in messages[:-1] for h in TURN_HEAD.findall(m.get("content", ""))]
            if heads and heads[-1] in people:
                people = []
        if people and hint.phase in ("proposal", "critique", "refinement", "answer", "turn"):
            banks = phrase_banks()
            role = hint.role if hint.role in banks.roles else "generalist"
            rng = random.Random(stable_seed("person", hint.agent_id, hint.round, last_user(messages)))
            opening = answer_person(messages, people, hint.role or "generalist", banks.roles[role]["lens"], rng)
            if opening:
                text = f"{opening}\n\n{text}"
        return text

    def _write(
        self, messages: Sequence[Message], hint: CallHint, *, model: str = "demo", max_tokens: int = 4096
    ) -> str:
        banks = phrase_banks()
        last = last_user(messages)
        rng = random.Random(
            stable_seed(hint.phase, hint.role, hint.agent_id, hint.round, hint.target_agent_id, hint.problem, last)
        )
        # A question with a checkable answer (moot bench), or one whose answer is a number ("What is
        # 17 * 23?"): answered with a number, whatever the protocol, not with a design.
        if hint.extra.get("answer_kind") or numeric_question(hint.problem):
            reply = question_reply(messages, hint, rng)
            if reply is not None:
                return reply
        if hint.phase == "rank":
            return design_rank(messages, rng)
        nouns = problem_nouns(hint.problem)
        role = hint.role if hint.role in banks.roles else "generalist"
        ctx = {
            "topic": problem_topic(hint.problem), "noun": nouns[0], "noun2": nouns[1],
            "role": hint.role or "generalist",
            "lens": banks.roles[role]["lens"], "target": hint.target_role or "other",
            "p99": rng.choice([50, 80, 120, 200]), "replicas": rng.choice([2, 3, 5]), "ttl": rng.choice([1, 6, 24, 72]),
            "rps": rng.choice([200, 500, 1000, 2500]), "rps_small": rng.choice([60, 120, 300]),
            "cov": rng.choice([80, 85, 90]), "days": rng.choice([30, 90, 365]), "weeks": rng.choice([4, 6, 8]),
        }
        bank = banks.roles[role]

        def fmt(template: str) -> str:
            """Fill a phrase; the topic may open a sentence, so capitalise its first letter."""
            text = without_repeats(template.format_map(ctx))
            return text[:1].upper() + text[1:]

        def frag(template: str) -> str:
            """Fill a phrase that goes mid-sentence (no capitalisation)."""
            return without_repeats(template.format_map(ctx))

        pick = lambda key, k: [fmt(s) for s in rng.sample(bank[key], k)]  # noqa: E731
        phase = "score" if hint.phase == "convergence" else hint.phase

        if phase in ("proposal", "refinement"):
            position = [fmt(rng.choice(banks.openers)), fmt(rng.choice(bank["position"])),
                        fmt(rng.choice(banks.closers))]
            keep, change = frag(rng.choice(bank["keeps"])), frag(rng.choice(bank["changes"]))
            if phase == "refinement":
                critics = [r for r in banks.roles if r != role and r in last.lower()][:3]
                names = " and ".join([", ".join(critics[:-1]), critics[-1]] if len(critics) > 1 else critics)
                by = f"the {names} critiques" if critics else "the critiques"
                position.insert(
                    0, f"In response to {by} I change {change}, and I keep {keep} because nobody found a flaw in it."
                )
            elif hint.round > 1:
                position.insert(
                    0,
                    f"In round {hint.round} I keep {keep} and change {change}, "
                    f"revising after the feedback of round {hint.round - 1}.",
                )
            n_design = 4 if phase == "refinement" else 5
            risks = pick("risks", 3) + [fmt(rng.choice(banks.shared_risks))]
            return (
                f"## Position\n\n{' '.join(position)}\n\n## Design\n\n{bullets(pick('design', n_design))}\n\n"
                f"## Key decisions\n\n{bullets(pick('decisions', 4))}\n\n"
                f"## Risks / open questions\n\n{bullets(risks)}\n"
            )
        if phase == "critique":
            # Quote a concrete line of the target proposal, preferring its bullet points.
            lines = [ln for ln in last.splitlines() if len(ln.split()) >= 6 and not ln.lstrip().startswith("#")]
            items = [ln for ln in lines if MARKER.match(ln)] or lines
            quote = ""
            if items:
                words = re.sub(r"[*`_]", "", MARKER.sub("", rng.choice(items[:6]))).split()
                quote = " ".join(words[:8]).strip(".,;:")
            intro = (
                f"Reviewing the **{ctx['target']}** proposal for {ctx['topic']} through the {role} lens: "
                f"{bank['lens']}. I keep to what matters most from that angle and leave the rest to the other agents."
            )
            if quote:
                intro += f' The line "{quote}…" sets the tone, and I judge the rest against it.'
            return (
                f"{intro}\n\n## Strengths\n\n{bullets(pick('strengths', rng.choice([2, 3])))}\n\n"
                f"## Weaknesses\n\n{bullets(pick('weaknesses', rng.choice([2, 3])))}\n\n"
                f"## Suggestions\n\n{bullets(pick('suggestions', rng.choice([2, 3])))}\n\n"
                f"Overall the {ctx['target']} view is a useful anchor. With the weaknesses above addressed I would "
                f"support it, and I would ask its author to say how each change will be measured for {ctx['noun']}.\n"
            )
        if phase == "turn":
            return self._turn(messages, hint, rng, fmt, pick, bank, ctx)
        if phase == "answer":
            intro = (f"{fmt(rng.choice(banks.openers))} {fmt(rng.choice(bank['position']))}" if hint.round <= 1 else
                     f"In round {hint.round} I keep {frag(rng.choice(bank['keeps']))} and change "
                     f"{frag(rng.choice(bank['changes']))}, taking the other agents' answers as advice.")
            changes = ("none" if hint.round <= 1 else
                       fmt(f"I moved {rng.choice(bank['changes'])} because the others showed it was the weak spot."))
            return (f"## Answer\n\n{intro}\n\n{bullets(pick('design', 4))}\n\n## Reasoning\n\n"
                    f"{bullets(pick('decisions', 3))}\n\n## Changes since your last answer\n\n{changes}\n")
        if phase == "summarize":
            # The material: inside the task's <history> tags, or (layout 2) the summary and history
            # messages before the task.
            between = "\n\n".join(m["content"] for m in messages[1:-1])
            material = last if "<history>" in last or not between else between
            return self._summarize(material, int(hint.extra.get("max_chars", 2500)), model, max_tokens)
        if phase == "synthesis":
            return self._synthesis(hint, rng, fmt, ctx, model, max_tokens)
        if phase == "score":
            confidence = min(95, 55 + 15 * max(1, hint.round))
            reason = fmt(f"Round {hint.round}: the agents now agree on the shape of the {{noun}} design; "
                         "remaining differences are about numbers and rollout, not direction.")
            return json.dumps({"confidence": confidence, "reason": reason})
        if phase == "clarify":
            limit = max(0, int(hint.extra.get("max_questions", 5)))
            questions = [fmt(q) for q in bank["questions"]][: min(limit, rng.choice([1, 2]))]
            return json.dumps({"questions": [{"question": q} for q in questions]}, indent=2)
        if phase == "evaluate":
            values = {k: rng.randint(5, 9) for k in banks.eval_reasons}
            scores: dict[str, dict[str, object]] = {
                k: {"score": values[k], "reason": fmt(r)} for k, r in banks.eval_reasons.items()}
            overall = round(sum(values.values()) / len(values))
            scores["overall"] = {"score": overall, "reason": "Average of the criteria above, rounded."}
            return json.dumps({"scores": scores}, indent=2)
        return (
            f"## Answer\n\n{fmt(rng.choice(bank['position']))}\n\n"
            f"{bullets(pick('suggestions', 2))}\n\n_Written by the offline demo provider._\n"
        )

    def _turn(self, messages: Sequence[Message], hint: CallHint, rng: random.Random, fmt: Callable[[str], str],
              pick: Callable[[str, int], list[str]], bank: dict[str, Any], ctx: dict[str, Any]) -> str:
        """A conversation turn: answer the previous speaker by name, then add one new point."""
        banks = phrase_banks()
        previous = ""
        quote = ""
        for m in reversed(messages[:-1]):
            if m.get("content", "").startswith("## Recalled"):
                continue  # old turns the recall tier brought back (after the window): not the previous speaker
            heads = TURN_HEAD.findall(m.get("content", ""))
            if heads:
                previous = heads[-1]
                tail = m["content"].rsplit(f"· {previous} (", 1)[-1]
                lines = [ln for ln in tail.splitlines() if len(ln.split()) >= 6 and not ln.lstrip().startswith("#")]
                if lines:
                    words = re.sub(r"[*`_]", "", MARKER.sub("", rng.choice(lines[:4]))).split()
                    quote = " ".join(words[:8]).strip(".,;:")
                break
        if previous:
            opener = rng.choice([
                f"{previous}, I agree with part of that",
                f"I see it differently from {previous}",
                f"Building on what {previous} said",
                f"{previous} raises a fair point",
            ])
            opener += f' ("{quote}…"), ' if quote else ", "
            opener += f"but from the {hint.role} side what decides it is {bank['lens']}."
        else:
            opener = f"{fmt(rng.choice(banks.openers))} {fmt(rng.choice(bank['position']))}"
        body = fmt(rng.choice(bank["position"] + bank["design"]))
        risk = fmt(rng.choice(bank["risks"]))
        ask = fmt(rng.choice(bank["questions"]))
        return f"{opener}\n\n{body} {risk}\n\n- {fmt(rng.choice(bank['decisions']))}\n- {ask}\n"

    def _summarize(self, material: str, max_chars: int, model: str = "demo", max_tokens: int = 4096) -> str:
        """Headline + first sentence of each block, capped below the material's length; for the
        reduce step of chunk-and-reduce, the partial summaries' own lines (`merge_parts`)."""
        # Summarize only the material inside the prompt's <history> tags, not the instructions.
        start, end = material.find("<history>"), material.rfind("</history>")
        if start != -1 and end > start:
            material = material[start + len("<history>") : end]
        limit = min(max_chars, len(material.strip()) - 1)
        if limit <= 0:
            return ""
        if PART.search(material):
            # Fit the reply's token limit by giving every part less room, not by losing the
            # newest parts to the cut at max_tokens.
            text = merge_parts(material, limit)
            for _ in range(4):
                n = count_text(text, model)
                if n <= max_tokens:
                    break
                limit = int(limit * max_tokens / n * 0.95)
                text = merge_parts(material, limit)
            return text
        lines: list[str] = []
        blocks = text_blocks(material)
        for i, (title, sentence) in enumerate(blocks):
            line = f"- **{title}**: {sentence}" if title and sentence else f"- {title or sentence}"
            candidate = "\n".join([*lines, line])
            if len(candidate) > limit:
                rest = f"- … ({len(blocks) - i} more sections)"
                room = limit - len("\n".join(lines)) - (1 if lines else 0)
                if lines and room > 80:  # a small budget (a chunk of many): part of a line says more
                    lines.append(line[: room - 1].rsplit(" ", 1)[0] + "…")
                elif lines and len("\n".join([*lines, rest])) <= limit:
                    lines.append(rest)
                elif not lines:
                    lines.append(line[: max(0, limit - 1)].rstrip() + "…" if limit > 1 else "")
                break
            lines.append(line)
        return "\n".join(lines)

    def _synthesis(
        self,
        hint: CallHint,
        rng: random.Random,
        fmt: Callable[[str], str],
        ctx: dict[str, Any],
        model: str,
        max_tokens: int,
    ) -> str:
        """The judge's JSON verdict; the solution text shrinks so the JSON always fits max_tokens."""
        banks = phrase_banks()
        agents = [str(a) for a in hint.extra.get("agents", [])] or ["architect", "performance", "security"]
        parts = []
        for name in agents[:5]:
            bank = banks.roles.get(name, banks.roles["generalist"])
            parts.append(f"- From the **{name}** view: {fmt(rng.choice(bank['design']))}")
        lenses = [banks.roles.get(a, banks.roles["generalist"])["lens"] for a in agents]
        why = (
            f"The {agents[0]} perspective set the structure ({lenses[0]})"
            + (f"; the {agents[-1]} perspective set the limits ({lenses[-1]})." if len(agents) > 1 else ".")
            + " Where the agents disagreed, the synthesis keeps the option that is cheaper to reverse and writes down"
            " the number that would make us revisit it. The result is less ambitious than the most elaborate"
            " proposal and more robust than the simplest one."
        )
        decisions = [fmt(rng.choice(banks.roles.get(a, banks.roles["generalist"])["decisions"])) for a in agents[:3]]
        solution = (
            f"## Recommended solution\n\nFor {ctx['topic']}, the debate converged on a modular design with a clear "
            f"owner for {ctx['noun']} and {ctx['noun2']}, measurable targets, and a phased rollout. "
            f"It combines the strongest points of {', '.join(agents[:5])} and drops the parts no one could justify "
            "with a number.\n\n## Why this shape\n\n" + why
            + "\n\n## Components\n\n" + "\n".join(parts)
            + "\n\n## Key numbers\n\n" + bullets(decisions)
            + "\n\n## Operations\n\n"
            "- Dashboards for latency, traffic, errors and saturation before the first user arrives.\n"
            "- Runbooks for the three most likely incidents, and an on-call rotation of at least four people.\n"
            "- A written review of every incident, feeding changes back into this design.\n"
            "\n## Rollout\n\n- Milestone 1: the core journey behind a feature flag, with dashboards and alerts.\n"
            "- Milestone 2: harden security and data constraints, then load test at twice the expected peak.\n"
            "- Milestone 3: open to all users and review the design with production data.\n"
        )
        risks = [fmt(r) for a in agents for r in banks.roles.get(a, banks.roles["generalist"])["risks"]]
        obj: dict[str, Any] = {
            "solution": solution,
            "confidence": rng.randint(60, 95),
            "tradeoffs": [fmt(t) for t in rng.sample(banks.tradeoffs, 3)],
            "recommendations": [fmt(r) for r in rng.sample(banks.recommendations, 3)],
            "unresolved": rng.sample(risks, rng.choice([1, 2])),
        }
        text = json.dumps(obj, ensure_ascii=False, indent=2)
        for _ in range(6):  # shrink the solution so the JSON stays valid within max_tokens
            overflow = count_text(text, model) - max_tokens
            if overflow <= 0 or not obj["solution"]:
                break
            keep = max(0, count_text(obj["solution"], model) - overflow - 4)
            obj["solution"] = truncate_to_tokens(obj["solution"], keep, model)
            text = json.dumps(obj, ensure_ascii=False, indent=2)
        return text

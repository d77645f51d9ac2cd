"""Running the evaluators: each one's prompt fitted to its model's window, all concurrently, a
failure recorded on its result and never raised."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .. import prompts
from ..config import ResolvedAgent
from ..errors import ContextTooLong, ProviderError
from ..models.config import AgentConfig, ContextConfig, SummarizationConfig
from ..models.state import DebateState, Solution
from ..providers.base import CallHint, ChatRequest, Message, Provider, complete
from ..providers.pool import ProviderPool
from ..safety.secrets import known_secrets, redact
from ..tokens import count_messages, count_text, truncate_to_tokens
from .evaluators import EvaluatorConfig
from .scores import EvaluatorResult, mask_result, parse_scores

EVAL_MAX_TOKENS = 1200
EVAL_MIN_TOKENS = 320
"""The floor of an evaluator's answer at a small window: seven scores with a short reason each."""
SHORTENED = "\n\n[… shortened to fit the evaluator's context window]"


def solution_block(sol: Solution) -> str:
    """The final solution as the evaluators see it (without the judge's confidence, to avoid anchoring)."""
    parts = [sol.description.strip()]
    for title, items in (("Trade-offs", sol.tradeoffs), ("Recommendations", sol.recommendations),
                         ("Unresolved points", sol.unresolved)):
        if items:
            parts.append(f"{title}:\n" + "\n".join(f"- {i}" for i in items))
    return "\n\n".join(parts)


async def run_evaluators(state: DebateState, evaluators: list[EvaluatorConfig], *,
                         demo_delay: float | None = None) -> list[EvaluatorResult]:
    """Every evaluator, concurrently; a failure is recorded on its result, never raised.

    Prompts and providers are prepared first, so a bad prompt path or a missing key is
    a configuration error (exit 4) before any call is made."""
    assert state.final_solution is not None
    solution = solution_block(state.final_solution)
    pools: dict[float, ProviderPool] = {}
    jobs: list[tuple[EvaluatorConfig, Provider, EvalPrompt]] = []
    for ev in evaluators:
        pool = pools.setdefault(ev.timeout_s, ProviderPool(demo_delay=demo_delay, timeout_s=ev.timeout_s,
                                                           max_retries=2))
        agent = AgentConfig(id=ev.id, name=ev.name, role="generalist", model=ev.model, provider=ev.provider,
                            temperature=ev.temperature, base_url=ev.base_url)
        provider = pool.get(ResolvedAgent(config=agent, summarization=SummarizationConfig(), context=ContextConfig(),
                                          provider=str(ev.provider), model=str(ev.model)))
        template = prompts.load("evaluator", "evaluate", ev.user_prompt_path)
        system = prompts.load("evaluator", "system", ev.system_prompt_path)
        jobs.append((ev, provider, EvalPrompt(system, template, state.problem, solution)))
    # Every key in use is known once the providers exist: what comes back is masked before
    # anything reads it (a parse error quotes the reply, cut to a snippet).
    secrets = [*known_secrets(), *(s for pool in pools.values() for s in pool.secrets)]
    try:
        results = list(await asyncio.gather(*(_evaluate_one(ev, provider, prompt, state.problem, secrets)
                                              for ev, provider, prompt in jobs)))
    finally:
        for pool in pools.values():
            await pool.aclose()
    return [mask_result(r, secrets) for r in results]


@dataclass(frozen=True)
class EvalPrompt:
    """An evaluator's request before it is fitted to a window."""

    system: str
    template: str
    problem: str
    solution: str

    def messages(self, window: int | None, ratio: float = 1.0, model: str | None = None) -> tuple[list[Message], int]:
        """The messages and the answer's limit for a server `window` (None: unknown) whose
        tokenizer counts `ratio` × moot's: the solution is shortened (marked) where the whole
        would not fit beside the answer, and the answer shrinks to its floor before that."""
        def build(solution: str) -> list[Message]:
            return [{"role": "system", "content": self.system},
                    {"role": "user", "content": prompts.render(self.template, problem=self.problem,
                                                               solution=solution)}]

        messages = build(self.solution)
        if window is None:
            return messages, EVAL_MAX_TOKENS
        reply = min(EVAL_MAX_TOKENS, max(EVAL_MIN_TOKENS, window // 3))
        need = math.ceil(count_messages(messages, model) * ratio)
        if need + reply <= window:
            return messages, reply
        reply = max(min(reply, EVAL_MIN_TOKENS), window - need)
        over = math.ceil((need + reply - window) / ratio) + 16
        if over > 16:
            keep = max(32, count_text(self.solution, model) - over)
            messages = build(truncate_to_tokens(self.solution, keep, model) + SHORTENED)
        return messages, max(1, min(reply, window - math.ceil(count_messages(messages, model) * ratio)))


async def _evaluate_one(ev: EvaluatorConfig, provider: Provider, prompt: EvalPrompt,
                        problem: str, secrets: Sequence[str] = ()) -> EvaluatorResult:
    result = EvaluatorResult(ev.id, ev.name or ev.id, str(ev.provider), str(ev.model))
    hint = CallHint(phase="evaluate", role="evaluator", agent_id=ev.id, problem=problem)
    started = time.perf_counter()
    model = str(ev.model)
    try:
        window = await provider.discover_window(model)
        ratio = 1.0
        for attempt in range(3):  # a context-length refusal teaches the window (and the count), then again
            messages, max_tokens = prompt.messages(window, ratio, model)
            try:
                done = await complete(provider, ChatRequest(messages=messages, model=model,
                                                            temperature=ev.temperature, max_tokens=max_tokens,
                                                            hint=hint))
                break
            except ContextTooLong as exc:
                if attempt == 2:
                    raise
                counted = count_messages(messages, model)
                if exc.prompt_tokens and counted:
                    ratio = max(ratio, exc.prompt_tokens / counted * 1.02)
                tried = window or EVAL_MAX_TOKENS + counted
                window = exc.window if exc.window and exc.window < tried else int(tried * 0.8)
    except ProviderError as exc:
        result.error = str(exc)
        return result
    except Exception as exc:  # noqa: BLE001 - one evaluator must not sink the others
        result.error = f"{type(exc).__name__}: {exc}"
        return result
    model = redact(done.model, secrets)[:200] if done.model else result.model
    result.latency_ms, result.model = int((time.perf_counter() - started) * 1000), model
    result.prompt_tokens, result.completion_tokens = done.prompt_tokens, done.completion_tokens
    try:
        result.scores = parse_scores(redact(done.content, secrets))
    except ValueError as exc:
        result.error = str(exc)
    return result

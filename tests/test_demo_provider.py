"""DemoProvider: deterministic, streamed, token-accurate, and honest about limits."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from moot.core.errors import ProviderError
from moot.core.models.terms import ROLES
from moot.core.providers import demo as demo_mod
from moot.core.providers.base import CallHint, Completion, Provider
from moot.core.providers.demo import DEFAULT_DELAY_S, DemoProvider
from moot.core.tokens import count_messages, count_text, get_encoding
from tests.streams import complete

PROBLEM = "Design a rate limiter for a public REST API serving 10k tenants.\nIt must be fair and cheap."
MODEL = "gpt-4o"
MESSAGES = [
    {"role": "system", "content": "You are a careful engineer."},
    {"role": "user", "content": f"Problem:\n{PROBLEM}\n\nWrite your proposal."},
]


def hint(phase: str = "proposal", role: str = "architect", **kw) -> CallHint:
    return CallHint(phase=phase, role=role, agent_id=kw.pop("agent_id", f"{role}-1"), problem=PROBLEM, **kw)


async def call(
    provider: DemoProvider | None = None,
    messages: list[dict[str, str]] | None = None,
    max_tokens: int = 2000,
    model: str = MODEL,
    **hint_kw,
) -> Completion:
    provider = provider or DemoProvider(delay_s=0)
    return await complete(provider,
        messages or MESSAGES, model=model, temperature=0.7, max_tokens=max_tokens, hint=hint(**hint_kw)
    )


def words(text: str) -> int:
    return len(text.split())


async def all_proposals() -> str:
    return "\n\n".join([(await call(role=r)).content for r in ROLES])


# --------------------------------------------------------------------------- identity


def test_labels_and_protocol() -> None:
    provider: Provider = DemoProvider(delay_s=0)  # type-checks against the protocol
    assert provider.name == "demo"
    assert provider.label == "DEMO (offline, scripted)"
    assert "DEMO" in provider.label


async def test_aclose_is_noop() -> None:
    provider = DemoProvider(delay_s=0)
    await provider.aclose()
    assert (await call(provider)).content  # still usable


async def test_empty_model_reports_demo() -> None:
    result = await call(model="")
    assert result.model == "demo"
    assert result.attempts == 1 and result.finish_reason == "stop"
    assert (await call(model="gpt-4o-mini")).model == "gpt-4o-mini"


# --------------------------------------------------------------------------- determinism


async def test_same_inputs_same_text() -> None:
    a = await call(DemoProvider(delay_s=0), role="security", round=2)
    b = await call(DemoProvider(delay_s=0, chunk_tokens=7), role="security", round=2)
    assert a.content == b.content


async def test_inputs_change_text() -> None:
    base = (await call()).content
    assert (await call(round=2)).content != base
    assert (await call(agent_id="other")).content != base
    other_msgs = [*MESSAGES[:1], {"role": "user", "content": "Another prompt entirely."}]
    assert (await call(messages=other_msgs)).content != base


async def test_stable_across_processes() -> None:
    """The seed uses hashlib, so another process with another PYTHONHASHSEED writes the same text."""
    h = hint(phase="critique", role="kiss", round=2, target_agent_id="a", target_role="architect")
    msgs = [{"role": "user", "content": "- An outbox table plus a queue for side effects today."}]
    here = await complete(DemoProvider(delay_s=0), msgs, model="demo", temperature=0, max_tokens=900, hint=h)
    code = (
        "import asyncio\n"
        "from moot.core.providers.demo import DemoProvider\n"
        "from moot.core.providers.base import CallHint\n"
        "from tests.streams import complete\n"
        f"h = CallHint(**{h.__dict__!r})\n"
        f"msgs = {msgs!r}\n"
        "c = asyncio.run(complete(DemoProvider(delay_s=0), msgs, model='demo', temperature=0, max_tokens=900, hint=h))\n"
        "print(c.content, end='')\n"
    )
    root = Path(__file__).resolve().parents[1]
    seed = "7" if os.environ.get("PYTHONHASHSEED") != "7" else "8"
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == here.content


# --------------------------------------------------------------------------- content


async def test_roles_read_differently() -> None:
    texts = {role: (await call(role=role)).content for role in ROLES}
    assert len(set(texts.values())) == len(ROLES)
    designs = {role: text.split("## Design")[1].split("## Key decisions")[0] for role, text in texts.items()}
    assert len(set(designs.values())) == len(ROLES)  # not just a different seed: different vocabulary
    assert "threat" in texts["security"].lower() or "authoris" in texts["security"].lower()


@pytest.mark.parametrize("role", ROLES)
async def test_proposal_structure(role: str) -> None:
    text = (await call(role=role)).content
    headings = ["## Position", "## Design", "## Key decisions", "## Risks / open questions"]
    positions = [text.index(h) for h in headings]
    assert positions == sorted(positions)
    assert 250 <= words(text) <= 450
    assert "rate limiter" in text  # the problem's first line is used
    risks = text.split("## Risks / open questions")[1]
    assert "?" in risks
    decisions = text.split("## Key decisions")[1].split("## Risks")[0]
    assert any(ch.isdigit() for ch in decisions)


async def test_later_round_proposal_says_it_revises() -> None:
    assert "In round 1" not in (await call(round=1)).content
    assert "In round 3 I keep" in (await call(round=3)).content


@pytest.mark.parametrize("role", ROLES)
async def test_critique_structure(role: str) -> None:
    proposal = (await call(role="architect")).content
    msgs = [{"role": "user", "content": f"Critique this proposal:\n\n{proposal}"}]
    text = (
        await call(messages=msgs, phase="critique", role=role, target_agent_id="architect-1", target_role="architect")
    ).content
    assert text.index("## Strengths") < text.index("## Weaknesses") < text.index("## Suggestions")
    assert 150 <= words(text) <= 300
    assert "architect" in text
    quoted = text.split('"')[1].rstrip("…")
    assert quoted and quoted in proposal.replace("**", "")


@pytest.mark.parametrize("role", ROLES)
async def test_refinement_states_what_changed(role: str) -> None:
    msgs = [{"role": "user", "content": "Critiques:\nsecurity: too trusting.\ntesting: no acceptance criteria."}]
    text = (await call(messages=msgs, phase="refinement", role=role)).content
    position = text.split("## Position")[1].split("## Design")[0]
    assert "I change" in position and "critiques" in position
    assert 250 <= words(text) <= 400
    for heading in ("## Design", "## Key decisions", "## Risks / open questions"):
        assert heading in text


async def test_unknown_phase_and_role_give_generic_answer() -> None:
    text = (await call(phase="something-else", role="judge")).content
    assert text.startswith("## Answer") and 20 < words(text) < 200


# --------------------------------------------------------------------------- summarize

MATERIAL = """## Round 1 — architect proposal
The system uses a token bucket per tenant stored in Redis. Buckets refill every second.
Extra detail that should not be in the summary because it is not a headline.

## Round 1 — security critique
Authorisation is missing on the admin endpoints. Also the audit log is absent.
- more bullet text here
- and more

Decision: use a sliding window for the premium tier. Nobody objected to it.

performance (round 2): p99 must stay below 50 ms. We measured 35 ms on staging.

A plain paragraph without a label starts here. It has a second sentence too.
"""


async def test_summarize_is_extractive_and_shorter() -> None:
    msgs = [{"role": "user", "content": MATERIAL}]
    text = (await call(messages=msgs, phase="summarize", role="generalist")).content
    assert 0 < len(text) < len(MATERIAL)
    assert all(line.startswith("- ") for line in text.splitlines())
    assert "token bucket per tenant stored in Redis" in text
    assert "Authorisation is missing on the admin endpoints" in text
    assert "sliding window" in text and "p99 must stay below 50 ms" in text
    assert "plain paragraph without a label" in text
    assert "Extra detail" not in text and "second sentence" not in text


@pytest.mark.parametrize("max_chars", [120, 300, 2500])
async def test_summarize_respects_max_chars(max_chars: int) -> None:
    material = await all_proposals()
    msgs = [{"role": "user", "content": material}]
    text = (await call(messages=msgs, phase="summarize", extra={"max_chars": max_chars})).content
    assert 0 < len(text) <= max_chars < len(material)


async def test_summarize_respects_max_tokens_and_tiny_material() -> None:
    material = await all_proposals()
    result = await call(messages=[{"role": "user", "content": material}], phase="summarize", max_tokens=40)
    assert result.completion_tokens <= 40
    tiny = "Short."
    text = (await call(messages=[{"role": "user", "content": tiny}], phase="summarize")).content
    assert len(text) < len(tiny)
    assert (await call(messages=[{"role": "user", "content": ""}], phase="summarize")).content == ""


# --------------------------------------------------------------------------- JSON phases


async def test_synthesis_json() -> None:
    agents = ["architect", "kiss", "data-modeling"]
    result = await call(phase="synthesis", role="generalist", agent_id="judge", extra={"agents": agents})
    data = json.loads(result.content)
    assert set(data) == {"solution", "confidence", "tradeoffs", "recommendations", "unresolved"}
    assert isinstance(data["confidence"], int) and 60 <= data["confidence"] <= 95
    assert len(data["tradeoffs"]) == 3 and len(data["recommendations"]) == 3
    assert 1 <= len(data["unresolved"]) <= 2
    assert 200 <= words(data["solution"]) <= 400
    assert all(a in data["solution"] for a in agents)
    again = await call(phase="synthesis", role="generalist", agent_id="judge", extra={"agents": agents})
    assert json.loads(again.content)["confidence"] == data["confidence"]


async def test_synthesis_stays_valid_json_under_tight_max_tokens() -> None:
    result = await call(phase="synthesis", role="generalist", agent_id="judge", max_tokens=250)
    assert result.completion_tokens <= 250
    assert json.loads(result.content)["solution"]


@pytest.mark.parametrize("round_", [1, 2, 3, 4, 10])
async def test_score_rises_with_round(round_: int) -> None:
    data = json.loads((await call(phase="score", role="generalist", round=round_)).content)
    assert data["confidence"] == min(95, 55 + 15 * round_)
    assert isinstance(data["reason"], str) and data["reason"]


@pytest.mark.parametrize("role", ROLES)
async def test_clarify_json(role: str) -> None:
    data = json.loads((await call(phase="clarify", role=role)).content)
    assert 1 <= len(data["questions"]) <= 2
    assert all(q["question"].endswith("?") for q in data["questions"])


async def test_clarify_respects_max_questions() -> None:
    for limit in (0, 1):
        for role in ROLES:
            data = json.loads((await call(phase="clarify", role=role, extra={"max_questions": limit})).content)
            assert len(data["questions"]) <= limit


async def test_evaluate_json() -> None:
    data = json.loads((await call(phase="evaluate", role="generalist")).content)
    keys = {
        "functional_completeness", "performance", "security", "maintainability",
        "testability", "requirements_fulfilment", "overall",
    }
    assert set(data["scores"]) == keys
    for entry in data["scores"].values():
        assert isinstance(entry["score"], int) and 1 <= entry["score"] <= 10
        assert entry["reason"]


# --------------------------------------------------------------------------- streaming & usage


async def test_deltas_concatenate_to_content() -> None:
    seen: list[str] = []
    provider = DemoProvider(delay_s=0, chunk_tokens=3)
    result = await complete(provider,
        MESSAGES, model=MODEL, temperature=0, max_tokens=2000, hint=hint(), on_delta=seen.append
    )
    assert len(seen) > 20
    assert "".join(seen) == result.content
    enc = get_encoding("o200k_base")
    assert max(len(enc.encode_ordinary(chunk)) for chunk in seen) < 20  # small, word-aligned chunks


async def test_async_on_delta_is_awaited() -> None:
    seen: list[str] = []

    async def on_delta(chunk: str) -> None:
        seen.append(chunk)

    result = await complete(DemoProvider(delay_s=0),
        MESSAGES, model=MODEL, temperature=0, max_tokens=2000, hint=hint(phase="critique"), on_delta=on_delta
    )
    assert "".join(seen) == result.content


async def test_usage_matches_tiktoken() -> None:
    result = await call()
    enc = get_encoding("o200k_base")  # gpt-4o's encoding
    assert result.completion_tokens == len(enc.encode_ordinary(result.content)) == count_text(result.content, MODEL)
    expected_prompt = sum(3 + sum(len(enc.encode_ordinary(v)) for v in m.values()) for m in MESSAGES) + 3
    assert result.prompt_tokens == expected_prompt == count_messages(MESSAGES, MODEL)


@pytest.mark.parametrize("phase", ["proposal", "critique", "refinement", "synthesis", "evaluate", "other"])
@pytest.mark.parametrize("max_tokens", [1, 25, 120])
async def test_max_tokens_respected(phase: str, max_tokens: int) -> None:
    seen: list[str] = []
    provider = DemoProvider(delay_s=0)
    result = await complete(provider,
        MESSAGES, model="demo", temperature=0, max_tokens=max_tokens, hint=hint(phase=phase), on_delta=seen.append
    )
    assert result.completion_tokens <= max_tokens
    assert count_text(result.content, "demo") <= max_tokens
    assert "".join(seen) == result.content


# --------------------------------------------------------------------------- delay


async def test_zero_delay_only_yields_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float] = []

    async def fake_sleep(seconds: float, *args: object) -> None:
        calls.append(seconds)

    monkeypatch.setattr(demo_mod.asyncio, "sleep", fake_sleep)
    seen: list[str] = []
    await complete(DemoProvider(delay_s=0),
        MESSAGES, model=MODEL, temperature=0, max_tokens=2000, hint=hint(), on_delta=seen.append
    )
    assert calls == [0] and len(seen) > 1  # one yield to the event loop per call, no waiting


async def test_positive_delay_sleeps_between_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float] = []

    async def fake_sleep(seconds: float, *args: object) -> None:
        calls.append(seconds)

    monkeypatch.setattr(demo_mod.asyncio, "sleep", fake_sleep)
    seen: list[str] = []
    await complete(DemoProvider(delay_s=0.25),
        MESSAGES, model=MODEL, temperature=0, max_tokens=2000, hint=hint(), on_delta=seen.append
    )
    assert calls == [0] + [0.25] * (len(seen) - 1)


def test_delay_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOOT_DEMO_DELAY", raising=False)
    assert DemoProvider().delay_s == DEFAULT_DELAY_S == 0.02
    monkeypatch.setenv("MOOT_DEMO_DELAY", "0.5")
    assert DemoProvider().delay_s == 0.5
    assert DemoProvider(delay_s=0).delay_s == 0  # an explicit value wins
    monkeypatch.setenv("MOOT_DEMO_DELAY", "0")
    assert DemoProvider().delay_s == 0
    monkeypatch.setenv("MOOT_DEMO_DELAY", "fast please")
    assert DemoProvider().delay_s == DEFAULT_DELAY_S


async def test_env_zero_delay_only_yields_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOOT_DEMO_DELAY", "0")
    calls: list[float] = []

    async def fake_sleep(seconds: float, *args: object) -> None:
        calls.append(seconds)

    monkeypatch.setattr(demo_mod.asyncio, "sleep", fake_sleep)
    await call(DemoProvider())
    assert calls == [0]


# --------------------------------------------------------------------------- failure injection


async def test_fail_phases_raise_provider_error() -> None:
    provider = DemoProvider(delay_s=0, fail_phases={"critique"})
    seen: list[str] = []
    retries: list[str] = []
    with pytest.raises(ProviderError, match="demo provider: injected failure in critique") as info:
        await complete(provider,
            MESSAGES, model=MODEL, temperature=0, max_tokens=500,
            hint=hint(phase="critique"), on_delta=seen.append, on_retry=retries.append,
        )
    assert info.value.retryable is False
    assert seen == [] and retries == []
    assert (await call(provider, phase="proposal")).content  # other phases still work


@pytest.mark.parametrize("protocol", ["rounds", "conversation", "simultaneous", "single", "vote", "council"])
def test_a_question_with_a_number_gets_a_number_in_every_protocol(tmp_path: Path, protocol: str) -> None:
    from tests.conftest import cli

    run = cli("run", "What is 17 * 23?", "--provider", "demo", "--protocol", protocol, "--headless",
              "--state-dir", str(tmp_path))
    assert run.returncode == 0, run.stderr
    from moot.core.storage.folder import DebateFolder

    [folder] = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    solution = DebateFolder(folder).load().final_solution
    assert solution is not None
    assert re.search(r"Answer: \d+", solution.description), solution.description  # a number, not a design
    assert "Recommended solution" not in solution.description


SEAM = re.compile(r"\b(\w+) +\1\b", re.I)


def test_demo_text_has_no_seams(tmp_path: Path) -> None:
    """Filled phrases read as prose: no word twice in a row where a problem's word met the same
    word in a phrase, and an imperative problem is not pasted in as a noun ("my stance on Pick …")."""
    from moot.core.storage.folder import DebateFolder
    from tests.conftest import cli

    texts: list[str] = []
    for problem in ("Pick a message queue for order events", "Choose between Kafka and NATS for order events",
                    "Design a queue", "Build a wiki"):
        run = cli("run", problem, "--provider", "demo", "--headless", "-r", "2",
                  "-a", "architect,performance,kiss,security", "--state-dir", str(tmp_path))
        assert run.returncode == 0, run.stderr
    for folder in tmp_path.iterdir():
        if folder.name.startswith("."):
            continue
        state = DebateFolder(folder).load()
        texts += [c.content for c in state.all_contributions()]
        if state.final_solution is not None:
            texts += [state.final_solution.description, *state.final_solution.tradeoffs]
    text = "\n".join(texts)
    assert SEAM.findall(text) == []
    assert " Pick a message queue" not in text and " Choose between" not in text
    assert "the pick logic" not in text  # the verb is not one of the problem's nouns
    assert "a message queue for order events" in text and "the choice between Kafka and NATS" in text

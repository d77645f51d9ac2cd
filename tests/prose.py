"""Technical prose the way a model writes it, with the facts a later round needs marked.

Each reply (about 2,500 characters by default) carries one decision, one measured number
(with its unit and its subject) and one open question, placed among ordinary technical
sentences that also hold numbers ("3 replicas across 2 zones", "HTTP 429"). Half the
replies follow the proposal template's headings, half are plain critique-like paragraphs.
The wording varies (several phrasings of each kind of fact, many fillers, slots filled
from word lists), so the text compresses like real prose (about 2.5:1 with zlib) and is
not rejected by the summary guard. Deterministic: the same seed gives the same reply.

`Fact.keys` are the strings a summary must contain for the fact to count as kept: for a
number, the value with its unit and the subject's head words.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

FactKind = Literal["decision", "number", "question"]


@dataclass(frozen=True)
class Fact:
    kind: FactKind
    sentence: str
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Reply:
    text: str
    facts: tuple[Fact, ...]


_COMPONENTS = ["token service", "edge gateway", "quota store", "billing exporter", "audit pipeline",
               "session cache", "admin console", "replay worker", "key rotation job", "metrics relay",
               "schema registry", "fan-out worker", "search indexer", "webhook dispatcher", "upload proxy",
               "ledger writer", "consent service", "feature flag cache", "image resizer", "outbox relay"]
_STORES = ["Redis Cluster", "Postgres", "a DynamoDB table", "Kafka", "an in-process LRU", "etcd", "ClickHouse",
           "S3 with a manifest", "a Cassandra ring", "SQLite on each node"]
_KEYS = ["tenant id", "API key", "region", "customer plan", "route prefix", "hash of the user id", "client certificate"]
_MECHS = ["a circuit breaker", "a bounded queue", "a write-ahead log", "an idempotency key", "a lease with fencing",
          "a read-through cache", "a token bucket", "a sliding-window counter", "consistent hashing",
          "a two-phase rollout flag"]
_METRICS = [("p99 latency", ["ms"]), ("median latency", ["ms"]), ("throughput", ["requests per second", "rps"]),
            ("memory footprint", ["MB", "GB"]), ("error rate", ["%"]), ("CPU use", ["%"]),
            ("cold start", ["ms", "seconds"]), ("replication lag", ["ms", "seconds"]),
            ("queue depth", ["messages"]), ("cache hit rate", ["%"])]
_LEADS = ["In last week's staging load test", "On the production canary", "In our soak test over 48 hours",
          "When we replayed a day of traffic", "During the failover drill", "In the benchmark on 4 vCPU nodes"]
_REASONS = ["it keeps the failure domain small", "it is the option the on-call team already knows",
            "it removes a network hop from the hot path", "it lets us roll back without a data migration",
            "it bounds the blast radius of a bad deploy", "it keeps the write path free of locks"]
_QUESTIONS = [
    "Who owns the {c} once the {d} is split out?",
    "Should the {c} fail open or fail closed when {s} is unreachable?",
    "How do we migrate existing data into {s} without a maintenance window?",
    "Does {m} in the {c} survive a full region outage?",
    "What retention period does legal require for the {c} records?",
    "Is {s} cheap enough at ten times today's traffic for the {c}?",
]
_QUESTIONS_PLAIN = [  # open questions people write without a question mark
    "It is still unclear whether {s} can hold the {c} state during a region failover.",
    "We do not yet know how the {c} behaves when {m} trips under load.",
    "Open question: the ownership of the {c} after the {d} moves to its own team.",
]
_DECISIONS = [
    "We decided to put the {c} behind {m}, because {r}.",
    "We will shard the {c} by {k} and keep its state in {s}.",
    "The team chose {s} for the {c}, since {r}.",
    "Decision: the {c} moves to {m}; {r}.",
    "We'll go with {m} for the {c} and revisit it after launch.",
    "Our plan is to run the {c} on {s}, sharded by {k}, because {r}.",
    "We settled on {m} in front of the {c}.",
    "Let's keep the {c} stateless and store its counters in {s}.",
]
_FILLERS = [
    "The {c} talks to {s} over a private network, so a dropped connection is retried with jitter.",
    "Each request carries a trace id, which makes a slow call in the {c} easy to find in the dashboards.",
    "The interface stays narrow: one call to check, one to record, and nothing that leaks storage details.",
    "Deploys go out to 5% of the fleet first, then to the rest after 30 minutes without new alerts.",
    "A client that exceeds its limit gets HTTP 429 with a Retry-After header instead of a bare error.",
    "The {c} runs 3 replicas across 2 availability zones, which is enough for planned maintenance.",
    "Configuration lives in version control and is reviewed like code, so a typo cannot reach production.",
    "We keep the schema backwards compatible for 2 releases so older clients keep working.",
    "Alerts page the owning team only when the error budget burns faster than planned.",
    "The data model keeps one row per tenant and window, which keeps the indexes small.",
    "Integration tests run the {c} against {s} in a container, not against a mock.",
    "Secrets come from the vault at start-up and are never written to logs or saved state.",
    "Logs are sampled at 1 in 100 for successful requests and kept in full for errors.",
    "The runbook names the first three things to check when the {c} slows down.",
    "Version 2 of the public API keeps the same limits, so clients do not need to change.",
    "We budgeted 2 engineers for a quarter, including the migration and the dashboards.",
    "Back-pressure reaches the callers early instead of piling up work in the {c}.",
    "A nightly job compares the counters with the billing records and reports any drift.",
    "The hot path does no allocation beyond the request buffer, which keeps garbage collection quiet.",
    "If {s} is slow, the {c} serves from its local copy and marks the answer as possibly stale.",
    "The review found that the retry policy doubled load during the last incident, so it is capped now.",
    "We document every limit in the developer portal together with the headers a client sees.",
    "Capacity planning assumes traffic grows by about 40% a year, based on the last 3 years.",
    "The on-call rotation has 6 people, so nobody is paged more than one week in six.",
]
_POSITIONS = ["I recommend {m} in the {c}, backed by {s}, because {r}.",
              "The simplest design that holds up is a {c} on {s} with {m} at the edge.",
              "My position: split the {c} from the {d} and give each its own store."]
_PHRASES = ["Agreed on the overall shape.", "That said, one part worries me.", "Here is how I see it.",
            "This builds on the previous round.", "The critique raised a fair point."]


def _fill(template: str, rng: random.Random, slots: dict[str, str]) -> str:
    return template.format(**slots)


def _slots(rng: random.Random) -> dict[str, str]:
    c, d = rng.sample(_COMPONENTS, 2)
    return {"c": c, "d": d, "s": rng.choice(_STORES), "k": rng.choice(_KEYS), "m": rng.choice(_MECHS),
            "r": rng.choice(_REASONS)}


def _number(rng: random.Random) -> Fact:
    metric, units = rng.choice(_METRICS)
    unit = rng.choice(units)
    subject = rng.choice(_COMPONENTS)
    if unit == "%":
        value = f"{rng.randint(2, 97)}.{rng.randint(1, 9)}"
        shown = f"{value}%"
    elif unit in ("requests per second", "rps", "messages"):
        value = f"{rng.randint(2, 95)},{rng.randint(100, 999)}"
        shown = f"{value} {unit}"
    else:
        value = str(rng.randint(3, 950))
        shown = f"{value} {unit}"
    lead = rng.choice(_LEADS)
    verb = rng.choice(["was", "came out at", "reached", "stayed at", "measured"])
    sentence = f"{lead}, the {metric} of the {subject} {verb} {shown}."
    return Fact("number", sentence, (shown, subject))


def _question(rng: random.Random) -> Fact:
    s = _slots(rng)
    template = rng.choice(_QUESTIONS + _QUESTIONS_PLAIN)
    keys = tuple(s[k] for k in ("c", "s", "m", "d") if "{" + k + "}" in template)[:2]
    return Fact("question", _fill(template, rng, s), keys)


def _decision(rng: random.Random) -> Fact:
    s = _slots(rng)
    template = rng.choice(_DECISIONS)
    keys = [s["c"]] + [s[k] for k in ("m", "s", "k") if "{" + k + "}" in template][:1]
    return Fact("decision", _fill(template, rng, s), tuple(keys))


def _fillers(rng: random.Random, n: int) -> list[str]:
    return [_fill(t, rng, _slots(rng)) for t in rng.sample(_FILLERS, n)]


def reply(seed: int, chars: int = 2500, structured: bool | None = None) -> Reply:
    """One reply of about `chars` characters with its three marked facts."""
    rng = random.Random(seed)
    facts = (_decision(rng), _number(rng), _question(rng))
    structured = rng.random() < 0.5 if structured is None else structured
    fillers = _fillers(rng, len(_FILLERS))
    decision, number, question = (f.sentence for f in facts)
    if structured:
        position = _fill(rng.choice(_POSITIONS), rng, _slots(rng))
        sections = [["## Position", position + " " + fillers.pop()],
                    ["## Design", " ".join([fillers.pop(), number, fillers.pop(), fillers.pop()])],
                    ["## Key decisions", f"- {decision}", f"- {fillers.pop()}"],
                    ["## Risks / open questions", f"- {question}", f"- {fillers.pop()}"]]
        text = "\n\n".join("\n".join(s) if s[0] != "## Design" else "\n\n".join(s) for s in sections)
        while len(text) < chars and fillers:  # more design prose, before the decisions
            head, _, rest = text.partition("\n\n## Key decisions")
            joint = "\n\n" if rng.random() < 0.25 else " "
            text = f"{head}{joint}{fillers.pop()}\n\n## Key decisions{rest}"
    else:
        sentences = [rng.choice(_PHRASES), *fillers[:3], decision]
        rest = fillers[3:]
        sentences += [rest.pop(), number, rest.pop(), rest.pop(), question]
        text = " ".join(sentences[:3]) + "\n\n" + " ".join(sentences[3:])
        while len(text) < chars and rest:
            text += " " + rest.pop()
            if len(text) < chars and rest and rng.random() < 0.3:
                text += "\n\n" + rest.pop()
    if len(text) > chars:  # cut at a sentence end, never through a fact
        cut = max(text.rfind(". ", 0, chars), text.rfind(".\n", 0, chars))
        last_fact = max(text.find(f.sentence) + len(f.sentence) for f in facts)
        text = text[: max(cut + 1, last_fact)]
    return Reply(text, facts)


def kept(summary: str, fact: Fact) -> bool:
    """Whether `summary` still carries `fact` (every key, case and spacing aside)."""
    flat = " ".join(summary.lower().split())
    return all(" ".join(k.lower().split()) in flat for k in fact.keys)


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


def loopback_reply(body: dict[str, Any], n: int, chars: int = 2500) -> str:
    """A `LoopbackServer` reply function: JSON where the judge or the clarifier asks for it,
    prose otherwise (the server cuts it at the request's max_tokens, as a model would)."""
    ask = _last_user_text(body).lower()
    if "functional_completeness" in ask:  # an evaluator
        reasons = ["covers the stated load", "one hot path, measured", "keys stay out of logs",
                   "few moving parts", "contract tests at the boundary", "meets the limits", "sound overall"]
        return json.dumps({"scores": {c: {"score": 5 + (n + i) % 4, "reason": r} for i, (c, r) in enumerate(zip(
            ["functional_completeness", "performance", "security", "maintainability", "testability",
             "requirements_fulfilment", "overall"], reasons))}})
    if "json" in ask and "confidence" in ask and "solution" in ask:
        return json.dumps({"solution": reply(n, 600).text, "confidence": 70 + n % 20,
                           "tradeoffs": ["chose a shared store over local counters because limits must hold "
                                         "across nodes"],
                           "recommendations": ["load-test the hot path at twice the expected peak"],
                           "unresolved": ["how limits apply across regions"]})
    if "json" in ask and "confidence" in ask:
        return json.dumps({"confidence": 40 + n % 50, "reason": "the agents agree on the shape, not the numbers"})
    if "json" in ask and "questions" in ask:
        return json.dumps({"questions": ["What peak traffic should the design plan for?"]})
    return reply(n, chars).text


# ---------------------------------------------------------------- facts planted early, brought up late

_SYLLABLES = ["ka", "lo", "mi", "zu", "re", "ta", "no", "vi", "sha", "dor", "bel", "quin", "tor", "mag", "lex",
              "pim", "rus", "gal", "fen", "ur"]
_TEAMS = ["billing", "edge", "identity", "storage", "payments", "search", "growth"]
_TURN = re.compile(r"# Turn (\d+) of \d+")


@dataclass(frozen=True)
class Planted:
    """A detail only one early message holds, and a later message that comes back to it by name."""

    name: str
    sentence: str
    mention: str


def planted(i: int) -> Planted:
    """The i-th planted fact (its name is a made-up word no other text holds)."""
    n, parts = i + 400, []
    for _ in range(3):
        n, d = divmod(n, len(_SYLLABLES))
        parts.append(_SYLLABLES[d])
    name = "".join(parts).capitalize()
    seconds = 20 + (i * 7) % 80
    team = _TEAMS[i % len(_TEAMS)]
    return Planted(name,
                   f"One detail to keep: the {name} quota shard holds its lease for {seconds} seconds, and the "
                   f"{team} team owns it.",
                   f"Going back to the {name} quota shard we settled much earlier: does its lease still hold "
                   f"after the failover drill?")


def turn_of(body: dict[str, Any]) -> int | None:
    """The conversation turn a request is for (None: a summary, the judge, another kind of call)."""
    m = _TURN.search(_last_user_text(body))
    return int(m.group(1)) if m else None


@dataclass
class FactScript:
    """A `LoopbackServer` reply function for a conversation: ordinary prose each turn, a planted
    fact at the turns of `plants` (turn → fact), a mention of one at the turns of `mentions`.
    `fact` makes fact i (anything with a `sentence` and a `mention`); `in_the_middle` puts the
    sentence inside its turn's reply rather than after it."""

    plants: dict[int, int]
    mentions: dict[int, int]
    chars: int = 700
    fact: Callable[[int], Any] = planted
    in_the_middle: bool = False

    def __call__(self, body: dict[str, Any], n: int) -> str:
        turn = turn_of(body)
        if turn is None:
            return loopback_reply(body, n, self.chars)
        text = reply(turn * 31 + 7, self.chars).text  # by turn: a redone turn says the same
        if turn in self.plants:
            sentence = self.fact(self.plants[turn]).sentence
            if not self.in_the_middle:
                return f"{text}\n\n{sentence}"
            cut = text.find(". ", len(text) // 2) + 1 or len(text)
            return f"{text[:cut]} {sentence}{text[cut:]}"
        if turn in self.mentions:
            return f"{self.fact(self.mentions[turn]).mention}\n\n{text}"
        return text

"""DemoProvider: an offline, deterministic, clearly labelled stand-in for a real model.

It lets the whole app (debate flow, context management, TUI streaming, cost display)
run with no API key and no network. Replies are written from the CallHint with
per-role phrase banks, seeded from a stable hash of the call so that the same inputs
always give the same text (tests and snapshots rely on that).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import random
import re
import zlib
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from ..errors import ProviderError
from .demo_questions import design_rank, question_reply
from .base import CallHint, ChatRequest, Completion, Finished, Message, StreamItem, TextDelta
from ..tokens import count_messages, count_text, encoding_for_model, truncate_to_tokens

DEFAULT_DELAY_S = 0.02
DELAY_ENV = "MOOT_DEMO_DELAY"

# --------------------------------------------------------------------------- phrase banks
# Placeholders: {topic} {noun} {noun2} {target} and numbers {p99} {replicas} {ttl} {rps}
# {rps_small} {cov} {days} {weeks}. Every role has every key.

ROLE_BANKS: dict[str, dict[str, Any]] = {
    "architect": {
        "lens": "boundaries, contracts and long-term evolution",
        "position": [
            "The core of {topic} is a small set of components with explicit contracts, so each part can change without dragging the others along. I would keep the {noun} logic in one domain module and push everything slow onto a queue.",
            "I see {topic} as a problem of boundaries first: once ownership of {noun} and {noun2} is clear, most other choices follow. I favour a modular monolith now, with seams that let us split services later if load demands it.",
        ],
        "design": [
            "An API gateway that validates requests and routes them to the {noun} module; no business logic at the edge.",
            "One domain module per bounded context ({noun}, {noun2}), each owning its tables and exposing a versioned interface.",
            "An outbox table plus a queue for side effects, so a write and its event commit together.",
            "Read models rebuilt from events for the heavy queries, which keeps the write path narrow and easy to reason about.",
            "Configuration and feature flags loaded at startup from one place per environment.",
        ],
        "decisions": [
            "Run {replicas} stateless replicas behind the load balancer; state lives only in the database and the queue.",
            "Target p99 < {p99} ms for the synchronous path; anything slower goes async.",
            "Version every public contract (v1 in the URL) and keep the old version for {days} days after a change.",
            "Idempotency keys on every write, retained with TTL {ttl} h.",
        ],
        "risks": [
            "Where exactly is the boundary between {noun} and {noun2} when one request touches both?",
            "The outbox adds a moving part; who owns its monitoring and replay tooling?",
            "A modular monolith erodes into a big ball of mud unless module rules are enforced in CI.",
        ],
        "strengths": [
            "The {target} proposal has a clear centre of gravity; it is obvious what it optimises for.",
            "It names concrete components, which makes the boundaries easy to discuss.",
            "The numbers it commits to give the rest of the design something to hang on.",
        ],
        "weaknesses": [
            "Ownership of {noun} across components is never stated, so two parts may end up writing the same data.",
            "There is no story for how the design evolves when requirements change next year.",
            "Cross-cutting concerns (configuration, observability) are left to each component to reinvent.",
        ],
        "suggestions": [
            "Draw the component diagram with one owner per entity and one contract per arrow.",
            "Mark which decisions are reversible and which are not, and spend review time on the latter.",
            "Put the {noun} interface behind a versioned contract before anything depends on it.",
        ],
        "questions": [
            "Which existing systems must {topic} integrate with, and who owns them?",
            "Which parts of the system must be able to change independently as it grows?",
        ],
        "keeps": ["the module boundaries around {noun}", "the outbox-and-queue pattern"],
        "changes": ["the sync call between {noun} and {noun2} into an event", "the contract versioning to header-based"],
    },
    "performance": {
        "lens": "latency budgets, throughput and cost per request",
        "position": [
            "For {topic} the thing that decides success is the hot path: how fast a typical {noun} request is served under peak load. I would design around a latency budget first and let caching and batching absorb the rest.",
            "I treat {topic} as a throughput problem with a strict tail-latency target. Measure first, then cache the {noun} lookups, batch the writes and keep blocking I/O off the request path.",
        ],
        "design": [
            "A read-through cache in front of the {noun} store, keyed by request shape and invalidated on write.",
            "Batched writes of {noun2} records in groups of 100 or every 50 ms, whichever comes first.",
            "Async I/O end to end on the request path; CPU-heavy work moves to a worker pool.",
            "Connection pools sized to twice the core count, with back-pressure when a pool is exhausted.",
            "A load test in CI that replays a recorded traffic shape and fails on regressions above 10%.",
        ],
        "decisions": [
            "Budget p99 < {p99} ms end to end, of which at most 20 ms is database time.",
            "Cache TTL {ttl} h for reference data and 60 s for anything user-visible.",
            "Size for {rps} requests per second with {replicas} replicas and 40% headroom.",
            "Pre-compute the top {noun} aggregates nightly instead of on demand.",
        ],
        "risks": [
            "Cache invalidation on {noun2} updates could serve stale data; how stale is acceptable?",
            "Batching adds up to 50 ms to each write; is that visible to users?",
            "Do we have real traffic numbers, or is {rps} rps a guess?",
        ],
        "strengths": [
            "The {target} proposal keeps the request path short, which is half the latency battle.",
            "It states targets in numbers, so we can actually test whether it is fast enough.",
            "Its stateless components scale horizontally without coordination.",
        ],
        "weaknesses": [
            "There is no latency budget per hop, so nobody knows which component may spend what.",
            "Synchronous fan-out to several services multiplies tail latency at p99.",
            "Nothing is said about the cost per request at {rps} rps.",
        ],
        "suggestions": [
            "Write down a budget per hop that sums to p99 < {p99} ms and alert on each part.",
            "Add a cache for {noun} reads and measure its hit ratio before adding more hardware.",
            "Run a load test at twice the expected peak before committing to the design.",
        ],
        "questions": [
            "What peak load should {topic} handle, in requests per second, and how spiky is it?",
            "Which latency do users actually notice: first response, or full completion?",
        ],
        "keeps": ["the read-through cache for {noun}", "the p99 latency budget"],
        "changes": ["the batch window from 50 ms to 20 ms", "the nightly aggregates into incremental updates"],
    },
    "security": {
        "lens": "threat modelling, least privilege and auditability",
        "position": [
            "{topic} handles {noun} data, so I start from the threat model: who can read it, who can change it, and how we would notice abuse. Every choice below narrows the blast radius of one compromised component.",
            "My position on {topic} is that trust boundaries come first. Authenticate every caller, authorise every {noun} operation explicitly, and log enough to reconstruct any incident.",
        ],
        "design": [
            "OIDC for users and short-lived service tokens for internal calls; no shared static secrets.",
            "Authorisation checks in the {noun} domain layer, not only at the gateway, deny by default.",
            "Secrets in a vault with automatic rotation; nothing sensitive in environment files or logs.",
            "An append-only audit log of every change to {noun2}, shipped off-host within minutes.",
            "Strict schema validation with size limits at every boundary that accepts input.",
        ],
        "decisions": [
            "Encrypt {noun} data at rest with AES-256 and in transit with TLS 1.3 only.",
            "Access tokens expire after 15 minutes; refresh tokens after TTL {ttl} h.",
            "Rate limit to {rps_small} requests per minute per client, locking out after 5 failed logins.",
            "Keep audit logs for {days} days in a separate account on write-once storage.",
        ],
        "risks": [
            "Which personal data in {noun2} do we actually need to store, and for how long?",
            "Are third-party dependencies pinned and scanned, or can a supply-chain update slip in?",
            "Internal services that trust each other implicitly would undo the gateway's checks.",
        ],
        "strengths": [
            "The {target} proposal has a small surface area, which is easier to defend.",
            "It keeps state in few places, so there are fewer stores to encrypt and audit.",
            "Its explicit contracts make it possible to validate every input.",
        ],
        "weaknesses": [
            "Authorisation is only mentioned at the edge; internal calls are implicitly trusted.",
            "There is no audit trail for changes to {noun}, so incidents could not be reconstructed.",
            "Secrets handling and rotation are not addressed at all.",
        ],
        "suggestions": [
            "Add a one-page threat model (STRIDE is enough) before the design is final.",
            "Enforce authorisation in the {noun} domain layer with deny-by-default rules.",
            "Log every privileged action to an append-only store kept for {days} days.",
        ],
        "questions": [
            "Which data in {topic} is personal or regulated, and under which jurisdiction?",
            "Who are the expected attackers: curious users, insiders, or organised fraud?",
        ],
        "keeps": ["deny-by-default authorisation", "the append-only audit log"],
        "changes": ["token lifetime from 60 to 15 minutes", "the shared service account into per-service identities"],
    },
    "testing": {
        "lens": "testability, feedback speed and regression safety",
        "position": [
            "I want {topic} built so that every behaviour we promise has a test that fails when it breaks. That means pure domain logic for {noun}, thin adapters at the edges, and a fast suite developers actually run.",
            "For {topic} my priority is confidence per minute of CI. Most {noun} rules should be checked by fast unit and property tests, with a small set of end-to-end tests guarding the critical journeys.",
        ],
        "design": [
            "Domain logic for {noun} as pure functions, tested without databases or network.",
            "Contract tests between components, so an API change fails the producer's build instead of production.",
            "Property-based tests for the {noun2} invariants, such as no duplicates and no negative totals.",
            "An ephemeral environment per pull request, seeded with realistic fixture data.",
            "Feature flags for risky paths so they can be exercised in production with a small cohort.",
        ],
        "decisions": [
            "Line coverage of at least {cov}% on the domain package; no target on glue code.",
            "Full CI run under 10 minutes, unit tests under 60 s.",
            "End-to-end suite on {replicas} parallel workers; flaky tests quarantined within 24 h.",
            "Canary each release to 5% of traffic for {ttl} h before full rollout.",
        ],
        "risks": [
            "How do we test {noun} behaviour that depends on time and external clocks?",
            "Will fixture data drift from production shapes and hide real bugs?",
            "Flaky end-to-end tests could erode trust in the whole suite.",
        ],
        "strengths": [
            "The {target} proposal separates logic from I/O in places, which makes unit tests cheap.",
            "Its numeric targets are directly checkable in CI.",
            "It is small enough that a new engineer could test it end to end in a day.",
        ],
        "weaknesses": [
            "There is no statement of how the {noun} behaviour will be verified before release.",
            "Time, randomness and external services are called directly, which makes tests flaky.",
            "The acceptance criteria are implicit, so 'done' cannot be tested.",
        ],
        "suggestions": [
            "Write acceptance criteria for the top three {noun} journeys as executable tests.",
            "Inject clocks and external clients so tests can control them.",
            "Add contract tests at each boundary the proposal introduces.",
        ],
        "questions": [
            "What are the acceptance criteria that tell us {topic} is done?",
            "Is there production-like data we may use for testing, or must it be synthetic?",
        ],
        "keeps": ["pure domain logic for {noun}", "contract tests at every boundary"],
        "changes": ["the coverage goal into per-module goals", "the nightly end-to-end run into a per-merge smoke test"],
    },
    "kiss": {
        "lens": "simplicity: the fewest moving parts that solve the real problem",
        "position": [
            "{topic} can be solved with far less machinery than it first appears. One service, one database, a scheduled job for the slow work; add complexity only when a measurement demands it.",
            "My stance on {topic} is to build the boring version first. A single deployable with a relational store handles {noun} and {noun2} comfortably at the expected scale and is easy to reason about.",
        ],
        "design": [
            "One deployable application with clear modules for {noun} and {noun2}; no microservices yet.",
            "PostgreSQL for everything, including the job queue (SKIP LOCKED) and full-text search.",
            "A plain JSON API and server-rendered pages; no client framework unless users need it.",
            "Deployment with a single script and one environment file per environment.",
            "Features with zero traffic for 90 days get deleted, not maintained.",
        ],
        "decisions": [
            "Start with {replicas} instances on one managed database; scale up before scaling out.",
            "A nightly job instead of a stream processor; revisit if data must be fresher than {ttl} h.",
            "No cache until p99 exceeds {p99} ms in production.",
            "At most 3 external dependencies in the first release.",
        ],
        "risks": [
            "Will the single database become a bottleneck sooner than we expect?",
            "Does 'simple' hide a requirement for {noun2} we have not been told about?",
            "A later split into services costs more if module boundaries are not respected now.",
        ],
        "strengths": [
            "The {target} proposal solves the stated problem without inventing new ones.",
            "Parts of it could ship in weeks with a small team.",
            "It avoids premature distribution, which keeps debugging simple.",
        ],
        "weaknesses": [
            "It adds components (queues, caches, gateways) before any measurement says they are needed.",
            "Each extra moving part for {noun} is another thing to deploy, monitor and page someone about.",
            "The design solves problems of a scale nobody has asked for yet.",
        ],
        "suggestions": [
            "Cut the design to one service and one database, then list what breaks.",
            "Replace the queue with a table and a scheduled job until volume proves otherwise.",
            "Write down the one number that would justify each extra component.",
        ],
        "questions": [
            "What is the smallest version of {topic} that would already be useful?",
            "What scale do we need in the first year, not in the best case?",
        ],
        "keeps": ["the single deployable", "PostgreSQL as the only store"],
        "changes": ["the cron job into a database-backed queue", "the server-rendered UI into a small JSON API"],
    },
    "generalist": {
        "lens": "a balance of user value, delivery risk and operations",
        "position": [
            "{topic} needs a design that ships soon, serves users well and can be run by a small team. I would take a pragmatic middle path: a well-structured service for {noun}, managed infrastructure, and clear milestones.",
            "Looking at {topic} as a whole, the biggest risk is not any single technology but delivering something users do not need. I would start with the core {noun} journey, measure adoption, and grow from there.",
        ],
        "design": [
            "A single backend service for the {noun} workflow with a REST API described in OpenAPI.",
            "Managed database and queue from the cloud provider to keep operations light.",
            "Dashboards for latency, traffic, errors and saturation from day one.",
            "A phased rollout: internal users, then a beta group, then everyone.",
            "Runbooks for the three most likely incidents, written before launch.",
        ],
        "decisions": [
            "First milestone in {weeks} weeks, covering the core {noun} journey only.",
            "Availability target 99.9% with {replicas} replicas across two zones.",
            "Interactive calls at p99 < {p99} ms.",
            "A design review after {days} days of production data.",
        ],
        "risks": [
            "Do we know who the primary users of {noun} are and what they need first?",
            "Is the team sized for both building and operating this?",
            "Scope creep around {noun2} could delay the first release.",
        ],
        "strengths": [
            "The {target} proposal is coherent: its parts support the same goal.",
            "It is specific enough to estimate and plan.",
            "It names its own risks, which makes the review honest.",
        ],
        "weaknesses": [
            "It optimises one dimension hard and leaves the others implicit.",
            "Delivery is not phased, so users see nothing until everything is done.",
            "Operating costs and on-call load for {noun} are not discussed.",
        ],
        "suggestions": [
            "Split the plan into milestones that each deliver something usable.",
            "State the trade-off it makes explicitly so others can challenge it.",
            "Add a short operations section: dashboards, alerts, runbooks.",
        ],
        "questions": [
            "Who are the primary users of {topic}, and what must they be able to do first?",
            "What deadline or budget constrains the first release?",
        ],
        "keeps": ["the phased rollout", "managed infrastructure"],
        "changes": ["the first milestone to a narrower {noun} journey", "the availability target to 99.5% for the beta"],
    },
    "data-modeling": {
        "lens": "entities, invariants and how the data evolves",
        "position": [
            "{topic} lives or dies by its data model. I would name the core entities ({noun}, {noun2}) explicitly, write down their invariants, and let the storage and APIs follow from that model.",
            "For {topic} I start with the schema: what a {noun} is, how it relates to {noun2}, and which facts must never be lost. Getting keys and constraints right early saves months of migrations.",
        ],
        "design": [
            "A normalised core schema: {noun} and {noun2} tables with surrogate keys and natural unique constraints.",
            "Foreign keys and check constraints enforced in the database, not only in application code.",
            "An append-only history table for {noun} changes, enabling point-in-time queries.",
            "Denormalised read views for reporting, refreshed incrementally.",
            "Versioned, reviewed migrations using expand-then-contract for breaking changes.",
        ],
        "decisions": [
            "UUIDv7 primary keys, so IDs sort by time and can be generated by clients.",
            "Partition {noun} history by month; keep {days} days hot and archive the rest.",
            "Soft deletes with a deleted_at column, purged after {ttl} h for personal data.",
            "Money and quantities stored as integers in minor units, never floats.",
        ],
        "risks": [
            "Is {noun} one entity, or two with different life cycles?",
            "How will we backfill history when the schema changes?",
            "Reporting queries on the core tables could fight writes for locks.",
        ],
        "strengths": [
            "The {target} proposal keeps a single source of truth for its state.",
            "Its entities map cleanly onto the problem's vocabulary.",
            "It treats history as data rather than as logs.",
        ],
        "weaknesses": [
            "The entities and their keys are never named, so {noun} could be modelled three ways.",
            "Invariants live only in application code, where a second writer will break them.",
            "There is no plan for schema evolution or backfills.",
        ],
        "suggestions": [
            "Add an entity sketch: {noun}, {noun2}, their keys and cardinalities.",
            "Enforce the key invariants with database constraints.",
            "Plan migrations as expand-then-contract from the first release.",
        ],
        "questions": [
            "What are the core entities of {topic}, and which of their facts must never be lost?",
            "How long must history be kept, and must it be queryable as of a past date?",
        ],
        "keeps": ["the normalised core schema", "the append-only {noun} history"],
        "changes": ["integer IDs into UUIDv7 keys", "the single history table into monthly partitions"],
    },
}

OPENERS = [
    "As the {role} voice in this debate, I read the problem through {lens}.",
    "I read the problem with an eye on {lens}, and here is where I stand.",
]
CLOSERS = [
    "The rest of this proposal makes that concrete for {noun}: a design, the decisions with the numbers "
    "I would hold us to, and the questions I cannot answer alone.",
    "Below, each choice is tied to a number we can check once {noun} is in production, so the other "
    "agents can challenge it with evidence rather than taste.",
]
SHARED_RISKS = [
    "What happens to {noun} requests when a dependency is down for an hour?",
    "How will we know, within minutes, that the {noun} path is degraded?",
    "Which of these numbers are measured, and which are still estimates we should validate?",
]
TRADEOFFS = [
    "Simplicity of one deployable versus independent scaling of the {noun} path.",
    "Fresher {noun2} data versus the cost and complexity of streaming.",
    "Strict authorisation in every layer versus some added latency per call.",
    "A fixed latency budget versus feature velocity in the first releases.",
    "Database-enforced invariants versus flexibility during early schema churn.",
]
RECOMMENDATIONS = [
    "Ship the core {noun} journey first behind a feature flag, with dashboards from day one.",
    "Write the threat model and the entity sketch before the first migration.",
    "Load test at twice the expected peak before the public launch.",
    "Add contract tests at every boundary the design introduces.",
    "Review the design with production data after {days} days.",
]
EVAL_REASONS = {
    "functional_completeness": "The design covers the core {noun} journey; edge cases around {noun2} are thin.",
    "performance": "A latency budget is stated (p99 < {p99} ms) but not yet backed by a load test.",
    "security": "Authentication and audit are addressed; secrets rotation needs detail.",
    "maintainability": "Module boundaries are clear and the component count is modest.",
    "testability": "Pure domain logic and contract tests make most behaviour checkable.",
    "requirements_fulfilment": "The stated requirements are met; some non-functional ones are assumed.",
}
STOPWORDS = set(
    "the and for with that this from into should would could must will have has need needs want "
    "design build create make using use what which when where how about your their they them there "
    "these those than then also some each every more most very such only over under between within "
    "without while able allow allows support supports handle handles implement write propose given "
    "like just many much other same scalable simple system systems good best new store manage track serve "
    "process provide ensure enable require requires scale".split()
)


# --------------------------------------------------------------------------- helpers


def _seed(*parts: object) -> int:
    """A stable seed: `hash()` is salted per process, sha256 is not."""
    joined = "\x1f".join("" if p is None else str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(joined.encode("utf-8")).digest()[:8], "big")


_IMPERATIVE = re.compile(
    r"^(?:please\s+)?(?:design|build|create|implement|propose|develop|plan|write|architect)\s+(?=\S)", re.I
)
_QUESTION = re.compile(r"^(?:how|what|which|why|should|can|could|would|is|are|do|does)\b", re.I)


def _topic(problem: str) -> str:
    """The problem's first non-empty line, without markdown, at most ~80 characters."""
    for line in problem.splitlines():
        line = line.strip().lstrip("#>*- ").strip().rstrip(".:;")
        line = _IMPERATIVE.sub("", line) or line  # "Design a cache" -> "a cache"
        if line:
            line = line if len(line) <= 80 else line[:80].rsplit(" ", 1)[0] + "…"
            # A question cannot stand in for a noun phrase ("… can be solved"): quote it.
            return f'the question "{line}"' if _QUESTION.match(line) or line.endswith("?") else line
    return "the problem"


def _nouns(problem: str) -> list[str]:
    """Up to three distinctive words of the problem, to make replies feel on-topic."""
    found: list[str] = []
    for word in re.findall(r"[A-Za-z][A-Za-z-]{3,}", problem):
        w = word.lower().strip("-")
        if w not in STOPWORDS and w not in found:
            found.append(w)
        if len(found) == 3:
            break
    for filler in ("data", "service", "request"):
        if len(found) < 3 and filler not in found:
            found.append(filler)
    return found


def _last_user(messages: Sequence[Message]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            return m.get("content", "")
    return ""


def _bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {i}" for i in items)


def _first_sentence(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    m = re.search(r"(?<=[.!?])\s", text)
    sentence = text[: m.start()] if m else text
    return sentence if len(sentence) <= 160 else sentence[:159].rsplit(" ", 1)[0] + "…"


_HEADING = re.compile(r"^\s*(#{1,6}\s+(?P<h>.+?)\s*#*|\*\*(?P<b>[^*]{1,80})\*\*:?|\[(?P<s>[^\]]{1,80})\]:?)\s*$")
_LABELLED = re.compile(r"^\s*(?P<l>[A-Za-z][\w .()/,-]{0,60}):\s+(?P<rest>\S.*)$")
_MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_TURN_HEAD = re.compile(r"^### Turn \d+ · (.+?) \(", re.M)


_PART = re.compile(r"^### (?:Summary of part \d+ of \d+\b.*|Partial summary \d+)$", re.M)
"""The heading of each partial summary in a reduce step (`core.context.summarize.reduce_parts`;
the second form is what earlier versions sent)."""


MERGE_RATIO = 3.5
"""A merge stops taking lines that would make it compress more than this (zlib): past it, a line
is mostly what is already kept (the same point in a later round). Well under
`core.context.summarize.COMPRESSION_LIMIT`, which rejects a summary that loops."""


def _merge(material: str, limit: int) -> str:
    """A reduce step: the partial summaries are summaries already, so their lines are the content
    to keep. Lines are taken a round at a time across the parts (every part's first line, then
    every part's second line, …) so each part is represented, repetition is skipped (a line
    that would make the whole compress past `MERGE_RATIO`), and they are written in their
    original order, under `limit` characters. Within a round the newest parts come first, so a
    point made again keeps its latest form. (Treating each partial summary as one block kept a
    single line of it: the collapse of issue 11.)"""
    parts = [[ln.strip() for ln in chunk.strip().splitlines() if ln.strip() and not ln.strip().startswith("- … (")]
             for chunk in _PART.split(material)[1:]]
    chosen: set[tuple[int, int]] = set()
    kept = b""
    used = 0
    for j in range(max((len(lines) for lines in parts), default=0)):
        for i in reversed(range(len(parts))):  # newest first: a point made again keeps its latest form
            lines = parts[i]
            if j >= len(lines):
                continue
            item = _as_item(lines[j])
            if used + len(item) + 1 > limit:
                continue
            data = kept + b"\n" + item.encode("utf-8")
            if len(data) > 200 and len(data) / len(zlib.compress(data, 9)) > MERGE_RATIO:
                continue  # repetition
            chosen.add((i, j))
            kept, used = data, used + len(item) + 1
    return "\n".join(_as_item(lines[j]) for i, lines in enumerate(parts) for j in range(len(lines))
                     if (i, j) in chosen)


def _as_item(line: str) -> str:
    return line if _MARKER.match(line) or _HEADING.match(line) else f"- {line}"


def _blocks(material: str) -> list[tuple[str, str]]:
    """(title, headline) per block; blocks start at headings, labelled lines and blank lines."""
    blocks: list[tuple[str, list[str]]] = []
    gap = True
    for raw in material.splitlines():
        if not raw.strip():
            gap = True
            continue
        heading = _HEADING.match(raw)
        item = _MARKER.match(raw)
        labelled = _LABELLED.match(raw) if not heading and not item else None
        # A list item is a sentence of its own: end it so items do not run together.
        line = _MARKER.sub("", raw).strip()
        if item and not line.endswith((".", "!", "?", ":")):
            line += "."
        if heading:
            blocks.append((heading.group("h") or heading.group("b") or heading.group("s") or "", []))
        elif labelled and len(labelled.group("l").split()) <= 6:
            blocks.append((labelled.group("l").strip(), [labelled.group("rest")]))
        elif gap and (not blocks or blocks[-1][1]):
            blocks.append(("", [line]))
        else:
            blocks[-1][1].append(line)
        gap = False
    out = [(t.strip(), _first_sentence(" ".join(b))) for t, b in blocks]
    return [(t, s) for t, s in out if t or s]


# --------------------------------------------------------------------------- provider


class DemoProvider:
    """Scripted replies written from the CallHint; no key, no network, same input → same text."""

    name = "demo"
    label = "DEMO (offline, scripted)"
    slots: int | None = None

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
        text = self.write(request.messages, hint, model=model, max_tokens=request.max_tokens)
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
        """The full reply for a call, before streaming (public so tools can preview it)."""
        last = _last_user(messages)
        rng = random.Random(
            _seed(hint.phase, hint.role, hint.agent_id, hint.round, hint.target_agent_id, hint.problem, last)
        )
        if hint.extra.get("answer_kind"):  # a question with a checkable answer (moot bench)
            reply = question_reply(messages, hint, rng)
            if reply is not None:
                return reply
        if hint.phase == "rank":
            return design_rank(messages, rng)
        nouns = _nouns(hint.problem)
        role = hint.role if hint.role in ROLE_BANKS else "generalist"
        ctx = {
            "topic": _topic(hint.problem), "noun": nouns[0], "noun2": nouns[1], "role": hint.role or "generalist",
            "lens": ROLE_BANKS[role]["lens"], "target": hint.target_role or "other",
            "p99": rng.choice([50, 80, 120, 200]), "replicas": rng.choice([2, 3, 5]), "ttl": rng.choice([1, 6, 24, 72]),
            "rps": rng.choice([200, 500, 1000, 2500]), "rps_small": rng.choice([60, 120, 300]),
            "cov": rng.choice([80, 85, 90]), "days": rng.choice([30, 90, 365]), "weeks": rng.choice([4, 6, 8]),
        }
        bank = ROLE_BANKS[role]

        def fmt(template: str) -> str:
            """Fill a phrase; the topic may open a sentence, so capitalise its first letter."""
            text = template.format_map(ctx)
            return text[:1].upper() + text[1:]

        def frag(template: str) -> str:
            """Fill a phrase that goes mid-sentence (no capitalisation)."""
            return template.format_map(ctx)

        pick = lambda key, k: [fmt(s) for s in rng.sample(bank[key], k)]  # noqa: E731
        phase = "score" if hint.phase == "convergence" else hint.phase

        if phase in ("proposal", "refinement"):
            position = [fmt(rng.choice(OPENERS)), fmt(rng.choice(bank["position"])), fmt(rng.choice(CLOSERS))]
            keep, change = frag(rng.choice(bank["keeps"])), frag(rng.choice(bank["changes"]))
            if phase == "refinement":
                critics = [r for r in ROLE_BANKS if r != role and r in last.lower()][:3]
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
            risks = pick("risks", 3) + [fmt(rng.choice(SHARED_RISKS))]
            return (
                f"## Position\n\n{' '.join(position)}\n\n## Design\n\n{_bullets(pick('design', n_design))}\n\n"
                f"## Key decisions\n\n{_bullets(pick('decisions', 4))}\n\n"
                f"## Risks / open questions\n\n{_bullets(risks)}\n"
            )
        if phase == "critique":
            # Quote a concrete line of the target proposal, preferring its bullet points.
            lines = [ln for ln in last.splitlines() if len(ln.split()) >= 6 and not ln.lstrip().startswith("#")]
            items = [ln for ln in lines if _MARKER.match(ln)] or lines
            quote = ""
            if items:
                words = re.sub(r"[*`_]", "", _MARKER.sub("", rng.choice(items[:6]))).split()
                quote = " ".join(words[:8]).strip(".,;:")
            intro = (
                f"Reviewing the **{ctx['target']}** proposal for {ctx['topic']} through the {role} lens: "
                f"{bank['lens']}. I keep to what matters most from that angle and leave the rest to the other agents."
            )
            if quote:
                intro += f' The line "{quote}…" sets the tone, and I judge the rest against it.'
            return (
                f"{intro}\n\n## Strengths\n\n{_bullets(pick('strengths', rng.choice([2, 3])))}\n\n"
                f"## Weaknesses\n\n{_bullets(pick('weaknesses', rng.choice([2, 3])))}\n\n"
                f"## Suggestions\n\n{_bullets(pick('suggestions', rng.choice([2, 3])))}\n\n"
                f"Overall the {ctx['target']} view is a useful anchor. With the weaknesses above addressed I would "
                f"support it, and I would ask its author to say how each change will be measured for {ctx['noun']}.\n"
            )
        if phase == "turn":
            return self._turn(messages, hint, rng, fmt, pick, bank, ctx)
        if phase == "answer":
            intro = (f"{fmt(rng.choice(OPENERS))} {fmt(rng.choice(bank['position']))}" if hint.round <= 1 else
                     f"In round {hint.round} I keep {frag(rng.choice(bank['keeps']))} and change "
                     f"{frag(rng.choice(bank['changes']))}, taking the other agents' answers as advice.")
            changes = ("none" if hint.round <= 1 else
                       fmt(f"I moved {rng.choice(bank['changes'])} because the others showed it was the weak spot."))
            return (f"## Answer\n\n{intro}\n\n{_bullets(pick('design', 4))}\n\n## Reasoning\n\n"
                    f"{_bullets(pick('decisions', 3))}\n\n## Changes since your last answer\n\n{changes}\n")
        if phase == "summarize":
            return self._summarize(last, int(hint.extra.get("max_chars", 2500)), model, max_tokens)
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
            values = {k: rng.randint(5, 9) for k in EVAL_REASONS}
            scores: dict[str, dict[str, object]] = {
                k: {"score": values[k], "reason": fmt(r)} for k, r in EVAL_REASONS.items()}
            overall = round(sum(values.values()) / len(values))
            scores["overall"] = {"score": overall, "reason": "Average of the criteria above, rounded."}
            return json.dumps({"scores": scores}, indent=2)
        return (
            f"## Answer\n\n{fmt(rng.choice(bank['position']))}\n\n"
            f"{_bullets(pick('suggestions', 2))}\n\n_Written by the offline demo provider._\n"
        )

    def _turn(self, messages: Sequence[Message], hint: CallHint, rng: random.Random, fmt: Callable[[str], str],
              pick: Callable[[str, int], list[str]], bank: dict[str, Any], ctx: dict[str, Any]) -> str:
        """A conversation turn: answer the previous speaker by name, then add one new point."""
        previous = ""
        quote = ""
        for m in reversed(messages[:-1]):
            heads = _TURN_HEAD.findall(m.get("content", ""))
            if heads:
                previous = heads[-1]
                tail = m["content"].rsplit(f"· {previous} (", 1)[-1]
                lines = [ln for ln in tail.splitlines() if len(ln.split()) >= 6 and not ln.lstrip().startswith("#")]
                if lines:
                    words = re.sub(r"[*`_]", "", _MARKER.sub("", rng.choice(lines[:4]))).split()
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
            opener = f"{fmt(rng.choice(OPENERS))} {fmt(rng.choice(bank['position']))}"
        body = fmt(rng.choice(bank["position"] + bank["design"]))
        risk = fmt(rng.choice(bank["risks"]))
        ask = fmt(rng.choice(bank["questions"]))
        return f"{opener}\n\n{body} {risk}\n\n- {fmt(rng.choice(bank['decisions']))}\n- {ask}\n"

    def _summarize(self, material: str, max_chars: int, model: str = "demo", max_tokens: int = 4096) -> str:
        """Headline + first sentence of each block, capped below the material's length; for the
        reduce step of chunk-and-reduce, the partial summaries' own lines (`_merge`)."""
        # Summarize only the material inside the prompt's <history> tags, not the instructions.
        start, end = material.find("<history>"), material.rfind("</history>")
        if start != -1 and end > start:
            material = material[start + len("<history>") : end]
        limit = min(max_chars, len(material.strip()) - 1)
        if limit <= 0:
            return ""
        if _PART.search(material):
            # Fit the reply's token limit by giving every part less room, not by losing the
            # newest parts to the cut at max_tokens.
            text = _merge(material, limit)
            for _ in range(4):
                n = count_text(text, model)
                if n <= max_tokens:
                    break
                limit = int(limit * max_tokens / n * 0.95)
                text = _merge(material, limit)
            return text
        lines: list[str] = []
        blocks = _blocks(material)
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
        agents = [str(a) for a in hint.extra.get("agents", [])] or ["architect", "performance", "security"]
        parts = []
        for name in agents[:5]:
            bank = ROLE_BANKS.get(name, ROLE_BANKS["generalist"])
            parts.append(f"- From the **{name}** view: {fmt(rng.choice(bank['design']))}")
        lenses = [ROLE_BANKS.get(a, ROLE_BANKS["generalist"])["lens"] for a in agents]
        why = (
            f"The {agents[0]} perspective set the structure ({lenses[0]})"
            + (f"; the {agents[-1]} perspective set the limits ({lenses[-1]})." if len(agents) > 1 else ".")
            + " Where the agents disagreed, the synthesis keeps the option that is cheaper to reverse and writes down"
            " the number that would make us revisit it. The result is less ambitious than the most elaborate"
            " proposal and more robust than the simplest one."
        )
        decisions = [fmt(rng.choice(ROLE_BANKS.get(a, ROLE_BANKS["generalist"])["decisions"])) for a in agents[:3]]
        solution = (
            f"## Recommended solution\n\nFor {ctx['topic']}, the debate converged on a modular design with a clear "
            f"owner for {ctx['noun']} and {ctx['noun2']}, measurable targets, and a phased rollout. "
            f"It combines the strongest points of {', '.join(agents[:5])} and drops the parts no one could justify "
            "with a number.\n\n## Why this shape\n\n" + why
            + "\n\n## Components\n\n" + "\n".join(parts)
            + "\n\n## Key numbers\n\n" + _bullets(decisions)
            + "\n\n## Operations\n\n"
            "- Dashboards for latency, traffic, errors and saturation before the first user arrives.\n"
            "- Runbooks for the three most likely incidents, and an on-call rotation of at least four people.\n"
            "- A written review of every incident, feeding changes back into this design.\n"
            "\n## Rollout\n\n- Milestone 1: the core journey behind a feature flag, with dashboards and alerts.\n"
            "- Milestone 2: harden security and data constraints, then load test at twice the expected peak.\n"
            "- Milestone 3: open to all users and review the design with production data.\n"
        )
        risks = [fmt(r) for a in agents for r in ROLE_BANKS.get(a, ROLE_BANKS["generalist"])["risks"]]
        obj: dict[str, Any] = {
            "solution": solution,
            "confidence": rng.randint(60, 95),
            "tradeoffs": [fmt(t) for t in rng.sample(TRADEOFFS, 3)],
            "recommendations": [fmt(r) for r in rng.sample(RECOMMENDATIONS, 3)],
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

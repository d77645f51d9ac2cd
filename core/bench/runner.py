"""Planning and running a benchmark: every question × protocol an ordinary debate in the state dir.

A debate's id is a function of the data set, the protocol's configuration and the question
(`b-<data>-<config>-<protocol>-<question>`), so a rerun of the same command finds its debates:
a finished one is read back without a request, an unfinished one is resumed (recorded calls are
not repeated), a missing one is started. A kill at any moment loses no finished question.

`--from POINT` (`round:2`, `round:2:critique`, `turn:4`) runs each debate protocol again from that
point of the question's saved debate — the one the same command without `--from` made: its
history up to the point is kept (no request for it is sent again) and the rest runs anew, as a
fork (`moot fork`) with its own id (`<the saved debate's id>-from-<point>`), so "what does round 2
add" is one command. The baselines (single, vote) have no such point: their saved rows are read.

`--repeat K` runs each question K times. Run k (1…K) is the same debate with every agent's seed
raised by `REPEAT_SEED_STEP × (k − 1)` (the vote's copies add 1000 per pass on top, so the runs'
seeds never meet for fewer than 10 passes), under the id `<the first run's id>-r<k>`: run 1 is
the debate a command without `--repeat` makes, and a rerun finds every run's debate as above.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..config import Overrides, build_config
from ..engine.limits import EndpointLimits
from ..errors import InputError, MootError
from ..models.config import AnswerFormat, MootConfig
from ..models.terms import ProtocolName
from ..protocols.topology import reads
from ..session import SessionOptions, new_session, resume_session
from ..storage.folder import EVENTS_FILE, PENDING_SUFFIX, DebateFolder
from ..storage.state_dir import StateDir
from .datasets import Dataset, Question, problem_text
from .results import ResultRow, read_row

BASELINES: tuple[ProtocolName, ...] = ("single", "vote")
REPEAT_SEED_STEP = 10_000
"""What each further run of a question (`--repeat`) adds to every agent's seed."""
FINISHED = ("completed", "stopped_budget")


@dataclass(frozen=True)
class Job:
    """One question through one protocol; plain data, so it travels to a Ray worker as is."""

    question_id: str
    problem: str
    expected: str
    format: dict[str, Any]
    protocol: str
    debate_id: str
    config: dict[str, Any]
    state_dir: str
    demo_delay: float | None = 0.0
    parent_id: str | None = None
    """With `fork_at`: the saved debate this job's debate is forked from (`--from`)."""
    fork_at: str | None = None
    repeat: int = 1
    """Which run of the question this is (`--repeat`), from 1."""

    @property
    def slot(self) -> tuple[str, str, int]:
        """What this job is among the plan's: its question, protocol and run."""
        return (self.question_id, self.protocol, self.repeat)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def answer_format(self) -> AnswerFormat:
        return AnswerFormat.model_validate(self.format)


@dataclass
class BenchPlan:
    dataset: Dataset
    protocols: list[ProtocolName]
    jobs: list[Job]
    samples: int | None
    """The vote's answers per question (None: one per agent)."""
    samples_note: str = ""
    """Why the vote has that many answers (equal cost with a debate, or the flag)."""
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The configuration each protocol ran with (the effective one, without secrets)."""
    repeat: int = 1
    """Runs of each question (`--repeat`)."""


def calls_per_question(cfg: MootConfig) -> int:
    """The LLM calls one question costs under `cfg` (summaries aside): what a vote must match
    to compare at equal cost."""
    d = cfg.debate
    a = len(cfg.active_agents)
    match d.protocol:
        case "single":
            return 1
        case "vote":
            return d.samples or a
        case "simultaneous":
            return a * d.rounds + (0 if d.final == "majority" else 1)
        case "council":
            return a + (a if a > 1 else 0) + 1
        case "rounds":  # a critique per agent another reads (`debate.topology`), a refinement each
            ids = [x.id for x in cfg.active_agents]
            per_round = sum(len(reads(ids, x, d.topology)) for x in ids) + a
            first = a + per_round
            later = per_round + (0 if d.carry_refinements else a)
            return first + later * (d.rounds - 1) + 1
        case "conversation":
            return d.turns + 1
        case "adaptive":  # its most: every draw, then every debate round among them
            return d.adaptive.max_samples * (1 + d.adaptive.max_rounds)


def protocol_config(base: MootConfig, protocol: ProtocolName, samples: int | None) -> MootConfig:
    data = base.model_dump(mode="json", exclude_none=True)
    for i, agent in enumerate(data.get("agents", []), start=1):
        agent.setdefault("seed", i)  # each agent samples its own way, the same way on every rerun
    debate = data.setdefault("debate", {})
    debate["protocol"] = protocol
    debate.pop("answer", None)
    if protocol == "simultaneous":
        debate["final"] = "majority"  # Du et al.: the agents' majority, no judge call
    if protocol == "vote" and samples is not None:
        debate["samples"] = samples
    return build_config(data, Overrides(), source=f"{protocol} config")


def _key(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:8]


def plan(dataset: Dataset, protocols: Sequence[ProtocolName], base: MootConfig, *, state_dir: Path,
         limit: int | None = None, samples: int | None = None, demo_delay: float | None = 0.0,
         from_point: str | None = None, repeat: int = 1) -> BenchPlan:
    """The jobs, question by question (each question through every protocol, each run of it,
    before the next, so partial results stay paired)."""
    questions = dataset.questions[:limit] if limit else dataset.questions
    note = f"--samples {samples}" if samples else ""
    if samples is None and "vote" in protocols:
        compared = next((p for p in protocols if p not in BASELINES), None)
        if compared == "adaptive":  # its cost varies by question: the vote gets its most independent answers
            samples = base.debate.adaptive.max_samples
            note = f"adaptive draws at most {samples} independent answers per question"
        elif compared is not None:
            samples = calls_per_question(protocol_config(base, compared, None))
            note = f"equal cost: {compared} makes {samples} calls per question"
        else:
            note = "one answer per agent"
    configs = {p: protocol_config(base, p, samples) for p in protocols}
    root = str(state_dir.resolve())
    jobs: list[Job] = []
    for q in questions:
        fmt = q.format
        for k in range(1, repeat + 1):
            for p in protocols:
                data = configs[p].model_dump(mode="json", exclude_none=True)
                data["debate"]["answer"] = fmt.model_dump(mode="json")
                for agent in data.get("agents", []):
                    agent["seed"] += REPEAT_SEED_STEP * (k - 1)
                debate_id = (f"b-{dataset.fingerprint}-{_key(configs[p].model_dump(mode='json'))}-{p}-{q.id}"
                             + (f"-r{k}" if k > 1 else ""))
                forked = from_point is not None and p not in BASELINES
                jobs.append(Job(question_id=q.id, problem=problem_text(q), expected=q.expected,
                                format=fmt.model_dump(mode="json"), protocol=p,
                                debate_id=f"{debate_id}-from-{from_point.replace(':', '-')}" if forked and from_point
                                else debate_id, config=data, state_dir=root, demo_delay=demo_delay,
                                parent_id=debate_id if forked else None, fork_at=from_point if forked else None,
                                repeat=k))
    public: dict[str, dict[str, Any]] = {p: c.model_dump(mode="json", exclude_none=True) for p, c in configs.items()}
    return BenchPlan(dataset, list(protocols), jobs, samples, note, public, repeat)


def finished_row(job: Job) -> ResultRow | None:
    """The row of a debate already finished on disk (no request is made), else None."""
    path = Path(job.state_dir) / job.debate_id
    if not (path / EVENTS_FILE).exists():
        return None
    folder = DebateFolder(path)
    state = folder.load()
    if state.status in FINISHED and state.final_solution is not None:
        return read_row(job.question_id, job.expected, job.answer_format, folder, state, repeat=job.repeat)
    return None


def failed_row(job: Job, error: str) -> ResultRow:
    return ResultRow(id=job.question_id, protocol=job.protocol, answer=None, expected=job.expected, correct=False,
                     debate_id=job.debate_id, status="failed", decided_by="", error=error, repeat=job.repeat)


async def run_job(job: Job, limits: EndpointLimits | None = None) -> ResultRow:
    """Read, resume or start the job's debate, run it to its end, and read its row back. `limits`:
    endpoint limits shared with the jobs running beside it in this event loop."""
    sd = StateDir(job.state_dir)
    pending = sd.root / f".{job.debate_id}{PENDING_SUFFIX}"
    if pending.is_dir():
        sd.settle(pending)  # a start cut short: published when its first event is on disk
    done = finished_row(job)
    if done is not None:
        return done
    opts = SessionOptions(state_dir=sd.root, debate_id=job.debate_id, demo_delay=job.demo_delay, limits=limits)
    if job.fork_at is not None and job.parent_id is not None and not (sd.root / job.debate_id / EVENTS_FILE).exists():
        _fork(sd, job)
    if (sd.root / job.debate_id / EVENTS_FILE).exists():
        session = resume_session(job.debate_id, opts)
    else:
        session = new_session(job.problem, build_config(job.config, Overrides()), opts)
    state = await session.run()
    return read_row(job.question_id, job.expected, job.answer_format, session.folder, state, repeat=job.repeat)


def _fork(sd: StateDir, job: Job) -> None:
    """Make the job's debate: the question's saved debate up to `job.fork_at` (written whole or not
    at all, so a kill leaves nothing or a fork a rerun resumes)."""
    from ..forking import ForkChanges, fork_debate
    from ..storage.fork import parse_point

    assert job.parent_id is not None and job.fork_at is not None
    if not (sd.root / job.parent_id / EVENTS_FILE).exists():
        raise InputError(f"no saved {job.protocol} debate of question {job.question_id} to run from "
                         f"{job.fork_at}: run the same command without --from first")
    fork_debate(job.parent_id, parse_point(job.fork_at), ForkChanges(), sd.root, debate_id=job.debate_id)


async def run_job_safely(job: Job, limits: EndpointLimits | None = None) -> ResultRow:
    """`run_job`, with a refusal or failure as a failed row (the others go on; a rerun retries it)."""
    try:
        return await run_job(job, limits)
    except MootError as exc:
        return failed_row(job, str(exc))


OnStart = Callable[[Job], None]
OnDone = Callable[[Job, ResultRow], None]


async def check_startable(job: Job) -> None:
    """Fail before anything runs on what would fail every job (a missing key, a bad prompt path),
    by building the first job's orchestrator without a folder."""
    from ..orchestrator import Orchestrator
    from ..providers.pool import ProviderPool, default_provider_name

    cfg = build_config(job.config, Overrides())
    providers = ProviderPool(demo_delay=0)
    base_url = next((a.base_url for a in cfg.agents if a.base_url), None)
    orch = Orchestrator(cfg, job.problem, debate_id="check", providers=providers,
                        default_provider=default_provider_name(base_url))
    try:
        for agent in [*orch.agents, orch.judge]:
            providers.get(agent)
    finally:
        await providers.aclose()


def questions_of(plan_: BenchPlan) -> list[Question]:
    ids = list(dict.fromkeys(j.question_id for j in plan_.jobs))
    by_id = {q.id: q for q in plan_.dataset.questions}
    return [by_id[i] for i in ids]

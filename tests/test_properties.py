"""Property tests: whatever bytes a config file or an event log holds, the answer is a
valid value or the one error type the CLI turns into a line, never another exception."""

from __future__ import annotations

import asyncio
import functools
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from moot.core.config import ConfigError, Overrides, build_config, load_config, resolve_agent
from moot.core.errors import StoreError
from moot.core.events import parse_event
from moot.core.models.config import MootConfig
from moot.core.models.state import DebateState
from moot.core.models.terms import ROLES
from moot.core.session import SessionOptions, resume_session
from moot.core.storage.folder import STATE_FILE, DebateFolder
from moot.core.storage.state import MAX_ROUND, apply, new_state

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)

# ---------------------------------------------------------------- config files

FIELDS = ["debate", "agents", "judge", "rounds", "max_concurrency", "summarization", "context", "timeout_s",
          "max_retries", "on_error", "carry_refinements", "prices", "id", "name", "role", "model", "provider",
          "temperature", "enabled", "fallback_models", "base_url", "threshold", "trigger_ratio", "max_length",
          "method", "strategy", "max_context_tokens", "reserve_output_tokens", "max_summary_tokens",
          "termination", "convergence_threshold", "max_cost_usd", "max_total_tokens", "clarify"]
WORDS = [*ROLES, "stop", "skip", "llm", "rule-based", "hybrid", "fresh", "rolling", "openai", "demo", "judge", "a"]
SCALARS = (st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats()
           | st.text(max_size=12) | st.sampled_from(WORDS))
KEYS = st.sampled_from(FIELDS) | st.text(max_size=8)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
                      max_leaves=25)
CONFIGS = st.fixed_dictionaries({}, optional={
    "debate": st.dictionaries(KEYS, VALUES, max_size=6) | VALUES,
    "agents": st.lists(st.dictionaries(KEYS, VALUES, max_size=6), max_size=4) | VALUES,
    "judge": st.dictionaries(KEYS, VALUES, max_size=4) | VALUES,
}) | st.dictionaries(KEYS, VALUES, max_size=4)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v).replace("inf", "inf").replace("nan", "nan")
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v if x is not None) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items() if x is not None) + "}"
    return '""'


def to_toml(data: dict[str, Any]) -> str:
    """A small TOML writer (tables, arrays of tables, inline values); what it cannot
    express well is still bytes for the loader to judge."""
    out: list[str] = []
    for k, v in data.items():
        if not isinstance(v, (dict, list)) and v is not None:
            out.append(f"{json.dumps(k)} = {_toml_value(v)}")
    for k, v in data.items():
        if isinstance(v, dict):
            out.append(f"[{json.dumps(k)}]")
            out += [f"{json.dumps(kk)} = {_toml_value(vv)}" for kk, vv in v.items() if vv is not None]
        elif isinstance(v, list) and all(isinstance(x, dict) for x in v):
            for item in v:
                out.append(f"[[{json.dumps(k)}]]")
                out += [f"{json.dumps(kk)} = {_toml_value(vv)}" for kk, vv in item.items() if vv is not None]
        elif isinstance(v, list):
            out.insert(0, f"{json.dumps(k)} = {_toml_value(v)}")
    return "\n".join(out) + "\n"


def _load(data: bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"moot{suffix}"
        path.write_bytes(data)
        try:
            cfg = load_config(path)
        except ConfigError as exc:
            assert str(exc) and "\n" not in str(exc)
            return
        assert isinstance(cfg, MootConfig)
        for agent in [*cfg.active_agents, cfg.judge]:  # what a debate does next with it
            try:
                resolve_agent(agent, cfg, "demo")
            except ConfigError:
                pass


@SETTINGS
@given(data=st.binary(max_size=600), suffix=st.sampled_from([".json", ".toml"]))
def test_config_loader_on_arbitrary_bytes(data: bytes, suffix: str) -> None:
    _load(data, suffix)


@SETTINGS
@given(config=CONFIGS)
def test_config_loader_on_arbitrary_json_configs(config: dict[str, Any]) -> None:
    _load(json.dumps(config).encode(), ".json")


@SETTINGS
@given(config=CONFIGS)
def test_config_loader_on_arbitrary_toml_configs(config: dict[str, Any]) -> None:
    # Dates and times are covered by test_bad_input.test_toml_dates_are_a_config_error.
    _load(to_toml(config).encode(), ".toml")


@SETTINGS
@given(config=CONFIGS, cut=st.integers(0, 10_000), noise=st.binary(max_size=20))
def test_config_loader_on_damaged_config_text(config: dict[str, Any], cut: int, noise: bytes) -> None:
    for text, suffix in ((json.dumps(config), ".json"), (to_toml(config), ".toml")):
        raw = text.encode()
        at = cut % (len(raw) + 1)
        _load(raw[:at] + noise + raw[at:], suffix)
        _load(raw[:at], suffix)


# ---------------------------------------------------------------- event logs


@functools.cache
def recorded_debate() -> tuple[bytes, bytes, str]:
    """(event log, final snapshot, id) of a real 1-round debate with two agents."""
    from tests.conftest import run_debate

    with tempfile.TemporaryDirectory() as d:
        _, folder = asyncio.run(run_debate(Path(d), rounds=1, roles=["kiss", "security"]))
        return folder.events_path.read_bytes(), folder.state_path.read_bytes(), folder.id


LEAF = SCALARS | st.integers(-3, MAX_ROUND + 3)


@st.composite
def damaged_logs(draw: st.DrawFn) -> tuple[bytes, bytes | None]:
    """A recorded log cut where a crash could cut it (with a snapshot as a crash could
    leave it), then damaged in one way a crash cannot: the loader must tell them apart."""
    log, final_snapshot, debate_id = recorded_debate()
    lines = log.split(b"\n")[:-1]
    k = draw(st.integers(1, len(lines)))
    lines = lines[:k]
    log = b"\n".join(lines) + b"\n"
    j = draw(st.integers(0, k))
    prefix = new_state(debate_id)
    for line in lines[:j]:
        apply(prefix, parse_event(line))
    snapshot = prefix.model_dump_json().encode() if j else final_snapshot
    how = draw(st.sampled_from(["append", "insert", "insert-line", "truncate", "mutate-field", "drop-line",
                                "duplicate-line", "swap-lines"]))
    noise = draw(st.binary(min_size=1, max_size=64))
    if how == "append":
        log = log + noise + draw(st.sampled_from([b"", b"\n"]))
    elif how == "insert":
        at = draw(st.integers(0, len(log)))
        log = log[:at] + noise + log[at:]
    elif how == "insert-line":
        at = draw(st.integers(0, len(lines)))
        log = b"\n".join([*lines[:at], noise, *lines[at:]]) + b"\n"
    elif how == "truncate":
        log = log[: draw(st.integers(0, len(log)))]
    elif how == "mutate-field":  # a well-formed line with one value changed: exercises the fold
        i = draw(st.integers(0, len(lines) - 1))
        event = json.loads(lines[i])
        node = event
        while True:
            keys = [k for k, v in node.items() if k != "type"] if isinstance(node, dict) else []
            if not keys:
                break
            key = draw(st.sampled_from(sorted(keys)))
            if isinstance(node[key], dict) and draw(st.booleans()):
                node = node[key]
                continue
            node[key] = draw(LEAF)
            break
        lines[i] = json.dumps(event).encode()
        log = b"\n".join(lines) + b"\n"
    elif how == "drop-line":
        del lines[draw(st.integers(0, len(lines) - 1))]
        log = b"\n".join(lines) + b"\n"
    elif how == "duplicate-line":
        i = draw(st.integers(0, len(lines) - 1))
        lines.insert(draw(st.integers(0, len(lines))), lines[i])
        log = b"\n".join(lines) + b"\n"
    else:
        i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
        log = b"\n".join(lines) + b"\n"
    snap = draw(st.sampled_from(["none", "snapshot", "garbage", "cut"]))
    state = {"none": None, "snapshot": snapshot, "garbage": noise,
             "cut": snapshot[: draw(st.integers(0, len(snapshot)))]}[snap]
    return log, state


def _folder(root: Path, debate_id: str, log: bytes, snapshot: bytes | None) -> DebateFolder:
    folder = DebateFolder(root / debate_id)
    folder.path.mkdir(parents=True)
    folder.events_path.write_bytes(log)
    if snapshot is not None:
        (folder.path / STATE_FILE).write_bytes(snapshot)
    return folder


@settings(SETTINGS, max_examples=300)
@given(damaged=damaged_logs())
def test_event_log_load_gives_a_state_or_a_store_error(damaged: tuple[bytes, bytes | None]) -> None:
    log, snapshot = damaged
    with tempfile.TemporaryDirectory() as d:
        folder = _folder(Path(d), recorded_debate()[2], log, snapshot)
        try:
            state = folder.load()
        except StoreError as exc:
            assert str(exc) and "\n" not in str(exc)
            event("refused")
            return
        event(f"loaded ({state.status})")
        assert isinstance(state, DebateState)
        assert len(state.rounds) <= MAX_ROUND
        DebateState.model_validate_json(state.model_dump_json(warnings=False))  # can be checkpointed


@settings(SETTINGS, max_examples=100)
@given(damaged=damaged_logs())
def test_resume_of_a_damaged_log_refuses_or_runs(damaged: tuple[bytes, bytes | None]) -> None:
    """`moot resume` on any of these: a one-line refusal (StoreError/ConfigError, the
    lock released) or a debate that runs to an end state and saves it."""
    log, snapshot = damaged
    debate_id = recorded_debate()[2]
    with tempfile.TemporaryDirectory() as d:
        folder = _folder(Path(d), debate_id, log, snapshot)
        try:
            session = resume_session(debate_id, SessionOptions(state_dir=d, demo_delay=0))
        except (StoreError, ConfigError) as exc:
            assert str(exc) and "\n" not in str(exc)
            folder.lock().acquire()  # not left locked
            event(f"refused: {type(exc).__name__}")
            return
        state = asyncio.run(session.run())
        event(f"ran: {state.status}")
        assert state.status in ("completed", "failed")
        assert folder.load().status == state.status


def test_build_config_round_trips_what_a_debate_saves() -> None:
    """The saved configuration of a debate (what resume rebuilds from) is itself valid."""
    cfg = build_config({"agents": [{"id": "x", "role": "kiss", "fallback_models": ["b"]}]}, Overrides(rounds=2))
    saved = json.loads(json.dumps(cfg.model_dump(mode="json")))
    assert build_config(saved, Overrides()) == cfg

"""Every event type survives the log: written with its optional fields absent or null, read back equal.

A field that may be None but has no default was dropped on write (the log omits nulls)
and then failed validation on read, which stopped a whole debate.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from moot.core.events import Event, dump_event, parse_event

EVENT_TYPES: list[type[BaseModel]] = list(get_args(get_args(Event)[0]))
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), TEXT)


def _allows_none(annotation: Any) -> bool:
    origin = get_origin(annotation)
    return (origin is Union or origin is types.UnionType) and type(None) in get_args(annotation)


def strategy_for(annotation: Any, null_optionals: bool) -> st.SearchStrategy[Any]:
    origin = get_origin(annotation)
    if origin is Annotated:
        return strategy_for(get_args(annotation)[0], null_optionals)
    if origin is Union or origin is types.UnionType:
        options = [a for a in get_args(annotation) if a is not type(None)]
        inner = st.one_of(*(strategy_for(a, null_optionals) for a in options))
        if type(None) in get_args(annotation):
            return st.none() if null_optionals else st.one_of(st.none(), inner)
        return inner
    if origin is Literal:
        return st.sampled_from(get_args(annotation))
    if origin in (list, typing.List):  # noqa: UP006
        return st.lists(strategy_for(get_args(annotation)[0], null_optionals), max_size=2)
    if origin is dict:
        key, value = get_args(annotation)
        return st.dictionaries(strategy_for(key, null_optionals), strategy_for(value, null_optionals), max_size=2)
    if origin is tuple:
        return st.tuples(*(strategy_for(a, null_optionals) for a in get_args(annotation)))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_strategy(annotation, null_optionals)
    if annotation is str:
        return TEXT
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return st.integers(0, 10**6)
    if annotation is float:
        return st.floats(0, 1e9, allow_nan=False, allow_infinity=False)
    if annotation is Any or annotation is object:
        return JSON_SCALAR
    raise AssertionError(f"no strategy for {annotation!r}")


def _field_strategy(name: str, field: FieldInfo, null_optionals: bool) -> st.SearchStrategy[Any]:
    annotation = field.annotation
    if name == "round":  # a real step number (state folds refuse round 0 or absurd ones)
        return st.integers(1, 50)
    return strategy_for(annotation, null_optionals)


@st.composite
def _build(draw: st.DrawFn, cls: type[BaseModel], null_optionals: bool) -> BaseModel:
    values: dict[str, Any] = {}
    for name, field in cls.model_fields.items():
        required = field.is_required()
        if name == "type" and not required:
            continue  # an event's discriminator keeps its literal default
        if required or draw(st.booleans()) or (null_optionals and _allows_none(field.annotation)):
            values[name] = draw(_field_strategy(name, field, null_optionals))
    return cls(**values)


def model_strategy(cls: type[BaseModel], null_optionals: bool = False) -> st.SearchStrategy[BaseModel]:
    return _build(cls, null_optionals)


ANY_EVENT = st.sampled_from(EVENT_TYPES).flatmap(
    lambda cls: st.booleans().flatmap(lambda nulls: model_strategy(cls, nulls)))


def test_every_event_type_is_covered() -> None:
    names = {cls.model_fields["type"].default for cls in EVENT_TYPES}
    assert {"convergence_scored", "debate_started", "call_started", "summary_added", "debate_failed"} <= names
    assert len(names) == len(EVENT_TYPES) >= 23


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event=ANY_EVENT)
def test_every_event_round_trips_through_the_log(event: BaseModel) -> None:
    line = dump_event(event)  # type: ignore[arg-type]  # a member of the Event union
    back = parse_event(line)
    assert back == event, line


def test_a_score_that_was_not_parsed_round_trips() -> None:
    from moot.core.events import ConvergenceScored
    from moot.core.models.state import ConvergenceScore

    event = ConvergenceScored(score=ConvergenceScore(round=2, confidence=None, raw="I think they mostly agree."))
    assert parse_event(dump_event(event)) == event


def test_convergence_with_a_judge_that_never_answers_json(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A judge that never answers JSON: every round is scored "no score", the debate runs to its last round (exit 0),
    the report says "not parsed", and the saved events read back (show, resume refusal)."""
    from moot.core.storage.state_dir import StateDir
    from tests.conftest import cli
    from tests.loopback import LoopbackServer

    def prose(body: dict[str, Any], n: int) -> str:
        return f"Reply {n}: the agents broadly agree, I would say about eighty out of a hundred."

    sd = tmp_path / "d"
    with LoopbackServer(reply=prose) as srv:
        r = cli("run", "Design a cache", "-r", "3", "--termination", "convergence", "--headless",
                "--provider", "openai", "--base-url", srv.base_url, "--state-dir", str(sd))
    assert r.returncode == 0, r.stderr
    (folder,) = StateDir(sd).debates()
    state = folder.load()
    assert state.status == "completed" and len(state.rounds) == 3
    assert [(s.round, s.confidence) for s in state.convergence] == [(1, None), (2, None)]
    assert all(s.raw and "eighty" in s.raw for s in state.convergence)
    assert "convergence score after 1 was not parsed" in r.stderr and "convergence score not parsed" in r.stderr
    report = cli("report", folder.id, "--state-dir", str(sd))
    assert report.returncode == 0
    assert report.stdout.count("**Convergence score after round") == 2
    assert "after round 1:** not parsed (the judge answered: Reply" in report.stdout
    assert state.final_solution is not None and state.final_solution.parsed is False
    again = cli("resume", folder.id, "--headless", "--state-dir", str(sd))
    assert again.returncode == 2 and "already completed" in again.stderr

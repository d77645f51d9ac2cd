"""What moot knows of a provider from its name alone, before any client exists.

A recorded debate names its providers (`AgentInfo.provider`), and a configuration names the
one each agent uses; whoever shows or checks either — a report, the TUI, the CLI, the call
engine's cost — asks the provider's `ProviderKind` what it can do (is it billed, is it a
person, are its answers scripted, how is it shown) instead of comparing its name. The names
and their factories live one floor up (`core/providers/registry.py`); this table sits on the
ground floor so configuration and recorded data can use it. A third-party package adds a
provider through the `moot.providers` entry-point group: each entry point loads an object
with a `kind` (a `ProviderKind`) and a `make` factory (see `providers.registry.ProviderSpec`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

ENTRY_POINT_GROUP = "moot.providers"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_DEMO_MODEL = "demo"


@dataclass(frozen=True)
class ProviderKind:
    name: str
    default_model: str
    """The model an agent gets when its configuration names none."""
    billable: bool = True
    """Its calls cost what the price table says (the offline demo and a person cost nothing)."""
    person: bool = False
    """A seat a person takes: turns are typed, never a model call (one call in flight per seat)."""
    scripted: bool = False
    """Offline, made-up answers: everything it produced says DEMO wherever it is shown."""
    per_base_url: bool = False
    """One client per base URL: each URL is an endpoint of its own (limits, windows, slots)."""
    uses_openai_sdk: bool = False
    """Its client imports the openai SDK (started early, while the rest of the start-up runs)."""
    shown: str = ""
    """How a list of providers shows it; empty: its name."""
    header: str = ""
    """What a pane header says of a seat instead of `provider:model`; empty: `provider:model`."""

    def show(self) -> str:
        return self.shown or self.name

    def where(self, model: str) -> str:
        """The pane header's account of who answers in a seat."""
        return self.header or f"{self.name}:{model}"


OPENAI = ProviderKind("openai", DEFAULT_OPENAI_MODEL, per_base_url=True, uses_openai_sdk=True)
RESPONSES = ProviderKind("openai-responses", DEFAULT_OPENAI_MODEL, per_base_url=True, uses_openai_sdk=True)
"""OpenAI's Responses API (`providers/responses.py`): the same keys and endpoints as `openai`."""
DEMO = ProviderKind("demo", DEFAULT_DEMO_MODEL, billable=False, scripted=True, shown="DEMO")
PERSON = ProviderKind("human", "human", billable=False, person=True, header="a person: typed answers, no model")

_KINDS: dict[str, ProviderKind] = {k.name: k for k in (OPENAI, DEMO, PERSON, RESPONSES)}
_BUILT_IN = frozenset(_KINDS)


def register_kind(kind: ProviderKind) -> None:
    """Make a provider's kind known by its name (the registry does so for every provider it adds)."""
    _KINDS[kind.name] = kind


@cache
def _plugin_names() -> tuple[str, ...]:
    """The names third-party packages add, read from installed metadata once (nothing is imported)."""
    from importlib.metadata import entry_points  # only for a name not built in (start-up time)

    return tuple(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


def load_plugin(name: str) -> Any | None:
    """The object the entry point `name` loads (a provider spec), or None when none is installed."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP, name=name):
        spec = ep.load()
        kind = getattr(spec, "kind", None)
        if isinstance(kind, ProviderKind):
            register_kind(kind)
        return spec
    return None


def provider_names() -> list[str]:
    """Every provider a configuration may name: the built-in ones, then the installed plugins'."""
    return [*_KINDS, *(n for n in _plugin_names() if n not in _KINDS)]


def is_known(name: str) -> bool:
    """Whether a configuration may name `name`; the plugins' metadata is read only for a name
    that is not built in (start-up time)."""
    return name in _KINDS or name in _plugin_names()


def kind_of(name: str) -> ProviderKind:
    """The kind of the provider called `name`. A name a log recorded whose package is not
    installed here is shown as it is, billed, neither a person nor scripted."""
    kind = _KINDS.get(name)
    if kind is None and name in _plugin_names():
        load_plugin(name)
        kind = _KINDS.get(name)
    return kind or ProviderKind(name, "")


class ModelProviders:
    """The `--provider` choices: a provider that runs a model (a person's seat is asked for with
    `--human`). Help lists the built-in ones; an installed plugin's name is accepted too, its
    metadata read only when such a name is given (start-up time)."""

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(n for n, k in _KINDS.items() if not k.person and n in _BUILT_IN))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and is_known(name) and not kind_of(name).person


def any_scripted(names: Iterable[str]) -> bool:
    """Whether any of these providers writes scripted answers (what it made says DEMO)."""
    return any(kind_of(n).scripted for n in names)


def listed(label: str) -> list[str]:
    """The provider names in a debate's `provider_label` (`demo, openai`)."""
    return [n for n in label.split(", ") if n]


def is_person(name: str | None) -> bool:
    """Whether the provider called `name` is a seat a person takes (None: not set, a model's)."""
    return name is not None and kind_of(name).person

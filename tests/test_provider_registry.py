"""Providers are added by name through the registry: a package installed beside moot declares one
in the `moot.providers` entry-point group, and a debate runs on it like on a built-in one, shown
and billed as its kind says (nothing outside the providers asks for a name)."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from moot.core.errors import ExitCode
from moot.core.models import provider_kinds
from moot.core.providers import registry
from tests.conftest import cli, read_jsonl

PLUGIN = textwrap.dedent('''
    """A provider from another package: it writes as the offline demo does, under its own name."""
    from moot.core.models.provider_kinds import ProviderKind
    from moot.core.providers.demo import DemoProvider
    from moot.core.providers.registry import ProviderSpec

    KIND = ProviderKind("scribe", "scribe-small", billable=False, header="a scribe from a plugin")


    class Scribe(DemoProvider):
        name = KIND.name
        kind = KIND
        label = "scribe (writes offline)"


    SPEC = ProviderSpec(KIND, lambda context, base_url: Scribe(delay_s=0))
''')


@pytest.fixture
def scribe_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A distribution `moot-scribe` on the path whose entry point adds the provider `scribe`."""
    site = tmp_path / "site"
    dist = site / "moot_scribe-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: moot-scribe\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[moot.providers]\nscribe = moot_scribe:SPEC\n")
    (site / "moot_scribe.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    provider_kinds._plugin_names.cache_clear()
    yield
    provider_kinds._plugin_names.cache_clear()
    provider_kinds._KINDS.pop("scribe", None)
    registry._SPECS.pop("scribe", None)


def test_a_provider_from_an_entry_point_runs_a_debate(tmp_path: Path, scribe_installed: None) -> None:
    state_dir = tmp_path / "debates"
    r = cli("run", "How should a small library keep its changelog honest?", "--provider", "scribe",
            "--headless", "-r", "1", "--state-dir", str(state_dir))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    (folder,) = [p for p in state_dir.iterdir() if p.is_dir()]
    events = read_jsonl(folder / "events.jsonl")
    started = events[0]
    assert started["type"] == "debate_started"
    assert {a["provider"] for a in [*started["agents"], started["judge"]]} == {"scribe"}
    assert {a["model"] for a in started["agents"]} == {"scribe-small"}  # the kind's default model
    calls = [e for e in events if e["type"] == "contribution_added"]
    assert calls and all(e["contribution"]["metadata"]["cost_usd"] == 0 for e in calls)  # not billable
    shown = cli("list", "--state-dir", str(state_dir))
    assert shown.returncode == 0 and "scribe" in shown.stdout and "DEMO" not in shown.stdout


def test_a_config_naming_a_provider_nobody_installed_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "moot.toml"
    config.write_text('[[agents]]\nid = "ada"\nprovider = "scribe"\n')
    r = cli("run", "How should a small library keep its changelog honest?", "-c", str(config),
            "--headless", "-r", "1", "--state-dir", str(tmp_path / "debates"))
    assert r.returncode == ExitCode.CONFIG
    assert r.stderr.strip().splitlines() == [
        f"moot: {config}: agents[0].provider: Input should be 'openai', 'demo', 'human' or 'openai-responses' (got 'scribe')"]


def test_built_in_kinds_say_what_they_can_do() -> None:
    demo, person, openai = (provider_kinds.kind_of(n) for n in ("demo", "human", "openai"))
    assert (demo.billable, demo.scripted, demo.show()) == (False, True, "DEMO")
    assert (person.billable, person.person, person.where("human")) == (False, True,
                                                                       "a person: typed answers, no model")
    assert (openai.billable, openai.per_base_url, openai.where("gpt-4o-mini")) == (True, True, "openai:gpt-4o-mini")
    assert list(provider_kinds.ModelProviders()) == ["demo", "openai", "openai-responses"]
    made = asyncio.run(_demo_kind())
    assert made is demo


async def _demo_kind() -> provider_kinds.ProviderKind:
    spec = registry.spec_of("demo")
    provider = spec.make(registry.ProviderContext(demo_delay=0), None)
    try:
        return provider.kind
    finally:
        await provider.aclose()

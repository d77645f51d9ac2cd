"""`moot bench --executor ray` against a local Ray instance the test starts: the same answers
as the local executor, every debate in the state dir. Skipped where Ray is not installed (it is
the `moot[ray]` extra, not part of `.[test]`: see the README's Benchmarks section)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from moot.core.storage.state_dir import StateDir
from tests.conftest import cli
from tests.loopback import LoopbackServer, arithmetic_reply

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'moot[ray]')")
pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


def _answers(path: Path) -> dict[tuple[str, str], tuple[object, ...]]:
    rows = json.loads(path.read_text())["results"]
    return {(r["id"], r["protocol"]): (r["answer"], r["correct"], json.dumps(r["agent_answers"]), r["calls"],
                                       r["prompt_tokens"], r["completion_tokens"], r["debate_id"]) for r in rows}


def test_ray_and_local_give_the_same_answers(tmp_path: Path, local_ray: None) -> None:
    with LoopbackServer(arithmetic_reply(0.6)) as srv:
        common = ["arithmetic:5:terms=3", "--protocols", "single,vote,simultaneous", "--provider", "openai",
                  "--base-url", srv.base_url, "--model", "loop", "--headless"]
        r = cli("bench", *common, "--state-dir", str(tmp_path / "local"), "-o", str(tmp_path / "local.json"))
        assert r.returncode == 0, r.stderr
        local_calls = srv.calls
        r = cli("bench", *common, "--executor", "ray", "--concurrency", "3", "--state-dir", str(tmp_path / "ray"),
                "-o", str(tmp_path / "ray.json"))
        assert r.returncode == 0, r.stderr
        assert srv.calls == 2 * local_calls  # the Ray workers made the same requests
        doc = json.loads((tmp_path / "ray.json").read_text())
        assert doc["executor"] == "ray"
        assert _answers(tmp_path / "ray.json") == _answers(tmp_path / "local.json")
        assert len(StateDir(tmp_path / "ray").debates()) == 15  # each worker wrote its debate there
        before = srv.calls
        r = cli("bench", *common, "--executor", "ray", "--state-dir", str(tmp_path / "ray"))
        assert r.returncode == 0 and srv.calls == before  # a rerun on Ray sends no request either

"""`moot bench --executor ray` against a local Ray instance the test starts: the same answers
as the local executor, every debate in the state dir. Skipped where Ray is not installed (it is
the `moot[ray]` extra, not part of `.[test]`: see the README's Benchmarks section)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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


RAYLET_ERROR = ("\x1b[31mA worker died or was killed while executing a task by an unexpected system error; "
                "the node 10.0.3.17 was marked dead after missing its heartbeats.\x1b[0m")


def test_what_ray_reports_to_the_driver_stays_off_the_results(tmp_path: Path, local_ray: None) -> None:
    # Ray hands the driver what its raylets report (a node marked dead, a worker killed), as the
    # raylet of a dying cluster does; it reaches the bench while its questions run.
    from ray._private.utils import publish_error_to_driver
    from ray._private.worker import global_worker

    base = arithmetic_reply(0.6)
    published = threading.Event()

    def reply(body: dict[str, Any], n: int) -> str:
        if not published.is_set():
            published.set()
            publish_error_to_driver("worker_died", RAYLET_ERROR, global_worker.gcs_client)
            time.sleep(3)  # the driver's listener prints it while the bench still runs
        return base(body, n)

    with LoopbackServer(reply) as srv:
        r = cli("bench", "arithmetic:2:terms=3", "--protocols", "single", "--provider", "openai", "--base-url",
                srv.base_url, "--model", "loop", "--headless", "--executor", "ray", "--state-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert published.is_set() and "marked dead" not in r.stdout and "\x1b" not in r.stdout + r.stderr
    assert "ray: A worker died or was killed while executing a task by an unexpected system error; the node " \
           "10.0.3.17 was marked dead after missing its heartbeats." in r.stderr.splitlines()


RAY_ENV = {"RAY_AUTH_MODE": "disabled"}  # a token another Ray left in ~/.ray would be asked for otherwise


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(check: Callable[[], bool], what: str, limit_s: float = 90) -> None:
    deadline = time.monotonic() + limit_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen")
        time.sleep(0.2)


def _answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.mark.slow
def test_a_head_that_dies_mid_bench_ends_it_with_one_line_and_nothing_on_stdout(tmp_path: Path) -> None:
    # A head of its own, in a process group of its own (`--block` keeps its processes under it),
    # so that killing it touches no other Ray on this machine.
    port = _free_port()
    ray_cli = str(Path(sys.executable).parent / "ray")
    short = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # Ray's socket paths must stay under 108 bytes
    log = (tmp_path / "head.log").open("w")
    head = subprocess.Popen([ray_cli, "start", "--head", "--block", f"--port={port}", "--num-cpus=2",
                             "--include-dashboard=false", "--node-ip-address=127.0.0.1", f"--temp-dir={short}"],
                            stdout=log, stderr=log, start_new_session=True, env={**os.environ, **RAY_ENV})
    try:
        _wait_for(lambda: _answers(port), "the Ray head's start")
        with LoopbackServer(arithmetic_reply(0.6), delay=0.5) as srv:
            bench = subprocess.Popen(
                [sys.executable, "-m", "moot", "bench", "arithmetic:8:terms=3", "--protocols", "single,vote",
                 "--provider", "openai", "--base-url", srv.base_url, "--model", "loop", "--headless",
                 "--executor", "ray", "--concurrency", "2", "--state-dir", str(tmp_path / "debates")],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env={**os.environ, **RAY_ENV, "RAY_ADDRESS": f"127.0.0.1:{port}"})
            _wait_for(lambda: srv.calls > 0 or bench.poll() is not None, "the bench's first request")
            os.killpg(head.pid, signal.SIGKILL)
            out, err = bench.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)
        head.wait()
        log.close()
        shutil.rmtree(short, ignore_errors=True)
    assert bench.returncode == 3, err
    assert re.fullmatch(rf"moot: the Ray head at [0-9.]+:{port} stopped answering; the finished questions are "
                        "saved: run the same command again to continue", err.splitlines()[-1]), err
    assert out == "" and "\x1b" not in err  # no results table, and nothing of Ray's on stdout

"""A person's seat through the real CLI: `moot run --human NAME --headless` reading the answers from
stdin, a kill while the person types and `moot resume` finishing from the draft, `moot ctl ID say`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import moot, read_jsonl

PROPOSAL = ("Start with one Postgres table keyed by a base62 counter.\n"
            "A read-through cache comes later, once redirects pass fifty milliseconds at the p99.\n")
CRITIQUE = "Five replicas and an outbox are a lot to run before the first user arrives.\n"
REFINEMENT = "I keep the single table, and I add a tested restore of the nightly backup.\n"


def _env(tmp_path: Path) -> dict[str, str]:
    return {"MOOT_CONFIG_DIR": str(tmp_path / "cfg")}


def _contributions(state_dir: Path, agent: str) -> list[dict]:
    [folder] = [p for p in state_dir.iterdir() if not p.name.startswith(".")]
    return [e["contribution"] for e in read_jsonl(folder / "events.jsonl")
            if e["type"] == "contribution_added" and e["contribution"]["agent_id"] == agent]


def _first_draft(state_dir: Path) -> Path:
    """Ada's proposal draft, once the line typed on stdin is saved in it (up to 20 s)."""
    drafts: list[Path] = []
    for _ in range(400):
        drafts = list(state_dir.glob("*/drafts/ada@r1-proposal.md"))
        if drafts and drafts[0].read_text():
            return drafts[0]
        time.sleep(0.05)
    raise AssertionError("the typed line was never saved")


def test_headless_reads_each_turn_from_stdin_until_a_dot(tmp_path: Path) -> None:
    answers = f"{PROPOSAL}.\n{CRITIQUE}.\n{CRITIQUE}.\n{REFINEMENT}"  # the last one ends at end of input
    r = moot("run", "Design a URL shortener", "--provider", "demo", "--human", "Ada", "-a", "architect,kiss",
             "-r", "1", "--headless", "--state-dir", str(tmp_path / "d"), input_text=answers, env=_env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "━━ your turn, Ada: proposal, round 1 ━━" in r.stderr
    assert "━━ your turn, Ada: critique of kiss's proposal, round 1 ━━" in r.stderr
    assert "The proposal, by **Kiss**" in r.stderr  # the view itself is shown (its target quoted last)
    assert "✎ ada answered (refinement, round 1) on stdin" in r.stderr
    assert r.stdout.startswith("## Recommended solution")
    mine = _contributions(tmp_path / "d", "ada")
    assert [c["content"] for c in mine] == [PROPOSAL.strip(), CRITIQUE.strip(), CRITIQUE.strip(), REFINEMENT.strip()]


@pytest.mark.slow
def test_killed_while_typing_resumes_with_what_was_typed(tmp_path: Path) -> None:
    state_dir = tmp_path / "d"
    env = {**os.environ, **_env(tmp_path), "PYTHONUNBUFFERED": "1"}
    env.pop("OPENAI_API_KEY", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "moot", "run", "Design a URL shortener", "--provider", "demo", "--human", "Ada",
         "-a", "architect,kiss", "-r", "1", "--headless", "--state-dir", str(state_dir)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stdin is not None
    try:
        proc.stdin.write(b"Start with one Postgres table keyed by a base62 counter.\n")
        proc.stdin.flush()
        draft = _first_draft(state_dir)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    debate_id = draft.parent.parent.name
    # The rest of the proposal, then the other turns.
    rest = (f"A read-through cache comes later, once redirects pass fifty milliseconds at the p99.\n.\n"
            f"{CRITIQUE}.\n{CRITIQUE}.\n{REFINEMENT}.\n")
    r = moot("resume", debate_id, "--headless", "--state-dir", str(state_dir), input_text=rest, env=_env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "── your saved draft (kept; type on to add to it) ──\nStart with one Postgres table" in r.stderr
    mine = _contributions(state_dir, "ada")
    assert mine[0]["content"] == PROPOSAL.strip()
    assert not list((state_dir / debate_id / "drafts").iterdir())  # recorded: the drafts are gone


KEY = "lb-7Hq2Wm9xPz4Rk8VtC3nJ"
"""A configured key (not shaped like `sk-…`: only knowing it as the configured key masks it)."""


def _files_holding(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def test_a_key_pasted_into_an_answer_reaches_no_file(tmp_path: Path) -> None:
    pasted = f"Start with one Postgres table; the staging server logs in with {KEY} for now.\n"
    answers = f"{pasted}.\n{CRITIQUE}.\n{CRITIQUE}.\n{REFINEMENT}"
    r = moot("run", "Design a URL shortener", "--provider", "demo", "--human", "Ada", "-a", "architect,kiss",
             "-r", "1", "--headless", "--state-dir", str(tmp_path / "d"), input_text=answers,
             env={**_env(tmp_path), "OPENAI_API_KEY": KEY})
    assert r.returncode == 0, r.stderr
    assert _files_holding(tmp_path / "d", KEY) == []
    assert KEY not in r.stdout + r.stderr
    assert "logs in with sk-*** for now" in _contributions(tmp_path / "d", "ada")[0]["content"]


@pytest.mark.slow
def test_a_key_typed_on_stdin_is_masked_in_the_draft(tmp_path: Path) -> None:
    state_dir = tmp_path / "d"
    env = {**os.environ, **_env(tmp_path), "PYTHONUNBUFFERED": "1", "OPENAI_API_KEY": KEY}
    proc = subprocess.Popen(
        [sys.executable, "-m", "moot", "run", "Design a URL shortener", "--provider", "demo", "--human", "Ada",
         "-a", "architect,kiss", "-r", "1", "--headless", "--state-dir", str(state_dir)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None
    try:
        proc.stdin.write(f"The staging server logs in with {KEY} for now.\n".encode())
        proc.stdin.flush()
        assert _first_draft(state_dir).read_text() == "The staging server logs in with sk-*** for now.\n"
    finally:
        proc.kill()
        proc.wait()
    assert _files_holding(state_dir, KEY) == []


@pytest.mark.slow
def test_ctl_say_answers_a_debate_running_elsewhere(tmp_path: Path) -> None:
    state_dir = tmp_path / "d"
    env = {**os.environ, **_env(tmp_path)}
    env.pop("OPENAI_API_KEY", None)
    # In the background with no stdin to read: the turns wait for `moot ctl say`.
    proc = subprocess.Popen(
        [sys.executable, "-m", "moot", "run", "Design a URL shortener", "--provider", "demo", "--human", "Ada",
         "--human", "Grace", "--protocol", "conversation", "--turns", "5", "-a", "architect,kiss", "--headless",
         "--state-dir", str(state_dir)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        folder = None
        for _ in range(600):
            found = [p for p in state_dir.iterdir() if not p.name.startswith(".")] if state_dir.exists() else []
            if found and (found[0] / "events.jsonl").exists() and any(
                    json.loads(line)["type"] == "call_started" and json.loads(line)["view"]["agent_id"] == "ada"
                    for line in (found[0] / "events.jsonl").read_text().splitlines()):
                folder = found[0]
                break
            time.sleep(0.05)
        assert folder is not None, "Ada's turn never opened"
        sd = ["--state-dir", str(state_dir)]
        who = moot("ctl", folder.name, "say", "Anything at all", *sd, env=_env(tmp_path))
        assert (who.returncode, who.stderr.strip()) == (2, f"moot: say as whom? seats: ada, grace (moot ctl "
                                                          f"{folder.name} --as NAME say …)")
        early = moot("ctl", folder.name, "--as", "grace", "say", "Me first", *sd, env=_env(tmp_path))
        assert early.returncode == 2 and "no turn of grace is waiting for an answer (waiting now: ada)" in early.stderr
        said = moot("ctl", folder.name, "--as", "ada", "say", "What traffic do we expect in year one?", *sd,
                    env=_env(tmp_path))
        assert said.returncode == 0, said.stderr
        assert "✎ ada answered (message, turn 3) with moot ctl say: 38 chars" in said.stdout
        for _ in range(600):
            if any(e["type"] == "call_started" and e["view"]["agent_id"] == "grace"
                   for e in read_jsonl(folder / "events.jsonl")):
                break
            time.sleep(0.05)
        piped = subprocess.run([sys.executable, "-m", "moot", "ctl", folder.name, "--as", "Grace", "say", "-", *sd],
                               input="Year one is small: a few thousand links a day.\n", text=True,
                               capture_output=True, env=env, timeout=60)
        assert piped.returncode == 0, piped.stderr
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "stdin has ended: answer with `moot ctl" in err
    messages = {c["agent_id"]: c["content"] for c in _contributions(state_dir, "ada") + _contributions(state_dir, "grace")}
    assert messages == {"ada": "What traffic do we expect in year one?",
                        "grace": "Year one is small: a few thousand links a day."}


def test_the_readmes_headless_seat_example_runs_as_written(tmp_path: Path) -> None:
    from tests.conftest import manual

    readme = manual()
    block = readme.split("# Take a seat in the debate", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    piped = block[block.index("printf"):].strip()
    env = {**os.environ, **_env(tmp_path), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("OPENAI_API_KEY", None)
    r = subprocess.run(["bash", "-c", piped], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("✎ ada answered") == 4 and r.stdout.startswith("## Recommended solution")
    assert [c["content"] for c in _contributions(tmp_path / "debates", "ada")] == [
        "One Postgres table and a base62 counter.", "Too many moving parts.", "Fine as a start.", "I keep the table."]


def _refused(tmp_path: Path, *args: str) -> str:
    """`moot run` with `args` refused as bad input: one line, exit 2, no debate folder."""
    state_dir = tmp_path / "d"
    r = moot("run", "Design a URL shortener", "--provider", "demo", "-a", "architect,kiss", "--headless",
             "--state-dir", str(state_dir), *args, input_text="", env=_env(tmp_path), timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("moot: "), r.stderr
    assert "\x1b" not in r.stderr
    assert not state_dir.exists() or not [p for p in state_dir.iterdir() if not p.name.startswith(".")]
    return lines[0]


def test_the_single_protocol_refuses_a_seat_for_a_person(tmp_path: Path) -> None:
    """`single` runs one agent alone: a person asked for a seat would be dropped silently (the
    debate ran without them), so the flags are refused together."""
    line = _refused(tmp_path, "--protocol", "single", "--human", "Ada")
    assert "--protocol single" in line and "--human" in line


@pytest.mark.parametrize(("name", "says"), [
    ("", "a name needs a letter or a digit"),
    ("  ", "a name needs a letter or a digit"),
    ("Kiss", "'kiss' is already an agent"),
    ("Architect", "'architect' is already an agent"),
    ("Security", "role"),
    ("Judge", "judge"),
    ("Ada\x1b]0;pwned\x07", "control"),
    ("Ada\u202eecnalevol", "control"),
], ids=["empty", "blank", "agent", "agent-case", "role", "judge", "escape", "bidi"])
def test_a_bad_human_name_is_one_line_and_exit_2(tmp_path: Path, name: str, says: str) -> None:
    line = _refused(tmp_path, "--human", name)
    assert says in line, line


def test_the_same_person_twice_is_one_line_and_exit_2(tmp_path: Path) -> None:
    line = _refused(tmp_path, "--human", "Ada", "--human", "ada")
    assert "'ada'" in line and "twice" in line, line

"""Plain mode (`moot run --plain`, `MOOT_PLAIN=1`), driven as a person with a screen reader
would: the real CLI in a subprocess, its output read line by line, commands typed on stdin."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

from moot.core.safety.sanitize import UNSAFE
from moot.core.storage.state_dir import StateDir
from tests.conftest import moot, read_jsonl

SYMBOLS = "✎⇣─★▶✓✗⚠⏸■↻≈⚙✉"
"""What the headless view prints and a screen reader spells out: plain mode uses words."""


def only_debate(sd: Path):  # type: ignore[no-untyped-def]
    (folder,) = StateDir(sd).debates()
    return folder


def test_every_contribution_is_read_once_and_the_solution_last(tmp_path: Path) -> None:
    cfg = tmp_path / "moot.json"
    cfg.write_text(json.dumps({"debate": {"summarization": {"threshold": 500}}}))
    sd = tmp_path / "debates"
    r = moot("run", "Design a URL shortener", "--plain", "--provider", "demo", "-r", "2", "-c", str(cfg),
             "--state-dir", str(sd))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert UNSAFE.findall(out) == [] and not any(ch in out for ch in SYMBOLS)
    state = only_debate(sd).load()
    names = {a.id: a.name for a in state.agents}
    for c in state.all_contributions():
        if c.carried_from:
            label = f"{names[c.agent_id]}, {c.type}, round {c.round}: the same as its last refinement"
            assert out.count(label) == 1, label
            continue
        target = f" of {names[c.target_agent_id]}'s proposal" if c.target_agent_id else ""
        label = f"{names[c.agent_id]}, {c.type}{target}, round {c.round}:\n"
        assert out.count(label) == 1, label
        assert out.count(c.content.strip()) == 1, c.id  # the whole text, once
    summaries = [s for rnd in state.rounds for s in rnd.summaries.values()]
    assert summaries
    for s in summaries:
        assert f"Summary of {names[s.agent_id]}'s context, because " in out
    assert out.count("Summary of ") == len(summaries) + len(
        [s for rnd in state.rounds for s in rnd.replaced_summaries]) + (1 if state.judge_summary else 0)
    assert "Round 1 of 2." in out and "Round 2 of 2." in out
    # The final solution last: after every contribution, then where it is saved.
    assert state.final_solution is not None
    last = max(out.index(c.content.strip()) for c in state.all_contributions() if not c.carried_from)
    start = out.index("\nFinal solution.\n")
    assert start > last and out.index(state.final_solution.description.strip()[:80]) > start
    assert out.rstrip().endswith(f"The debate is saved in {sd / state.id}.")
    assert r.stderr.strip() == ""


def test_moot_plain_in_the_environment(tmp_path: Path) -> None:
    sd = tmp_path / "debates"
    r = moot("run", "Design a URL shortener", "--provider", "demo", "-r", "1", "--state-dir", str(sd),
             env={"MOOT_PLAIN": "1"})
    assert r.returncode == 0 and r.stdout.startswith("Debate ") and "Final solution." in r.stdout
    off = moot("run", "Design a URL shortener", "--provider", "demo", "-r", "1", "--state-dir", str(sd),
               env={"MOOT_PLAIN": "0"})
    assert off.returncode == 0 and "Final solution." not in off.stdout and "✎" in off.stderr


class Reader:
    """A subprocess's stdout, line by line, with waiting for a line."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def until(self, start: str, timeout: float = 60) -> str:
        """Read until a line starting with `start`; it is returned."""
        end = time.monotonic() + timeout
        while True:
            line = self._queue.get(timeout=max(0.1, end - time.monotonic()))
            if line is None:
                raise AssertionError(f"output ended before {start!r}:\n" + "\n".join(self.lines[-30:]))
            self.lines.append(line)
            if line.startswith(start):
                return line

    def type(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()


def plain_run(tmp_path: Path, *args: str) -> Reader:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY")}
    proc = subprocess.Popen([sys.executable, "-m", "moot", "run", "Design a URL shortener", "--plain", "--provider",
                             "demo", "--state-dir", str(tmp_path / "debates"), *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=tmp_path)
    return Reader(proc)


def test_slash_commands_typed_on_stdin_steer_the_debate(tmp_path: Path) -> None:
    run = plain_run(tmp_path, "-r", "2", "--demo-delay", "0.02")
    try:
        run.until("Round 2 of 2.")  # the agents have a history to summarize from here on
        run.type("/pause")
        run.until("Paused: no call is running.")
        paused_at = len(run.lines)
        run.type("/bogus")
        assert run.until("Unknown command /bogus")
        run.type("pause")
        run.until("Commands start with a slash")
        run.type("/inject Assume a team of two for three months")
        run.until("Moderator note, which every agent sees from its next call: Assume a team of two")
        run.type("/summarize kiss keep the costs")
        run.until("Summary requested for Kiss, made at its next call, focusing on: keep the costs.")
        run.type("/pin round 1 kiss")
        run.until("Pinned round 1 refinement by kiss: kept verbatim in every later view.")
        run.type("/unpin round 9 kiss")
        run.until("Not done: kiss has no refinement or proposal or answer in round 9.")
        run.type("/summarize nobody")
        run.until("No agent nobody. Agents: architect, performance, kiss, or all.")
        run.type("/help")
        run.until("/quit — ")
        run.type("/resume")
        run.until("Resumed.")
        # Nothing was read out between the pause taking effect and the resume but the answers to the commands.
        assert not any(line.startswith("End of ") for line in run.lines[paused_at:]), run.lines[paused_at - 3:]
        run.until("End of the final solution.")
        assert run.proc.wait(timeout=60) == 0
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
    events = read_jsonl(only_debate(tmp_path / "debates").events_path)
    kinds = [(e["type"], e.get("action")) for e in events if e["type"] in ("control", "note_injected")]
    assert ("control", "pause") in kinds and ("control", "resume") in kinds and ("note_injected", None) in kinds
    assert [e["pin"]["label"] for e in events if e["type"] == "pin_changed"] == ["round 1 refinement by kiss"]
    asked = [e for e in events if e["type"] == "summary_requested"]
    assert [(e["agent_id"], e["focus"]) for e in asked] == [("kiss", "keep the costs")]
    made = [e for e in events if e["type"] == "summary_added" and e["summary"]["agent_id"] == "kiss"]
    assert any(e["summary"]["trigger"] == "manual" for e in made)


def test_quit_stops_and_saves_a_resumable_debate(tmp_path: Path) -> None:
    run = plain_run(tmp_path, "-r", "3", "--demo-delay", "0.02")
    try:
        run.until("End of ")
        run.type("/quit")
        run.until("Quitting: calls still running get 3 seconds")
        code = run.proc.wait(timeout=60)
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
    assert run.proc.stderr is not None
    err = run.proc.stderr.read()
    folder = only_debate(tmp_path / "debates")
    state = folder.load()
    assert state.status in ("stopped", "interrupted") and code in (0, 130)
    assert f"moot resume {state.id}" in err and "Traceback" not in err
    assert len(state.rounds) < 3
    again = moot("resume", state.id, "--state-dir", str(tmp_path / "debates"), env={"MOOT_PLAIN": "1"})
    assert again.returncode == 0, again.stderr
    assert f"Debate {state.id} resumed at round " in again.stdout
    assert again.stdout.rstrip().endswith(f"The debate is saved in {folder.path}.")


def test_clarifying_questions_are_read_out_and_answered_from_stdin(tmp_path: Path) -> None:
    """Answers piped ahead of the questions answer them in order; the end of input answers none."""
    sd = tmp_path / "debates"
    r = moot("run", "Design a URL shortener", "--plain", "--clarify", "--provider", "demo", "-r", "1",
             "--state-dir", str(sd), input_text="About ten thousand links a day\n\nA team of two\n")
    assert r.returncode == 0, r.stderr
    assert "clarifying questions. Type each answer and press Enter" in r.stdout
    assert "Question 1 of " in r.stdout and "Commands start with a slash" not in r.stdout
    answers = [c.answer for c in only_debate(sd).load().clarifications]
    assert answers[:3] == ["About ten thousand links a day", "", "A team of two"] and set(answers[3:]) <= {""}


def test_a_persons_turns_are_read_out_and_typed_on_stdin(tmp_path: Path) -> None:
    """With `--human`, the person's view is read out in words, each answer is the lines typed up
    to a line holding only ".", typed ahead or not; the other agents answer them."""
    sd = tmp_path / "debates"
    answers = ["Keep one Postgres table of links and a small cache in front of it, since the load is modest.",
               "The architect adds a queue before we know we need one.",
               "I keep the single table and add a daily backup of it."]
    r = moot("run", "Design a URL shortener", "--plain", "--human", "Ana", "-a", "architect", "-r", "1",
             "--provider", "demo", "--state-dir", str(sd), input_text="".join(f"{a}\n.\n" for a in answers))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "Your turn, Ana: proposal, round 1 (what you are asked: " in out and "Message 2, user:" in out
    assert "━━" not in out and "──" not in out and "Commands start with a slash" not in out
    state = only_debate(sd).load()
    ana = {c.type: c.content.strip() for c in state.all_contributions() if c.agent_id != "architect"}
    assert [ana["proposal"], ana["critique"], ana["refinement"]] == answers
    assert out.count("Ana answered on the keyboard") == 3
    assert out.index("Final solution.") > out.index("End of Ana's refinement.")

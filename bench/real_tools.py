"""What a real model does with moot's tools: one short grounded debate against a running
OpenAI-compatible server, then what its event log says the model did.

    python bench/real_tools.py --base-url http://127.0.0.1:8182/v1 --model qwen
    python bench/real_tools.py --base-url http://127.0.0.1:8181/v1 --model smollm2

The references are a small project written into a temporary folder (`notes/plan.md`,
`src/journal.py`). Prints, from the log: how each endpoint was served (tools, or the retrieval
tier), every tool call (sent as `tool_calls` or written as text), tool errors, how many calls
ended with an answer, and whether the answers name something only the files say. The server
is not started here (see bench/README.md for the llama-server command lines).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLAN = """# Notes service plan

## Storage

Notes live in SQLite, one table per tenant. Every write goes to the journal first
(journal.wal), then to the table; the compactor folds the journal every 15 minutes.

## Limits

A tenant may keep at most 50,000 notes; a note is at most 64 KB.
"""
JOURNAL = '''"""The journal: append first, fold later."""


def append(journal_path, tenant, note):
    """Append one note to journal.wal before the table sees it."""
    with open(journal_path, "a") as f:
        f.write(f"{tenant}\\t{note}\\n")


def compact(journal_path, db):
    """Fold the journal into the tenant tables (every 15 minutes)."""
    return db
'''
FACTS = ("journal.wal", "50,000", "15 minutes", "64 KB")
"""Things only the reference files say: an answer that names one read them (or their passages)."""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--agents", default="architect")
    ap.add_argument("--rounds", default="1")
    ap.add_argument("--config", default=str(Path(__file__).with_name("real_model.toml")))
    ap.add_argument("--max-tokens", default="300", help="each reply's limit (reserve_output_tokens)")
    ap.add_argument("--problem", default="Design the storage layer of the notes service in the plan; name its limits.")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="moot-real-tools-"))
    refs = work / "project"
    (refs / "notes").mkdir(parents=True)
    (refs / "src").mkdir()
    (refs / "notes" / "plan.md").write_text(PLAN)
    (refs / "src" / "journal.py").write_text(JOURNAL)
    config = work / "moot.toml"
    base = Path(args.config).read_text() if Path(args.config).is_file() else ""
    config.write_text(base.replace("reserve_output_tokens = 400", f"reserve_output_tokens = {args.max_tokens}")
                      + "\n[tools]\nmax_calls = 4\nresult_tokens = 600\n")
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "moot", "run", args.problem, "--ref", str(refs), "--base-url", args.base_url,
         "--model", args.model, "-a", args.agents,
         "-r", args.rounds, "--headless", "-c", str(config), "--state-dir", str(work / "debates")],
        capture_output=True, text=True, cwd=work)
    wall = time.monotonic() - started
    folder = next((p for p in (work / "debates").iterdir() if p.is_dir() and not p.name.startswith(".")), None)
    if folder is None:
        print(run.stderr[-2000:])
        return run.returncode or 1
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines() if line.strip()]
    calls = [e for e in events if e["type"] == "tool_called"]
    results = [e for e in events if e["type"] == "tool_returned"]
    views = {e["view"]["call_id"]: e["view"] for e in events if e["type"] == "call_started"}
    with_tools = sum(1 for v in views.values() if v.get("tools"))
    # A call with tools carries its tools note under the same key: only a call without tools had passages.
    with_passages = sum(1 for v in views.values() if "references" in v.get("inline", {}) and not v.get("tools"))
    refused = [e["error"] for e in events if e["type"] == "call_failed" and "tools" in e["error"]]
    answers = [e["contribution"] for e in events if e["type"] == "contribution_added"]
    grounded = [c for c in answers if any(f in c["content"] for f in FACTS)]
    print(f"exit {run.returncode} in {wall:.0f}s · {len(views)} calls: {with_tools} offered tools, "
          f"{with_passages} had the retrieval tier · tools refused: {len(refused)}")
    for e in calls:
        how = "text" if e["tool"].get("from_text") else "tool_calls"
        print(f"  call ({how}) {e['agent_id']}: {e['tool']['name']}({e['tool']['arguments'][:100]})")
    for e in results:
        print(f"  {'ok ' if e['ok'] else 'ERR'} {e['name']}: {e['summary'][:100]}")
    print(f"answers: {len(answers)}; naming a fact only the files hold ({', '.join(FACTS)}): {len(grounded)}")
    for c in answers:
        print(f"  {c['agent_id']} {c['type']}: {' '.join(c['content'].split())[:160]!r}")
    print(f"debate folder: {folder}")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())

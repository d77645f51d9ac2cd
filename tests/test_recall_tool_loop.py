"""`recall(query)` in the tool loop, through the CLI against the loopback server.

A grounded conversation (`--ref`, tools on) long enough that a rolling summary stands in for
its early turns. With the recall tier off, nothing brings turn 2's planted fact back on its
own; late in the debate the model calls `recall` with the fact's name, and the tool's answer —
in the next request of the same call — must hold turn 2's message verbatim, labelled with its
turn. Early calls, whose view still holds every turn, are not offered `recall`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import LoopbackServer, cli
from tests.grounding_helpers import make_refs, tool_messages
from tests.prose import FactScript, planted, turn_of
from tests.test_recall import KEY, PLANTS, run, write_config

ASK_AT = 25
"""The turn whose speaker calls `recall`."""


def recall_at_turn(body: dict[str, Any], n: int) -> list[dict[str, Any]] | None:
    """The loopback's tool script: the first request of turn `ASK_AT` calls `recall`; every other
    request (and that call's next one, which holds the result) is answered with text."""
    if turn_of(body) == ASK_AT and not tool_messages(body):
        return [{"name": "recall", "arguments": json.dumps({"query": f"the {planted(0).name} quota shard lease"})}]
    return None


def offered(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools") or []}


def test_a_models_recall_call_gets_the_debates_earlier_turn_verbatim(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    refs = make_refs(tmp_path)
    config = write_config(tmp_path, turns=ASK_AT + 1, extra="recall = false")
    with LoopbackServer(reply=FactScript(PLANTS, {}, chars=500), tool_calls=recall_at_turn) as srv:
        _, folder = run(srv, tmp_path, config, "--ref", str(refs))
        requests = list(srv.requests)
    state = folder.load()
    plant = next(c for c in state.all_contributions() if c.type == "message" and c.round == 2)
    assert planted(0).sentence in plant.content

    # Early turns hold every message: the reference tools only. Late ones, under a summary: recall too.
    first = next(b for b in requests if turn_of(b) == 2)
    assert offered(first) == {"list_files", "read_file", "search"}
    asked = [b for b in requests if turn_of(b) == ASK_AT]
    assert len(asked) == 2 and offered(asked[0]) == {"list_files", "read_file", "search", "recall"}
    assert "recall finds this debate's earlier messages" in "\n".join(m["content"] for m in asked[0]["messages"])
    assert plant.content.strip() not in "\n".join(m["content"] or "" for m in asked[0]["messages"])

    # The tool's answer, in the call's next request: turn 2's message verbatim, with its turn.
    (result,) = tool_messages(asked[1])
    assert plant.content.strip() in result["content"]
    assert "### Turn 2 · " in result["content"]

    # Recorded as a tool call of that turn: the record names the tool, the step keeps its extract.
    record = next(c for r in state.rounds for c in r.calls if c.phase == "turn" and c.round == ASK_AT)
    assert "recall" in record.tools and record.summary_id is not None
    (step,) = record.tool_steps
    assert step.calls[0].name == "recall" and step.results[0].ok
    assert step.results[0].extract.startswith(f'[✓ recall: Query: "the {planted(0).name} quota shard lease"')
    assert "Turn 2" in step.results[0].extract

    # `moot context` shows the call's last request byte for byte, the recall result included.
    ctx = cli("context", folder.id, "--turn", str(ASK_AT), "--json", "--state-dir", str(folder.path.parent))
    assert ctx.returncode == 0, ctx.stderr
    (view,) = [v for v in json.loads(ctx.stdout) if v["phase"] == "turn"]
    assert view["messages"] == asked[1]["messages"]

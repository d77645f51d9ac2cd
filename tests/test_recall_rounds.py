"""The recall tier in `rounds` and `simultaneous` (`context.recall = true`): an agent's own older
history that only its summary covers (in `simultaneous`, that no view holds any more) comes back
verbatim when the debate names it again. Through the CLI against the loopback server."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from moot.core.storage.folder import DebateFolder
from tests.conftest import LoopbackServer, cli
from tests.prose import planted, reply

KEY = "sk-test-recall-rounds"
FACT = planted(9)


class Script:
    """The architect plants a fact in its first proposal (or answer); the kiss agent names it in round 5."""

    def __init__(self) -> None:
        self.round = 0

    def __call__(self, body: dict[str, Any], n: int) -> str:
        system = body["messages"][0]["content"]
        task = body["messages"][-1]["content"]
        started = re.match(r"# (?:Proposal: round|Round) (\d+) of", task)
        if started:
            self.round = max(self.round, int(started.group(1)))
        text = reply(n * 13 + 5, 900).text
        if "Software Architect" in system and self.round == 1 and task.startswith(("# Proposal", "# Round")):
            return f"{text}\n\n{FACT.sentence}"
        if "Simplicity" in system and self.round == 5 and not task.startswith("# Refinement"):
            return f"{FACT.mention}\n\n{text}"
        return text


CONFIG = """
[debate]
protocol = "{protocol}"
rounds = 6
carry_refinements = false

[debate.summarization]
method = "rule-based"
threshold = 1500

[debate.context]
recall = true
recall_tokens = 600
"""


@pytest.mark.parametrize("protocol,phase", [("rounds", "refinement"), ("simultaneous", "answer")])
def test_an_agents_own_old_item_comes_back_when_named_again(tmp_path: Path, monkeypatch: Any, protocol: str,
                                                            phase: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    config = tmp_path / "moot.toml"
    config.write_text(CONFIG.format(protocol=protocol))
    sd = tmp_path / "debates"
    with LoopbackServer(reply=Script()) as srv:
        r = cli("run", "Design a rate limiter for a public API", "--provider", "openai", "--base-url", srv.base_url,
                "--headless", "-c", str(config), "-a", "architect,kiss", "--state-dir", str(sd))
        assert r.returncode == 0, r.stderr
        (path,) = list(sd.iterdir())
        state = DebateFolder(path).load()
        planted_item = next(c for c in state.all_contributions() if FACT.sentence in c.content)
        assert planted_item.agent_id == "architect" and planted_item.round == 1
        step = 5 if protocol == "rounds" else 6  # a simultaneous answer reads the previous round's answers
        (view,) = [c for c in state.round(step).calls if c.agent_id == "architect" and c.phase == phase]
        assert view.recall is not None and planted_item.id in [it.id for it in view.recall.items]
        assert 0 < view.tokens.recall <= 600 and view.tokens.total <= view.budget
        assert planted_item.id not in view.contribution_ids
        mine = [b for b in srv.requests if b["messages"][0]["content"].startswith("# Role: Software Architect")
                and b["messages"][-1]["content"].startswith("# Refinement" if phase == "refinement" else "# Round ")]
        body = mine[step - 1]  # one a round, in order
        sent = "\n".join(m["content"] for m in body["messages"])
        assert planted_item.content.strip() in sent
        # Only the agent's own perspective comes back, never another agent's texts.
        for rnd in state.rounds:
            for call in rnd.calls:
                for item in (call.recall.items if call.recall else []):
                    c = next(x for x in state.all_contributions() if x.id == item.id)
                    assert c.agent_id == call.agent_id or c.target_agent_id == call.agent_id

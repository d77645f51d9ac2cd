"""HumanProvider: a seat a person takes, behind the same contract as a model.

Its reply is the person's answer, awaited from the debate's `HumanDesk` (fed by the TUI's
editor, stdin, or `moot ctl ID say`): no network, no model, no deadline (a person takes
minutes) and no cost. The call engine gives each person's seat at most one call in flight and
keeps it out of the model calls' concurrency limit (see `engine.calls`), so the person answers
one thing at a time and nobody else waits for a model slot they hold.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from ..models.provider_kinds import PERSON
from ..providers.base import ChatRequest, Completion, Finished, JsonMode, StreamItem
from ..tokens import count_text
from .desk import HumanDesk


class HumanProvider:
    name = PERSON.name
    kind = PERSON
    label = "a person (typed answers)"
    slots: int | None = None
    llama_cpp: bool = False
    supports_tools: bool | None = False
    """A person calls no tools: with references, their view gets the retrieval tier's passages."""
    json_mode: JsonMode = "off"
    """A person's answer is their words; a JSON answer asked of them is parsed as it comes."""

    def __init__(self, desk: HumanDesk) -> None:
        self.desk = desk

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamItem]:
        answer = await self.desk.ask(request)
        yield Finished(Completion(
            content=answer.text,
            prompt_tokens=0,  # a person reads the view; no model is sent it
            completion_tokens=count_text(answer.text, request.model),
            model=PERSON.name,
            finish_reason="stop",
        ))

    def keep_slots(self, speakers: Sequence[str]) -> dict[str, int]:
        return {}

    async def discover_window(self, model: str) -> int | None:
        return None

    async def discover_tools(self) -> None:
        """Nothing to learn: see `supports_tools`."""

    async def aclose(self) -> None:
        """Nothing to release (a stop ends open turns through the desk)."""

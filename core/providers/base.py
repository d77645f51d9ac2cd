"""The provider contract: stream one chat completion as typed items, ending with its usage.

A provider's `stream(request)` yields, in order, any number of `TextDelta`s,
`RetryNotice`s and `Restart`s, and then exactly one `Finished` with the completion
(or raises `ProviderError` once every attempt and fallback failed). Nothing rides
inside the text: a retry that throws away text already streamed is a `Restart`
item, not a marker in the deltas (the shape of openai-python's typed chat stream).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, Protocol, TypedDict

from ..errors import ProviderError
from ..models.provider_kinds import ProviderKind

JsonMode = Literal["schema", "object", "off"]
"""How an endpoint takes JSON answers: a JSON schema, any JSON object, or not at all."""


class Message(TypedDict):
    """An OpenAI chat message (a tool loop adds assistant messages with `tool_calls` and `tool` results)."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: NotRequired[list[dict[str, Any]]]
    tool_call_id: NotRequired[str]


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model made, assembled from its streamed fragments."""

    id: str
    name: str
    arguments: str
    """As sent: usually JSON, but a cut-off or malformed stream leaves whatever came."""


@dataclass
class CallHint:
    """What a call is for. Real providers ignore it; the offline demo provider writes from it."""

    phase: str
    role: str
    agent_id: str
    round: int = 1
    problem: str = ""
    target_agent_id: str | None = None
    target_role: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JsonAnswer:
    """Ask for a JSON answer: a JSON schema when the endpoint takes one, else any JSON object."""

    name: str
    schema: dict[str, Any]

    def within(self, max_tokens: int) -> JsonAnswer:
        """The schema with its text fields bounded so that an answer filling every bound still
        closes within `max_tokens` (at 3 characters a token, under English's ~4). A server that
        turns the schema into a grammar (llama.cpp) then ends a field at its bound: a small model
        that repeats itself inside `solution` otherwise runs to its limit and never closes the
        object. Strings share 60 % of the room, lists of strings 40 %; a bound already tighter
        is kept."""
        props = self.schema.get("properties")
        if not isinstance(props, dict):
            return self
        strings = [k for k, v in props.items() if v.get("type") == "string"]
        lists = [k for k, v in props.items() if v.get("type") == "array" and v.get("items", {}).get("type") == "string"]
        if not strings and not lists:
            return self
        room = max(3 * max_tokens - 20 * len(props) - 40, 40 * (len(strings) + len(lists)))  # keys and syntax first
        string_share = room * (0.6 if lists else 1.0) / max(len(strings), 1)
        list_share = room * (0.4 if strings else 1.0) / max(len(lists), 1)
        bounded: dict[str, Any] = dict(props)
        for key in strings:
            field_ = dict(props[key])
            field_["maxLength"] = max(20, min(int(field_.get("maxLength", string_share)), int(string_share)))
            bounded[key] = field_
        for key in lists:
            field_, items = dict(props[key]), dict(props[key]["items"])
            count = max(1, min(int(field_.get("maxItems", 8)), int(list_share // 80)))
            per_item = int(list_share / count) - 4  # quotes and a comma
            items["maxLength"] = max(20, min(int(items.get("maxLength", per_item)), per_item))
            field_["maxItems"], field_["items"] = count, items
            bounded[key] = field_
        return JsonAnswer(self.name, {**self.schema, "properties": bounded})


@dataclass(frozen=True)
class ChatRequest:
    messages: list[Message]
    model: str
    temperature: float
    max_tokens: int
    hint: CallHint
    fallback_models: Sequence[str] = ()
    json_answer: JsonAnswer | None = None
    """Constrain the reply to JSON (`response_format`) when the endpoint accepts it."""
    tools: Sequence[dict[str, Any]] = ()
    """Function definitions offered to the model (OpenAI `tools`); empty: none."""
    seed: int | None = None
    """Sent as the request's `seed` (reproducible sampling where the server honours it)."""
    slot: int | None = None
    """The server slot this speaker keeps (llama.cpp's `id_slot`), so its prompt cache stays warm;
    None: the server chooses."""


@dataclass
class Completion:
    content: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    attempts: int = 1
    finish_reason: str | None = None
    """`stop`, `length` (cut at max_tokens), … as the server reported it; None when it did not say."""
    usage_estimated: bool = False
    """The server sent no usable usage: the token counts are moot's own (tiktoken)."""
    json_constrained: bool = False
    """The reply was constrained to JSON by the endpoint (`response_format` was accepted)."""
    tool_calls: list[ToolCall] = field(default_factory=list)
    """The tools the model called (`finish_reason` is then usually `tool_calls`)."""
    clipped_at: int | None = None
    """moot stopped reading the reply at this many bytes (far past `max_tokens`; see
    `providers.capped`): the content is what came before the cap."""
    cached_tokens: int = 0
    """Of `prompt_tokens`, those the server served from its prompt cache, as it reported them
    (`usage.prompt_tokens_details.cached_tokens`, or llama.cpp's `timings.cache_n`)."""
    truncated: bool = False
    """The server said it ended the reply because its window was full (llama.cpp's `truncated`)."""


@dataclass(frozen=True)
class TextDelta:
    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True)
class Restart:
    """The call starts over after a failed attempt: drop the text streamed so far."""

    type: Literal["restart"] = "restart"


@dataclass(frozen=True)
class RetryNotice:
    """An attempt failed and another follows (a retry or a fallback model); `reason` is one safe line."""

    reason: str
    type: Literal["retry"] = "retry"


@dataclass(frozen=True)
class Finished:
    completion: Completion
    type: Literal["finished"] = "finished"


StreamItem = TextDelta | Restart | RetryNotice | Finished


class Provider(Protocol):
    """A model endpoint, and what it can do. What is known from its name alone (billed, a
    person, scripted answers, how a pane header shows it) is its `kind`; what the server says
    once asked (window, slots, tools, JSON) is learned by `discover_window` / `discover_tools`
    and by the refusals it answers with. A new provider is a class meeting this protocol and a
    `ProviderSpec` in `providers/registry.py` (or an entry point in the `moot.providers` group)."""

    name: str
    kind: ProviderKind
    label: str
    """Shown in every view (the demo provider says DEMO)."""
    slots: int | None
    """How many requests the server runs at once, when it said so (after `discover_window`)."""
    llama_cpp: bool
    """The server is llama.cpp's (after `discover_window`): it takes `id_slot` (`ChatRequest.slot`)."""
    supports_tools: bool | None
    """Function calling: None while unknown, False once the endpoint refused `tools` or said it has none."""
    json_mode: JsonMode
    """How it takes JSON answers now (an endpoint that refused a schema is asked for less)."""

    def keep_slots(self, speakers: Sequence[str]) -> dict[str, int]:
        """The server slot each of these speakers (agent ids, in order) keeps, so its next request
        finds its own previous prompt in that slot's cache; empty when the endpoint keeps none."""
        ...

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamItem]:
        """Stream one completion; retries and fallbacks happen inside (see the module doc)."""
        ...

    async def discover_window(self, model: str) -> int | None:
        """The context window the server states for `model` (tokens a request + reply may use),
        or None when it does not say. Never raises."""
        ...

    async def discover_tools(self) -> None:
        """Learn `supports_tools` from the server when it says (once, at the start); never raises."""
        ...

    async def aclose(self) -> None: ...


async def complete(provider: Provider, request: ChatRequest) -> Completion:
    """The completion alone, for callers that do not show streaming (eval, tools)."""
    async for item in provider.stream(request):
        if isinstance(item, Finished):
            return item.completion
    raise ProviderError(f"{provider.name}: the stream ended without a completion")


__all__ = [
    "CallHint",
    "ChatRequest",
    "Completion",
    "Finished",
    "JsonAnswer",
    "JsonMode",
    "Message",
    "Provider",
    "Restart",
    "RetryNotice",
    "StreamItem",
    "TextDelta",
    "ToolCall",
    "complete",
]

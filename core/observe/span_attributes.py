"""The attribute names moot's spans carry: the OpenTelemetry GenAI conventions, and the few
names other tools read (Langfuse's cost, OpenInference's span kind)."""

from __future__ import annotations

# Attribute names of the OpenTelemetry GenAI semantic conventions (status: development), as in
# open-telemetry/semantic-conventions docs/gen-ai/gen-ai-spans.md, "Inference" span: name
# `{gen_ai.operation.name} {gen_ai.request.model}`, kind CLIENT, status per "Recording Errors"
# (error.type set on failure); content only as the opt-in gen_ai.input/output.messages JSON.
# `gen_ai.provider.name` replaced `gen_ai.system` (semconv 1.37); both are written, since
# backends built on the older name still read it.
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
SYSTEM = "gen_ai.system"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
AGENT_ID = "gen_ai.agent.id"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"
COST = "gen_ai.usage.cost"
"""Not in the conventions: Langfuse's name for a call's cost (its OTel property mapping)."""
OI_KIND = "openinference.span.kind"
"""OpenInference (what Arize Phoenix reads): LLM for a call, CHAIN for the rest, with token counts."""

MASKED_JSON = frozenset({INPUT_MESSAGES, OUTPUT_MESSAGES})
"""JSON built from texts masked one by one: masking the JSON text again could cut an escape in half."""

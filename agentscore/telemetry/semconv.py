"""OpenTelemetry attribute and span names, in one place (GenAI semantic conventions).

Spelled out rather than imported from opentelemetry-semantic-conventions' incubating module,
whose names move between releases.
"""

from __future__ import annotations

__all__ = [
    "AGENT_NAME",
    "CONVERSATION_ID",
    "ERROR_TYPE",
    "EVALUATION_EVENT",
    "EVALUATION_EXPLANATION",
    "EVALUATION_NAME",
    "EVALUATION_OUTCOME",
    "EVALUATION_SCORE_LABEL",
    "EVALUATION_SCORE_VALUE",
    "INPUT_MESSAGES",
    "INPUT_MIME_TYPE",
    "INPUT_VALUE",
    "JUDGE_COST",
    "OPENINFERENCE_SPAN_KIND",
    "OPERATION_NAME",
    "OUTPUT_MESSAGES",
    "OUTPUT_MIME_TYPE",
    "OUTPUT_VALUE",
    "PROVIDER_NAME",
    "REQUEST_MODEL",
    "REQUEST_TEMPERATURE",
    "RESPONSE_FINISH_REASONS",
    "RESPONSE_ID",
    "RESPONSE_MODEL",
    "TIME_TO_FIRST_CHUNK",
    "TOKEN_TYPE",
    "TOOL_CALL_ARGUMENTS",
    "TOOL_CALL_ID",
    "TOOL_CALL_RESULT",
    "TOOL_NAME",
    "TOOL_TYPE",
    "USAGE_INPUT_TOKENS",
    "USAGE_OUTPUT_TOKENS",
]

OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"
# Seconds from the request to the first streamed chunk (the conventions name the metric
# gen_ai.server.time_to_first_token; this is the client-side reading of it, per span).
TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"

EVALUATION_EVENT = "gen_ai.evaluation.result"
EVALUATION_NAME = "gen_ai.evaluation.name"
EVALUATION_SCORE_VALUE = "gen_ai.evaluation.score.value"
EVALUATION_SCORE_LABEL = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
# agentscore's own: how a scorer run ended (agentscore.telemetry.ledger), and what its judge
# requests cost at the prices the user set.
EVALUATION_OUTCOME = "agentscore.outcome"
JUDGE_COST = "agentscore.judge.cost"
# input / output, on token counts (the conventions' gen_ai.client.token.usage uses it).
TOKEN_TYPE = "gen_ai.token.type"

# Phoenix shows spans by OpenInference kind; EVALUATOR marks ours.
OPENINFERENCE_SPAN_KIND = "openinference.span.kind"
# OpenInference's conversation id: what Phoenix groups a session's traces by.
SESSION_ID = "session.id"
# What OpenInference backends show as a span's input and output.
INPUT_VALUE = "input.value"
INPUT_MIME_TYPE = "input.mime_type"
OUTPUT_VALUE = "output.value"
OUTPUT_MIME_TYPE = "output.mime_type"

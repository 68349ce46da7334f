"""Reading generations out of OpenTelemetry spans, in process and from OTLP alike."""

from agentscore.spans.assembler import TraceAssembler, generation_run
from agentscore.spans.processor import ScoringSpanProcessor
from agentscore.spans.reading import retrieved_documents, span_conversation, span_role
from agentscore.spans.records import SpanRecord

__all__ = [
    "ScoringSpanProcessor",
    "SpanRecord",
    "TraceAssembler",
    "generation_run",
    "retrieved_documents",
    "span_conversation",
    "span_role",
]

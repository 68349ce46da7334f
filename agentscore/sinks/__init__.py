"""Score sinks for backends with a score API of their own (Phoenix annotations, Langfuse
scores), and the span processor that tells them which span is each trace's root."""

from agentscore.sinks.backends import LangfuseScores, PhoenixAnnotations
from agentscore.sinks.roots import RootSpans

__all__ = ["LangfuseScores", "PhoenixAnnotations", "RootSpans"]

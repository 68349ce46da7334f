"""OpenTelemetry: GenAI agent spans, evaluation results on the trace, and a setup helper."""

from agentscore.telemetry.core import CAPTURE_CONTENT_ENV, Telemetry

__all__ = ["CAPTURE_CONTENT_ENV", "Telemetry"]

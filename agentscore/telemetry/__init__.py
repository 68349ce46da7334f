"""OpenTelemetry: GenAI agent spans, evaluation results on the trace, and a setup helper.

`setup_telemetry` lives in `agentscore.telemetry.setup` (also exported by `agentscore`).
"""

from agentscore.telemetry.core import CAPTURE_CONTENT_ENV, Telemetry
from agentscore.telemetry.spend import SpendBudget

__all__ = ["CAPTURE_CONTENT_ENV", "SpendBudget", "Telemetry"]

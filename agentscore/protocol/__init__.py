"""The judge protocol: task names, payloads and replies that scorers and judges share.

A layer below both: it imports neither, so judges never need scorers.
"""

from agentscore.protocol.protocol import (
    ClaimMode,
    Claims,
    ClaimVerdict,
    ClaimVerdicts,
    Payload,
    Task,
    Verdict,
    VerdictItem,
    Verdicts,
)
from agentscore.protocol.reason import compose_reason

__all__ = [
    "ClaimMode",
    "ClaimVerdict",
    "ClaimVerdicts",
    "Claims",
    "Payload",
    "Task",
    "Verdict",
    "VerdictItem",
    "Verdicts",
    "compose_reason",
]

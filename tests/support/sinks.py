"""What the score sinks' tests share: a scored result, and what a backend was posted."""

from __future__ import annotations

from typing import Any

from agentscore.result import ScoreResult, ScoreStatus
from tests.support.http_server import HttpServer

RESULT = ScoreResult(
    scorer_id="hallucination",
    run_id="run-1",
    status=ScoreStatus.SCORED,
    score=0.5,
    passed=True,
    label="pass",
    reason='The score is 0.5 because "Members get free express shipping" is not supported.',
    analyze_step_result={
        "verdicts": [
            {"claim": "Order 42 shipped.", "verdict": "yes", "reason": "the tool says shipped"},
            {
                "claim": "Members get free express shipping.",
                "verdict": "unsure",
                "reason": "no tool result mentions shipping costs",
            },
        ]
    },
    trace_id="0af7651916cd43dd8448eb211c80319c",
    span_id="b7ad6b7169203331",
    judge_model="local",
)


def posted(collector: HttpServer, endpoint: str) -> list[list[Any]]:
    """The list each POST to `endpoint` carried, in the order they came."""
    lists: list[list[Any]] = []
    for request in list(collector.requests):
        if request.path == endpoint:
            body = request.json()
            lists.append(body["batch"] if "batch" in body else body["data"])
    return lists

"""Scorers that `agentscore serve` imports in the tests (`--scorers SERVE_SCORERS`, that is
`tests.support.serve_scorers:evals`).

SERVE_TEST_JUDGE_DELAY (seconds) makes each judge request wait first, so a test can kill the
service while jobs are being scored. SERVE_TEST_JUDGE=cascade judges with
`CascadeJudge(LocalJudge(), <LLM>)`, the LLM stage a scripted endpoint in this process (the
real `openai` client) that calls every claim it is asked about supported.
SERVE_TEST_JUDGE=http judges with an OpenAIJudge at SERVE_TEST_JUDGE_URL (a real HTTP server
the test runs, tests/support/http_server.py), with SERVE_TEST_JUDGE_RETRIES retries.
SERVE_TEST_SINK=phoenix sends every result to Phoenix (PHOENIX_COLLECTOR_ENDPOINT) with the
async `PhoenixAnnotations` sink.
"""

from __future__ import annotations

import os
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel

from agentscore import Evals
from agentscore.judges import CascadeJudge, LocalJudge, OpenAIJudge
from agentscore.judges.base import Judge, JudgeReply, JudgeRequest
from agentscore.scorers import create_faithfulness_scorer
from agentscore.sinks.backends import PhoenixAnnotations
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion

T = TypeVar("T", bound=BaseModel)


class SlowLocalJudge(LocalJudge):
    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    async def complete(self, request: JudgeRequest[T]) -> JudgeReply[T]:
        await anyio.sleep(self.delay)
        return await super().complete(request)


def _all_supported(body: dict[str, Any]) -> ScriptedReply:
    prompt = str(body["messages"][-1]["content"])
    block = prompt.split("<<BEGIN CLAIMS", 1)[1].split("\n", 1)[1].split("\n<<END CLAIMS")[0]
    verdicts = [{"claim": c, "verdict": "yes", "reason": "scripted"} for c in block.splitlines()]
    return chat_completion({"verdicts": verdicts}, prompt_tokens=100, completion_tokens=10)


def _judge() -> Judge | str:
    if os.environ.get("SERVE_TEST_JUDGE") == "http":
        return OpenAIJudge(
            "judge-llm",
            base_url=os.environ["SERVE_TEST_JUDGE_URL"],
            api_key="sk-serve-test",
            max_retries=int(os.environ.get("SERVE_TEST_JUDGE_RETRIES", "0")),
            timeout=10,
            use_cache=False,
        )
    if os.environ.get("SERVE_TEST_JUDGE") == "cascade":
        llm = ScriptedEndpoint(_all_supported).client(max_retries=0)
        llm_judge = OpenAIJudge("judge-llm", client=llm, use_cache=False)
        # No calibration share: the tests count the LLM requests each generation needs.
        return CascadeJudge(LocalJudge(), llm_judge, calibration=0.0)
    delay = float(os.environ.get("SERVE_TEST_JUDGE_DELAY", "0"))
    return SlowLocalJudge(delay) if delay else "local"


evals = Evals(
    scorers=[create_faithfulness_scorer(_judge())],
    on_score=PhoenixAnnotations() if os.environ.get("SERVE_TEST_SINK") == "phoenix" else None,
)

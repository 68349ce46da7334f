"""Scorers that `agentscore serve` imports in the tests (`--scorers tests.serve_scorers:evals`).

SERVE_TEST_JUDGE_DELAY (seconds) makes each judge request wait first, so a test can kill the
service while jobs are being scored.
"""

from __future__ import annotations

import os
from typing import TypeVar

import anyio
from pydantic import BaseModel

from agentscore import Evals
from agentscore.judges import LocalJudge
from agentscore.judges.base import JudgeReply, JudgeRequest
from agentscore.scorers import create_faithfulness_scorer

T = TypeVar("T", bound=BaseModel)


class SlowLocalJudge(LocalJudge):
    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    async def complete(self, request: JudgeRequest[T]) -> JudgeReply[T]:
        await anyio.sleep(self.delay)
        return await super().complete(request)


_delay = float(os.environ.get("SERVE_TEST_JUDGE_DELAY", "0"))
evals = Evals(scorers=[create_faithfulness_scorer(SlowLocalJudge(_delay) if _delay else "local")])

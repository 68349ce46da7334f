"""Scorers of every level that `agentscore serve` imports in the level tests (`--scorers
tests.support.serve_level_scorers:evals`): faithfulness on generations (the local judge),
tool efficiency on whole traces, and a conversation scorer whose score is the number of
turns it was handed (so a test reads from the evaluation what the service put together).
SERVE_TEST_SINK=phoenix sends every result to Phoenix (PHOENIX_COLLECTOR_ENDPOINT)."""

from __future__ import annotations

import os

from agentscore import Evals
from agentscore.run import ConversationRun
from agentscore.scorers import (
    StepParams,
    create_faithfulness_scorer,
    create_scorer,
    create_tool_efficiency_scorer,
)
from agentscore.sinks.backends import PhoenixAnnotations


def _turns(params: StepParams) -> float:
    run = params.run
    return float(len(run.turns)) if isinstance(run, ConversationRun) else -1.0


evals = Evals(
    scorers=[
        create_faithfulness_scorer("local"),
        create_tool_efficiency_scorer(max_repeats=1),
        create_scorer(
            id="conversation_turns", level="conversation", generate_score=_turns, scale=100.0
        ),
    ],
    on_score=PhoenixAnnotations() if os.environ.get("SERVE_TEST_SINK") == "phoenix" else None,
)

"""Scorers `benchmarks/serve.py` hands to `agentscore serve` (`--scorers _serve_scorers:evals`).

BENCH_JUDGE_URL: an OpenAI-compatible judge (the benchmark's scripted server), else the local
judge. BENCH_SAMPLING: the share of generations scored (0 measures ingest alone).
"""

from __future__ import annotations

import os

from agentscore import Evals
from agentscore.judges import LocalJudge, OpenAIJudge
from agentscore.scorers import create_faithfulness_scorer

_url = os.environ.get("BENCH_JUDGE_URL")
_judge = (
    OpenAIJudge("bench-judge", base_url=_url, api_key="bench", use_cache=False)
    if _url
    else LocalJudge()
)
evals = Evals(
    scorers=[create_faithfulness_scorer(_judge)],
    sampling=float(os.environ.get("BENCH_SAMPLING", "1")),
)

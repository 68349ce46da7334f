"""The CI placement: `agentscore eval` (score a file of records or stored traces, with JUnit,
markdown and a gate) and `agentscore compare` (two results files, what flipped)."""

from agentscore.ci._eval_file import EvalOptions, run_eval_file
from agentscore.ci._failing import describe_failure, failing_claims
from agentscore.ci._table import render_table
from agentscore.ci.compare import run_compare

__all__ = [
    "EvalOptions",
    "describe_failure",
    "failing_claims",
    "render_table",
    "run_compare",
    "run_eval_file",
]

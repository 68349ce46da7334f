"""`agentscore eval` as the command-line tests run it: records in a JSONL file, results read back
from its --out file, a subprocess's environment with no provider key or OTLP setting."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from junitparser import Error, Failure, JUnitXml, Skipped

ROOT = Path(__file__).resolve().parents[2]

GROUNDED = {
    "id": "grounded",
    "input": "When was Python first released?",
    "output": "Python was first released in 1991.",
    "context": ["The first version of Python was released in 1991."],
}
WRONG = {
    "id": "wrong",
    "input": "When was Python first released?",
    "output": "Python was first released in 2005.",
    "context": ["The first version of Python was released in 1991."],
}


def offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OTEL_"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


def write_jsonl(path: Path, records: Sequence[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def results_of(out: Path) -> dict[str, Any]:
    return {row["id"]: row["scores"] for row in map(json.loads, out.read_text().splitlines())}


def cases_by_outcome(path: Path) -> dict[str, dict[str, list[Any]]]:
    """Per suite (scorer): the test cases under each outcome, as (name, result element)."""
    found: dict[str, dict[str, list[Any]]] = {}
    for suite in JUnitXml.fromfile(str(path)):
        outcomes: dict[str, list[Any]] = {"passed": [], "failure": [], "error": [], "skipped": []}
        for case in suite:
            kinds = {Failure: "failure", Error: "error", Skipped: "skipped"}
            results = case.result
            kind = kinds[type(results[0])] if results else "passed"
            outcomes[kind].append((case.name, results[0] if results else None))
        found[suite.name] = outcomes
    return found

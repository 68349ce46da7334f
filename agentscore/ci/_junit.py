"""JUnit XML from `agentscore eval` results, the test-report format CI systems render.

One test suite per scorer, one test case per target it judges (a generation, a trace or a
conversation, as the scorer's level says): a verdict below the pass line is a failure
carrying the reason and the failing claims, a score that could not be computed is an error,
and a target with nothing to judge (no claims, no context) is skipped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentscore.ci._failing import case_outcome, describe_failure, due

__all__ = ["write_junit"]

# Characters XML 1.0 cannot hold at all; a reason quoting binary output must not break the file.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def write_junit(
    path: Path, rows: Sequence[Mapping[str, Any]], levels: Mapping[str, str], seconds: float
) -> None:
    """`levels`: each scorer's id and level, in the order of the suites."""
    # No zone suffix: the Ant-era schemas some readers validate against refuse one.
    stamp = datetime.now(UTC).replace(microsecond=0, tzinfo=None).isoformat()
    root = ET.Element("testsuites", name="agentscore eval", time=f"{seconds:.3f}")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for scorer_id, level in levels.items():
        suite = ET.SubElement(root, "testsuite", name=scorer_id, timestamp=stamp)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for row in rows:
            if due(row, scorer_id, level):
                _add_case(suite, row, scorer_id, counts)
        for key, value in counts.items():
            suite.set(key, str(value))
        for key in totals:  # `skipped` is a suite attribute only in the common schemas
            totals[key] += counts[key]
        suite.set("time", f"{seconds:.3f}")
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def _add_case(
    suite: ET.Element, row: Mapping[str, Any], scorer_id: str, counts: dict[str, int]
) -> None:
    case = ET.SubElement(
        suite, "testcase", name=_xml(str(row.get("id"))), classname=f"agentscore.{scorer_id}"
    )
    counts["tests"] += 1
    outcome = case_outcome(row, scorer_id)
    entry = row.get("scores", {}).get(scorer_id) or {}
    if outcome == "error":
        counts["errors"] += 1
        error = entry.get("error") or {"type": "RecordError", "message": row.get("error")}
        element = ET.SubElement(
            case,
            "error",
            message=_xml(str(error.get("message"))),
            type=_xml(str(error.get("type"))),
        )
        element.text = _xml(describe_failure(scorer_id, None, None, [], error))
    elif outcome == "failure":
        counts["failures"] += 1
        score = entry.get("score")
        element = ET.SubElement(
            case,
            "failure",
            message=_xml(f"{scorer_id} {score:g}: {entry.get('reason')}"),
            type=_xml(str(entry.get("label") or "fail")),
        )
        claims = entry.get("failing_claims") or []
        element.text = _xml(describe_failure(scorer_id, score, entry.get("reason"), claims))
    elif outcome == "skipped":
        counts["skipped"] += 1
        message = (
            f"{entry.get('status')}: {entry.get('reason') or 'nothing to judge'}"
            if entry
            else f"not scored: this record's results line has no {scorer_id} score"
        )
        ET.SubElement(case, "skipped", message=_xml(message))


def _xml(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)

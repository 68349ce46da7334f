"""HaluEval knowledge QA: the 50 (question, output, context) cases of the peers benchmark.

Read in place from ../shared/datasets/halueval_qa.jsonl (relative to the project root; see
its README.md), never copied into the repository. The first 25 usable records, in file
order, give two cases each: the right answer (grounded, even case ids) and the hallucinated
answer (not grounded, odd case ids). Context = the record's knowledge passage; the question
is passed too, because deepeval and ragas require one. Standard library only, so the peers
venv can import it as well.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["DATASET", "Case", "load_cases"]

DATASET = (
    Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "halueval_qa.jsonl"
)


@dataclass(frozen=True, slots=True)
class Case:
    id: int
    question: str
    output: str
    context: tuple[str, ...]
    grounded: bool

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["context"] = list(self.context)
        return data


def load_cases(count: int = 50, path: Path = DATASET) -> list[Case]:
    if not path.exists():
        raise SystemExit(f"dataset not found: {path} (expected ../shared/datasets beside the repo)")
    cases: list[Case] = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if len(cases) >= count:
                break
            if not line.strip():
                continue
            record = json.loads(line)
            fields = [str(record.get(key) or "").strip() for key in _FIELDS]
            knowledge, question, right, hallucinated = fields
            if not all(fields):
                continue
            for output, grounded in ((right, True), (hallucinated, False)):
                cases.append(Case(len(cases), question, output, (knowledge,), grounded))
    if len(cases) < count:
        raise SystemExit(f"only {len(cases)} cases could be built from {path}, need {count}")
    return cases[:count]


_FIELDS = ("knowledge", "question", "right_answer", "hallucinated_answer")

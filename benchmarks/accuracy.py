"""Accuracy of the offline local judge and of the cascade, per labelled set, next to a
lexical baseline computed in the same run.

Dev sets (../shared/datasets, read in place; the local judge's rules and constants were
chosen looking at these): HaluEval QA (right_answer grounded, hallucinated_answer not;
context = the knowledge passage), SummEdits (label 1 = grounded), WiCE dev (only
"supported" counts as grounded).

Held-out sets (benchmarks/data, converted samples; see its README; never used for any
choice): FRANK CNN/DM and FRANK XSum test splits (human factuality = 1.0 is grounded),
HaluEval QA multi-turn, WiCE test; and "Agent JSON gen", generated (not collected) agent
answers restating JSON tool results (benchmarks/make_agent_set.py), for the cascade's
savings on agent-style runs.

Per set it prints:
- local: balanced accuracy of the local judge alone; a response is grounded iff every claim
  `split_claims` finds in it is "yes" in hallucination mode (no claims: grounded);
- lexical*: share of the response's content words found in the context, at the best
  threshold chosen after the fact on the same records (optimistic for the baseline);
- coverage: share of responses whose every claim the local judge decides with confidence
  (what a cascade answers without an LLM request), and the accuracy on that share;
- cascade: `CascadeJudge(LocalJudge(), <oracle>)` through the hallucination scorer, where
  the oracle is a scripted OpenAI-compatible endpoint that answers every claim it is asked
  about with the response's gold label: an UPPER BOUND for any real LLM judge. "saved" is
  the share of LLM requests saved against sending every response to the LLM (the oracle
  alone, balanced accuracy 1.0 by construction); "cascade" and "run" are the balanced
  accuracy kept with `escalate="unsure"` (the default: only undecided claims go to the LLM)
  and `escalate="run"` (every claim of a run that needs the LLM anyway; same requests).

Usage: python benchmarks/accuracy.py [--no-sweep] [--no-cascade] [--limit N]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentscore.context import run_context  # noqa: E402
from agentscore.judges import CascadeJudge, LocalJudge, OpenAIJudge  # noqa: E402
from agentscore.judges.cascade import CONFIDENT_AT, Escalate  # noqa: E402
from agentscore.judges.local import _grounding  # noqa: E402
from agentscore.judges.local._grounding import check_claims, split_claims  # noqa: E402
from agentscore.judges.local._lexicon import STOPWORDS  # noqa: E402
from agentscore.run import ScorerRun  # noqa: E402
from agentscore.scorers import create_hallucination_scorer  # noqa: E402
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion  # noqa: E402

DATA = ROOT.parent / "shared" / "datasets"
HELD_OUT = Path(__file__).resolve().parent / "data"
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class Item:
    response: str
    context: tuple[str, ...]
    grounded: bool
    record: int  # source record; the even/odd split is by record, so HaluEval pairs stay together


def _jsonl(name: str) -> Iterator[dict[str, object]]:
    with (DATA / name).open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def halueval() -> list[Item]:
    items: list[Item] = []
    for n, record in enumerate(_jsonl("halueval_qa.jsonl")):
        context = (str(record["knowledge"]),)
        items.append(Item(str(record["right_answer"]), context, True, n))
        items.append(Item(str(record["hallucinated_answer"]), context, False, n))
    return items


def summedits() -> list[Item]:
    return [
        Item(str(r["summary"]), (str(r["doc"]),), r["label"] == 1, n)
        for n, r in enumerate(_jsonl("summedits_eval.jsonl"))
    ]


def wice() -> list[Item]:
    items: list[Item] = []
    for n, record in enumerate(_jsonl("wice_dev.jsonl")):
        evidence = record["evidence"]
        assert isinstance(evidence, list)
        supported = record["label"] == "supported"
        items.append(Item(str(record["claim"]), tuple(map(str, evidence)), supported, n))
    return items


def held_out(name: str) -> Callable[[], list[Item]]:
    def load() -> list[Item]:
        with gzip.open(HELD_OUT / f"{name}.jsonl.gz", "rt", encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        return [
            Item(
                str(row["response"]),
                tuple(map(str, row["context"]))
                if isinstance(row["context"], list)
                else (str(row["context"]),),
                bool(row["label"]),
                n,
            )
            for n, row in enumerate(rows)
        ]

    return load


SETS: dict[str, Callable[[], list[Item]]] = {
    "HaluEval QA": halueval,
    "SummEdits": summedits,
    "WiCE": wice,
}
HELD_OUT_SETS: dict[str, Callable[[], list[Item]]] = {
    "FRANK CNN/DM": held_out("frank_cnndm_test"),
    "FRANK XSum": held_out("frank_xsum_test"),
    "HaluEval QA mt": held_out("halueval_qa_multiturn"),
    "WiCE test": held_out("wice_test"),
    "Agent JSON gen": held_out("agent_tool_results"),
}


def judge(item: Item) -> bool:
    return local(item)[0]


def local(item: Item) -> tuple[bool, bool]:
    """(grounded, decided): the local judge's call, and whether it is sure of every claim."""
    checks = check_claims(split_claims(item.response), item.context, mode="hallucination")
    grounded = all(check.verdict == "yes" for check in checks)
    return grounded, bool(checks) and all(c.confidence >= CONFIDENT_AT for c in checks)


@dataclass(frozen=True, slots=True)
class CascadeOutcome:
    predicted: list[bool]
    requests: int


def run_cascade(items: Sequence[Item], escalate: Escalate) -> CascadeOutcome:
    """Every item through the hallucination scorer with a cascade whose LLM stage is the
    oracle: a scripted endpoint (the real openai client) that answers with the gold label."""
    gold = {"grounded": True}

    def oracle(body: dict[str, object]) -> ScriptedReply:
        messages = body["messages"]
        assert isinstance(messages, list)
        prompt = str(messages[-1]["content"])
        block = prompt.split("<<BEGIN CLAIMS", 1)[1].split("\n", 1)[1].split("\n<<END CLAIMS")[0]
        verdict = "yes" if gold["grounded"] else "no"
        verdicts = [
            {"claim": line, "verdict": verdict, "reason": "gold label"}
            for line in block.splitlines()
        ]
        return chat_completion({"verdicts": verdicts})

    endpoint = ScriptedEndpoint(oracle)
    llm = OpenAIJudge("oracle", client=endpoint.client(max_retries=0), use_cache=False)
    scorer = create_hallucination_scorer(
        # No calibration share: it would send 2% more runs to the oracle, by random run id.
        # No self-check either: the oracle calls every claim of a response by the response's
        # label, so a right claim of a wrong answer "disagrees"; that measures the oracle.
        CascadeJudge(LocalJudge(), llm, escalate=escalate, calibration=0.0, agreement_bound=0.0),
        get_context=run_context,
        include_reason=False,
    )

    async def score_all() -> list[bool]:
        predicted = []
        for item in items:
            gold["grounded"] = item.grounded
            result = await scorer.run(
                ScorerRun(output=item.response, request_context={"context": list(item.context)})
            )
            verdicts = (result.analyze_step_result or {}).get("verdicts", [])
            predicted.append(all(v["verdict"] == "yes" for v in verdicts))
        return predicted

    return CascadeOutcome(asyncio.run(score_all()), len(endpoint.requests))


def balanced_accuracy(predicted: Sequence[bool], gold: Sequence[bool]) -> float:
    positives = [p for p, g in zip(predicted, gold, strict=True) if g]
    negatives = [p for p, g in zip(predicted, gold, strict=True) if not g]
    if not positives or not negatives:
        return float("nan")
    return (sum(positives) / len(positives) + sum(not p for p in negatives) / len(negatives)) / 2


def _content(text: str) -> set[str]:
    return {w for w in (t.lower() for t in _WORD.findall(text)) if w not in STOPWORDS}


def lexical_share(item: Item) -> float:
    words = _content(item.response)
    if not words:
        return 1.0
    return len(words & _content(" ".join(item.context))) / len(words)


def best_threshold_accuracy(scores: Sequence[float], gold: Sequence[bool]) -> float:
    return max(
        balanced_accuracy([s >= t for s in scores], gold) for t in [*sorted(set(scores)), 2.0]
    )


def claims_per_second() -> tuple[float, int]:
    """Throughput of check_claims on a ~2 KB context, one core, claims from real summaries:
    CPU time, best of five, so other work on a shared machine does not count."""
    doc = next(_jsonl("summedits_eval.jsonl"))
    context = [str(doc["doc"])[:2048]]
    claims: list[str] = []
    for record in _jsonl("summedits_eval.jsonl"):
        claims.extend(split_claims(str(record["summary"])))
        if len(claims) >= 2000:
            break
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        check_claims(claims, context, mode="hallucination")
        best = min(best, time.process_time() - started)
    return len(claims) / best, len(claims)


def sweep(data: dict[str, list[Item]]) -> tuple[float, float]:
    """Pick the support threshold and strict-word count on even-indexed records only."""
    print("support sweep on even-indexed records (balanced accuracy per set, then mean):")
    original = (_grounding.SUPPORT_THRESHOLD, _grounding.STRICT_WORDS)
    best = (0.0, original)
    for threshold in (0.3, 0.4, 0.5, 0.6):
        for strict in (0.0, 1.0, 2.0, 3.0, 4.0):
            _grounding.SUPPORT_THRESHOLD, _grounding.STRICT_WORDS = threshold, strict
            per_set = []
            for items in data.values():
                even = [i for i in items if i.record % 2 == 0]
                predicted = [judge(i) for i in even]
                per_set.append(balanced_accuracy(predicted, [i.grounded for i in even]))
            mean = sum(per_set) / len(per_set)
            values = "  ".join(f"{v:.3f}" for v in per_set)
            print(f"  threshold {threshold:.2f} strict {strict:.0f}: {values}  mean {mean:.3f}")
            best = max(best, (mean, (threshold, strict)))
    _grounding.SUPPORT_THRESHOLD, _grounding.STRICT_WORDS = original
    (threshold, strict) = best[1]
    print(
        f"  best on even records: threshold {threshold:.2f}, strict {strict:.0f} "
        f"(engine constants: {original[0]:.2f}, {original[1]:.0f})\n"
    )
    return best[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--no-sweep", action="store_true", help="skip the threshold sweep")
    parser.add_argument("--no-cascade", action="store_true", help="skip the oracle cascade")
    parser.add_argument("--limit", type=int, default=0, help="records per set (0 = all)")
    args = parser.parse_args()
    started = time.perf_counter()
    dev = {name: load() for name, load in SETS.items()}
    held = {name: load() for name, load in HELD_OUT_SETS.items()}
    if args.limit:
        dev = {name: items[: args.limit] for name, items in dev.items()}
        held = {name: items[: args.limit] for name, items in held.items()}
    if not args.no_sweep:
        sweep(dev)
    header = (
        f"{'set':<15} {'split':<8} {'items':>5} {'local':>6} {'lexical*':>8} {'beats':>5} "
        f"{'coverage':>8} {'acc@cov':>7} {'saved':>6} {'cascade':>7} {'run':>6} {'oracle':>6}"
    )
    print(header)
    print("-" * len(header))
    for split, data in (("dev", dev), ("held-out", held)):
        for name, items in data.items():
            print(_row(name, split, items, cascade=not args.no_cascade))
    rate, count = claims_per_second()
    print("\nbalanced accuracy. local: grounded iff every claim is 'yes' in hallucination mode.")
    print("* lexical baseline at its best threshold chosen after the fact on the same records.")
    print(
        f"coverage: responses whose every claim is decided with confidence >= {CONFIDENT_AT}; "
        "acc@cov: accuracy there."
    )
    print(
        "cascade: local judge + ORACLE LLM stage (answers with the gold label; an upper "
        "bound); saved: LLM requests saved vs the oracle alone;\n  cascade: balanced "
        'accuracy with escalate="unsure" (the default), run: with escalate="run".'
    )
    print(
        f"throughput: {rate:,.0f} claims/s of CPU time ({count} claims, 2 KB context, one "
        "core); "
        f"benchmark took {time.perf_counter() - started:.0f}s"
    )


def _row(name: str, split: str, items: Sequence[Item], *, cascade: bool) -> str:
    gold = [i.grounded for i in items]
    calls = [local(i) for i in items]
    accuracy = balanced_accuracy([grounded for grounded, _ in calls], gold)
    lexical = best_threshold_accuracy([lexical_share(i) for i in items], gold)
    covered = [k for k, (_, sure) in enumerate(calls) if sure]
    on_covered = (
        sum(calls[k][0] == gold[k] for k in covered) / len(covered) if covered else float("nan")
    )
    line = (
        f"{name:<15} {split:<8} {len(items):>5} {accuracy:>6.3f} {lexical:>8.3f} "
        f"{'yes' if accuracy > lexical else 'NO':>5} {len(covered) / len(items):>8.1%} "
        f"{on_covered:>7.1%}"
    )
    if not cascade:
        return line
    unsure, whole = run_cascade(items, "unsure"), run_cascade(items, "run")
    assert unsure.requests == whole.requests  # the same runs need the LLM either way
    saved = 1 - unsure.requests / len(items)
    kept = balanced_accuracy(unsure.predicted, gold)
    kept_whole = balanced_accuracy(whole.predicted, gold)
    return f"{line} {saved:>6.1%} {kept:>7.3f} {kept_whole:>6.3f} {1.0:>6.3f}"


if __name__ == "__main__":
    main()

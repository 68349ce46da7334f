"""Score the peers benchmark's cases with deepeval or ragas; runs inside the peers venv.

Each library is used through its public API with its OpenAI client pointed at the local
judge (`--base-url`):

- deepeval: `FaithfulnessMetric(model=OpenAIModel(model, base_url=..., ...))`, one metric
  per case (a metric keeps per-case state), `a_measure` under an `asyncio.Semaphore`.
- ragas: `ragas.metrics.collections.Faithfulness(llm=llm_factory(model, client=AsyncOpenAI(
  base_url=...)))`, `ascore` under the same semaphore.

The only addition is an httpx event hook that tags each request with the benchmark run and
the case it belongs to (headers `X-Bench-Run`, `X-Bench-Case`, from a context variable set
in the case's task), so the judge can time each case's round trips. Prints one JSON object
with the figures on stdout.

Usage: python _peer_runner.py {deepeval,ragas} --base-url URL --cases FILE [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import math
import os
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from typing import Any

RUN: contextvars.ContextVar[str] = contextvars.ContextVar("bench_run", default="")
CASE: contextvars.ContextVar[str] = contextvars.ContextVar("bench_case", default="")


def _http_client() -> Any:
    import httpx

    async def tag(request: httpx.Request) -> None:
        request.headers["X-Bench-Run"] = RUN.get()
        if CASE.get():
            request.headers["X-Bench-Case"] = CASE.get()

    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100)
    return httpx.AsyncClient(event_hooks={"request": [tag]}, limits=limits, timeout=60.0)


def deepeval_scorer(base_url: str, model: str) -> Callable[[dict[str, Any]], Awaitable[float]]:
    from deepeval.metrics import FaithfulnessMetric
    from deepeval.models import OpenAIModel
    from deepeval.test_case import LLMTestCase

    judge = OpenAIModel(
        model=model,
        api_key="deepeval",
        base_url=base_url,
        async_http_client=_http_client(),
    )

    async def score(case: dict[str, Any]) -> float:
        metric = FaithfulnessMetric(model=judge, async_mode=True, include_reason=True)
        test_case = LLMTestCase(
            input=case["question"],
            actual_output=case["output"],
            retrieval_context=case["context"],
        )
        await metric.a_measure(test_case, _show_indicator=False)
        if metric.error:
            raise RuntimeError(metric.error)
        return float(metric.score)

    return score


def ragas_scorer(base_url: str, model: str) -> Callable[[dict[str, Any]], Awaitable[float]]:
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory
    from ragas.metrics.collections import Faithfulness

    client = AsyncOpenAI(api_key="ragas", base_url=base_url, http_client=_http_client())
    metric = Faithfulness(llm=llm_factory(model, client=client))

    async def score(case: dict[str, Any]) -> float:
        result = await metric.ascore(
            user_input=case["question"],
            response=case["output"],
            retrieved_contexts=case["context"],
        )
        return float(result.value)

    return score


COMPLETENESS = (
    "The actual output covers everything the input asks for: every sub-question, requested "
    "item and constraint."
)
# Given, not generated: a deployment reuses one criterion's steps (and it saves a request).
COMPLETENESS_STEPS = [
    "List what the input asks for.",
    "Check that the actual output covers each item.",
    "Score 10 when every item is covered, 0 when none is.",
]


def deepeval_set_scorer(base_url: str, model: str) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    """Faithfulness, hallucination, answer relevancy and completeness (GEval) on one case."""
    from deepeval.metrics import (
        AnswerRelevancyMetric,
        FaithfulnessMetric,
        GEval,
        HallucinationMetric,
    )
    from deepeval.models import OpenAIModel
    from deepeval.test_case import LLMTestCase, SingleTurnParams

    judge = OpenAIModel(
        model=model, api_key="deepeval", base_url=base_url, async_http_client=_http_client()
    )

    async def score(case: dict[str, Any]) -> list[float]:
        test_case = LLMTestCase(
            input=case["question"],
            actual_output=case["output"],
            retrieval_context=case["context"],
            context=case["context"],
        )
        metrics = [
            FaithfulnessMetric(model=judge, async_mode=True),
            HallucinationMetric(model=judge, async_mode=True),
            AnswerRelevancyMetric(model=judge, async_mode=True),
            GEval(
                name="Completeness",
                evaluation_steps=COMPLETENESS_STEPS,
                evaluation_params=[SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT],
                model=judge,
                async_mode=True,
            ),
        ]
        await asyncio.gather(*(m.a_measure(test_case, _show_indicator=False) for m in metrics))
        for metric in metrics:
            if metric.error:
                raise RuntimeError(metric.error)
        return [float(metric.score) for metric in metrics]

    return score


def ragas_set_scorer(base_url: str, model: str) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    """ragas' nearest set: Faithfulness, hallucination as 1 - faithfulness (ragas has no
    hallucination metric; derived at no cost), AnswerRelevancy (questions + embeddings) and
    completeness as DomainSpecificRubrics with a completeness rubric."""
    from openai import AsyncOpenAI
    from ragas.embeddings.base import embedding_factory
    from ragas.llms import llm_factory
    from ragas.metrics.collections import AnswerRelevancy, DomainSpecificRubrics, Faithfulness

    client = AsyncOpenAI(api_key="ragas", base_url=base_url, http_client=_http_client())
    llm = llm_factory(model, client=client)
    embeddings = embedding_factory("openai", model="text-embedding-3-small", client=client)
    faithfulness = Faithfulness(llm=llm)
    relevancy = AnswerRelevancy(llm=llm, embeddings=embeddings)
    rubric = {
        "score1_description": "The response leaves out what the input asks for.",
        "score5_description": COMPLETENESS,
    }
    completeness = DomainSpecificRubrics(llm=llm, rubrics=rubric)

    async def score(case: dict[str, Any]) -> list[float]:
        faithful, relevant, complete = await asyncio.gather(
            faithfulness.ascore(
                user_input=case["question"],
                response=case["output"],
                retrieved_contexts=case["context"],
            ),
            relevancy.ascore(user_input=case["question"], response=case["output"]),
            completeness.ascore(user_input=case["question"], response=case["output"]),
        )
        value = float(faithful.value)
        return [value, 1.0 - value, float(relevant.value), (float(complete.value) - 1) / 4]

    return score


async def one_pass(
    score: Callable[[dict[str, Any]], Awaitable[Any]],
    cases: list[dict[str, Any]],
    run_name: str,
    limit: int,
) -> dict[str, Any]:
    RUN.set(run_name)
    semaphore = asyncio.Semaphore(limit)
    scores: list[Any] = [None] * len(cases)
    seconds: list[float] = [0.0] * len(cases)
    errors: list[str] = []

    async def one(index: int, case: dict[str, Any]) -> None:
        async with semaphore:
            CASE.set(str(case["id"]))
            started = time.perf_counter()
            try:
                value = await score(case)
            except Exception as exc:
                errors.append(f"case {case['id']}: {type(exc).__name__}: {exc}"[:500])
                if len(errors) == 1:
                    traceback.print_exc(file=sys.stderr)
                return
            finally:
                seconds[index] = time.perf_counter() - started
            values = value if isinstance(value, list) else [value]
            if all(math.isfinite(v) for v in values):
                scores[index] = value
            else:
                errors.append(f"case {case['id']}: non-finite score {value!r}")

    started = time.perf_counter()
    await asyncio.gather(*(one(i, case) for i, case in enumerate(cases)))
    wall = time.perf_counter() - started
    return {"wall_s": wall, "scores": scores, "case_seconds": seconds, "errors": errors}


async def run(
    library: str, base_url: str, model: str, cases: list[dict[str, Any]], limit: int, repeat: int
) -> dict[str, Any]:
    factory = {
        "deepeval": deepeval_scorer,
        "ragas": ragas_scorer,
        "deepeval-set": deepeval_set_scorer,
        "ragas-set": ragas_set_scorer,
    }[library]
    score = factory(base_url, model)
    await one_pass(score, cases[:1], "warmup", 1)  # imports, templates, clients: not counted
    passes = [
        await one_pass(score, cases, f"{library}/r{number}", limit)
        for number in range(1, repeat + 1)
    ]
    return {"library": library, "version": version(library.removesuffix("-set")), "passes": passes}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("library", choices=["deepeval", "ragas", "deepeval-set", "ragas-set"])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--cases", required=True, help="JSON file: a list of case objects")
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    # No telemetry, update checks or keys from the environment: nothing leaves the machine.
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    os.environ.setdefault("DEEPEVAL_UPDATE_WARNING_OPT_IN", "NO")
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    with open(args.cases, encoding="utf-8") as handle:
        cases = json.load(handle)
    figures = asyncio.run(
        run(args.library, args.base_url, args.model, cases, args.concurrency, args.repeat)
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

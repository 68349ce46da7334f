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


async def one_pass(
    score: Callable[[dict[str, Any]], Awaitable[float]],
    cases: list[dict[str, Any]],
    run_name: str,
    limit: int,
) -> dict[str, Any]:
    RUN.set(run_name)
    semaphore = asyncio.Semaphore(limit)
    scores: list[float | None] = [None] * len(cases)
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
            scores[index] = value if math.isfinite(value) else None
            if scores[index] is None:
                errors.append(f"case {case['id']}: non-finite score {value!r}")

    started = time.perf_counter()
    await asyncio.gather(*(one(i, case) for i, case in enumerate(cases)))
    wall = time.perf_counter() - started
    return {"wall_s": wall, "scores": scores, "case_seconds": seconds, "errors": errors}


async def run(
    library: str, base_url: str, model: str, cases: list[dict[str, Any]], limit: int, repeat: int
) -> dict[str, Any]:
    factory = {"deepeval": deepeval_scorer, "ragas": ragas_scorer}[library]
    score = factory(base_url, model)
    await one_pass(score, cases[:1], "warmup", 1)  # imports, templates, clients: not counted
    passes = [
        await one_pass(score, cases, f"{library}/r{number}", limit)
        for number in range(1, repeat + 1)
    ]
    return {"library": library, "version": version(library), "passes": passes}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("library", choices=["deepeval", "ragas"])
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

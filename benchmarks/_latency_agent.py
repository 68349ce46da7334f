"""One agent process of `benchmarks/serve_latency.py`: answers requests at a steady rate.

The agent calls a scripted model (in-process `ScriptedEndpoint`, zero latency: one tool
call, then the answer) and exports its spans with the SDK's BatchSpanProcessor and OTLP/HTTP
exporter to `--traces`. Requests start on a fixed schedule (open loop: a slow request does
not delay the next one's start), and each latency runs from its scheduled start to its
answer, so time spent waiting behind the scorer counts. Prints one JSON object: the
latencies in microseconds and what the in-process scorer scored.

Arms: `none` (spans only), `submit` (`Evals.submit` inside the request, after the answer
is ready), `processor` (a `ScoringSpanProcessor` on the agent's tracer provider); the
out-of-process arm is `none` exporting to `agentscore serve`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agentscore import Agent, Evals, Runner, ScoringSpanProcessor, Telemetry, tool
from agentscore.judges import LocalJudge
from agentscore.scorers import create_faithfulness_scorer
from agentscore.testing import ScriptedEndpoint, chat_completion

ANSWER = "Order 42 shipped on May 2 and arrives on May 5."
QUESTION = "Where is order 42?"


@tool
def lookup_order(order_id: int) -> dict[str, Any]:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "shipped", "shipped": "May 2", "eta": "May 5"}


def model() -> ScriptedEndpoint:
    def respond(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "tool":
            return chat_completion(ANSWER)
        return chat_completion(None, tool_calls=[("lookup_order", {"order_id": 42})])

    return ScriptedEndpoint(respond)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arm", choices=("none", "submit", "processor"), required=True)
    parser.add_argument("--traces", required=True)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    args = parser.parse_args()

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(args.traces)))
    telemetry = Telemetry(tracer_provider=provider, capture_content=True)
    runner = Runner(max_queue=100_000, concurrency=4)
    evals = Evals(scorers=[create_faithfulness_scorer(LocalJudge())], runner=runner,
                  telemetry=telemetry)  # fmt: skip
    processor = None
    if args.arm == "processor":
        processor = ScoringSpanProcessor(evals)
        provider.add_span_processor(processor)
    agent = Agent("support", "agent-model", tools=[lookup_order], client=model().client(),
                  telemetry=telemetry)  # fmt: skip

    async def request() -> None:
        result = await agent.generate(QUESTION)
        if args.arm == "submit":
            evals.submit(QUESTION, result.output)

    latencies: list[int] = []

    async def timed(due: int, keep: bool) -> None:
        await request()
        if keep:
            latencies.append((time.perf_counter_ns() - due) // 1000)

    interval = int(1e9 / args.rate)
    total = int((args.warmup + args.seconds) * args.rate)
    warm = int(args.warmup * args.rate)
    tasks = []
    start = time.perf_counter_ns()
    for n in range(total):
        due = start + n * interval
        delay = (due - time.perf_counter_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(timed(due, n >= warm)))
    await asyncio.gather(*tasks)
    await runner.aflush(30)
    if processor is not None:
        processor.force_flush(30_000)
        await runner.aflush(30)
    stats = runner.stats()
    provider.shutdown()
    print(json.dumps({"latencies_us": latencies, "scored": stats.scored, "failed": stats.failed}))


if __name__ == "__main__":
    asyncio.run(main())

"""The agent's added latency with scoring in process vs out of process (`agentscore serve`).

Three agents answer the same scripted model (in-process `ScriptedEndpoint`, zero latency,
one tool call then the answer), each exporting its spans with the SDK's BatchSpanProcessor
and OTLP/HTTP exporter, message content on:

- baseline: spans to an OTLP receiver that answers 200; nothing is scored anywhere;
- in process: the same, plus faithfulness with the local judge on agentscore's background
  runner, in the agent's interpreter (it competes for the GIL);
- out of process: spans to an `agentscore serve` process scoring them with the local judge.

Calls alternate in blocks (A B C C B A ...) so drift hits all three alike; added latency is
each configuration minus the baseline at the same percentile. The run ends by printing what
each scorer scored (and what it still had queued), to show both were busy during the calls.

Usage: python benchmarks/serve_latency.py [--calls N] [--block N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve import receiver, service

from agentscore import Agent, Evals, Runner, Telemetry, tool
from agentscore.judges import LocalJudge
from agentscore.scorers import create_faithfulness_scorer
from agentscore.testing import ScriptedEndpoint, chat_completion

ANSWER = "Order 42 shipped on May 2 and arrives on May 5."


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


def agent(traces_url: str, evals: Evals | None = None) -> tuple[Agent, TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(traces_url)))
    telemetry = Telemetry(tracer_provider=provider, capture_content=True)
    built = Agent(
        "support",
        "agent-model",
        tools=[lookup_order],
        client=model().client(),
        evals=evals,
        telemetry=telemetry,
    )
    return built, provider


def pct(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000


async def run(args: argparse.Namespace, receiver_url: str, serve_url: str) -> None:
    runner = Runner(max_queue=10 * args.calls, concurrency=4)
    evals = Evals(scorers=[create_faithfulness_scorer(LocalJudge())], runner=runner)
    agents = {
        "baseline": agent(f"{receiver_url}/v1/traces"),
        "in process": agent(f"{receiver_url}/v1/traces", evals),
        "out of process": agent(f"{serve_url}/v1/traces"),
    }
    times: dict[str, list[int]] = {name: [] for name in agents}
    order = list(agents)
    for each, _ in agents.values():  # warm-up
        for _ in range(100):
            await each.generate("Where is order 42?")
    for block in range(args.calls // args.block):
        for name in order if block % 2 == 0 else reversed(order):
            each = agents[name][0]
            for _ in range(args.block):
                started = time.perf_counter_ns()
                await each.generate("Where is order 42?")
                times[name].append(time.perf_counter_ns() - started)
    for _, provider in agents.values():
        provider.shutdown()
    in_process = runner.stats()
    runner.shutdown(timeout=0)
    served = await asyncio.to_thread(lambda: httpx.get(f"{serve_url}/healthz").json())
    base = times["baseline"]
    print(f"{'µs':<16}{'p50':>10}{'p90':>10}{'p99':>10}{'added p50':>12}{'added p99':>12}")
    for name, values in times.items():
        added = (pct(values, 0.5) - pct(base, 0.5), pct(values, 0.99) - pct(base, 0.99))
        print(
            f"{name:<16}{pct(values, 0.5):>10.1f}{pct(values, 0.9):>10.1f}"
            f"{pct(values, 0.99):>10.1f}{added[0]:>12.1f}{added[1]:>12.1f}"
        )
    print(f"calls per configuration: {len(base)}; mean baseline {statistics.mean(base) / 1000:.1f}")
    # Both scorers must have been scoring during the calls, or the comparison says nothing.
    print(
        f"in process: {in_process.scored} scored, {in_process.pending} still queued; out of "
        f"process: {served['generations_found']} generations found, {served['scored']} scored, "
        f"{served['pending_jobs']} still queued"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--block", type=int, default=50)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs; load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as directory, receiver() as receiver_url:
        env = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
        with service(Path(directory), receiver_url, env) as serve_url:
            asyncio.run(run(args, receiver_url, serve_url))
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

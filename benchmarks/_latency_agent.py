"""One agent process of `benchmarks/serve_latency.py`: answers requests at a steady rate.

The agent calls a scripted model through the `openai` client (in-process `ScriptedEndpoint`,
zero latency: one tool call, then the answer), records GenAI-convention spans by hand as a
framework's instrumentation would, and exports them with the SDK's BatchSpanProcessor and
OTLP/HTTP exporter to `--traces` (or agentscore's, `--exporter agentscore`). Requests start
at Poisson arrivals of the mean rate (open loop: a slow request does not delay the next
one's start), and each latency runs from its scheduled start to its answer, so time spent
waiting behind the scorer counts. Prints one JSON object: the latencies in microseconds
and what the in-process scorer scored.

Arms: `none` (spans only), `submit` (`Evals.submit` inside the request, after the answer
is ready), `processor` (a `ScoringSpanProcessor` on the agent's tracer provider); the
sidecar arm is `none` exporting to `agentscore serve`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import time
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agentscore import Evals, Runner, ScoringSpanProcessor, Telemetry
from agentscore._runtime.courtesy import GIL_SLICE
from agentscore.judges import LocalJudge
from agentscore.pipeline.runner import HANDOVER_LINGER
from agentscore.scorers import create_faithfulness_scorer
from agentscore.telemetry.otlp import OtlpSpanExporter
from agentscore.testing import ScriptedEndpoint, chat_completion

ANSWER = "Order 42 shipped on May 2 and arrives on May 5."
QUESTION = "Where is order 42?"
ORDER = {"order_id": 42, "status": "shipped", "shipped": "May 2", "eta": "May 5"}
CALL = {"id": "c1", "type": "function",
        "function": {"name": "lookup_order", "arguments": '{"order_id": 42}'}}  # fmt: skip


def model() -> ScriptedEndpoint:
    def respond(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["role"] == "tool":
            return chat_completion(ANSWER)
        return chat_completion(None, tool_calls=[("lookup_order", {"order_id": 42})])

    return ScriptedEndpoint(respond, keep_requests=False)


def after_answer(seconds: float) -> None:
    """The request's work after the answer (rendering it, writing it out): Python work in
    0.5 ms slices, each ended by a system call that lets go of the GIL as a socket write
    does. A scoring thread woken at submit takes the GIL at such a point and keeps it for up
    to the interpreter's switch interval (5 ms)."""
    until = time.perf_counter() + seconds
    while (now := time.perf_counter()) < until:
        stop = min(until, now + 0.0005)
        while time.perf_counter() < stop:
            pass
        time.sleep(0)


class App:
    """An agent instrumented by hand with the GenAI conventions, as a framework's
    instrumentation would (the span processor reads only such foreign spans)."""

    def __init__(self, provider: TracerProvider, evals: Evals | None, after: float) -> None:
        self.tracer = provider.get_tracer("bench-app")
        self.client = model().client()
        self.evals = evals
        self.after = after

    async def request(self) -> None:
        user = {"role": "user", "content": QUESTION}
        with self.tracer.start_as_current_span(
            "invoke_agent support", attributes={"gen_ai.operation.name": "invoke_agent"}
        ) as agent:
            with self.tracer.start_as_current_span("chat agent-model"):
                await self.client.chat.completions.create(model="agent-model", messages=[user])
            with self.tracer.start_as_current_span(
                "execute_tool lookup_order",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup_order",
                    "gen_ai.tool.call.id": "c1",
                    "gen_ai.tool.call.result": json.dumps(ORDER),
                },
            ):
                pass
            tool = {"role": "tool", "tool_call_id": "c1", "content": json.dumps(ORDER)}
            call = {"role": "assistant", "content": None, "tool_calls": [CALL]}
            with self.tracer.start_as_current_span("chat agent-model"):
                await self.client.chat.completions.create(
                    model="agent-model", messages=[user, call, tool]
                )
            parts = [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
            agent.set_attribute("gen_ai.input.messages", json.dumps(parts))
            reply = [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]
            agent.set_attribute("gen_ai.output.messages", json.dumps(reply))
            if self.evals is not None:
                answer = {"role": "assistant", "content": ANSWER}
                self.evals.submit(QUESTION, [call, tool, answer], span=agent)
            after_answer(self.after)


class FullCollections:
    """The interpreter's full (oldest-generation) garbage collections while measuring: each
    pauses every thread of the process, and how often they come depends on how many objects
    outlive a young collection, which scoring in the process adds to."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self.measuring = False
        self._started = 0.0
        gc.callbacks.append(self._observe)

    def _observe(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2 or not self.measuring:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append(time.perf_counter() - self._started)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arm", choices=("none", "submit", "processor"), required=True)
    parser.add_argument("--traces", required=True)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0, help="of the Poisson arrivals")
    parser.add_argument("--linger", type=float, help="the Runner's handover_linger (s)")
    parser.add_argument("--gil-slice", type=float, help="the Runner's gil_slice (s)")
    parser.add_argument("--after-ms", type=float, default=0.0, help="CPU work after submit")
    parser.add_argument(
        "--exporter",
        choices=("sdk", "agentscore"),
        default="sdk",
        help="the span exporter: the SDK's OTLP/HTTP one or agentscore.telemetry.otlp's",
    )
    parser.add_argument(
        "--gc-freeze", action="store_true", help="gc.freeze() once set up, as a tuned agent does"
    )
    args = parser.parse_args()

    provider = TracerProvider()
    exporter = OtlpSpanExporter if args.exporter == "agentscore" else OTLPSpanExporter
    provider.add_span_processor(BatchSpanProcessor(exporter(args.traces)))
    telemetry = Telemetry(tracer_provider=provider, capture_content=True)
    runner = Runner(
        max_queue=100_000,
        concurrency=4,
        # 0: the hand-over as it was before; inf: the loop never pauses for the host.
        handover_linger=HANDOVER_LINGER if args.linger is None else args.linger,
        gil_slice=GIL_SLICE if args.gil_slice is None else args.gil_slice,
    )
    evals = Evals(scorers=[create_faithfulness_scorer(LocalJudge())], runner=runner,
                  telemetry=telemetry)  # fmt: skip
    processor = None
    if args.arm == "processor":
        processor = ScoringSpanProcessor(evals)
        provider.add_span_processor(processor)
    app = App(provider, evals if args.arm == "submit" else None, args.after_ms / 1000)

    latencies: list[int] = []
    if args.gc_freeze:
        # What start-up made (modules, clients, the scorer) leaves the collector's reach, so
        # a full collection walks what requests made, not ~95,000 import-time objects.
        gc.collect()
        gc.freeze()

    async def timed(due: int, keep: bool) -> None:
        await app.request()
        if keep:
            latencies.append((time.perf_counter_ns() - due) // 1000)

    collections = FullCollections()
    total = int((args.warmup + args.seconds) * args.rate)
    warm = int(args.warmup * args.rate)
    # Poisson arrivals at the mean rate, the same sequence in every arm: a fixed period would
    # lock the scorer's start (submit + linger) to one phase of the next request.
    arrivals = random.Random(args.seed)
    offset = 0.0
    # Only the requests in flight are kept, as a server keeps them: a list of every task
    # would age thousands of objects into the oldest GC generation, making full collections
    # (process-wide pauses) come sooner in whichever arm runs.
    in_flight: set[asyncio.Task[None]] = set()
    cpu = time.process_time()
    start = time.perf_counter_ns()
    for n in range(total):
        offset += arrivals.expovariate(args.rate)
        due = start + int(offset * 1e9)
        delay = (due - time.perf_counter_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        collections.measuring = n >= warm
        task = asyncio.create_task(timed(due, n >= warm))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)
    await asyncio.gather(*in_flight)
    collections.measuring = False
    await runner.aflush(30)
    if processor is not None:
        processor.force_flush(30_000)
        await runner.aflush(30)
    cpu_ms = (time.process_time() - cpu) * 1000 / total  # the process's CPU, scoring included
    stats = runner.stats()
    provider.shutdown()
    print(json.dumps({"latencies_us": latencies, "scored": stats.scored, "failed": stats.failed,
                      "cpu_ms_per_request": cpu_ms, "requests": total,
                      "full_gc_ms": [round(p * 1000, 1) for p in collections.pauses]}))  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())

"""Background runner throughput against a 50 ms judge, and memory under a flood of submissions.

(a) Throughput: 2,000 faithfulness runs (distinct outputs, judge cache off, so every run is
    one judge call) submitted to `Runner(concurrency=32, max_queue=10_000)`; the judge takes
    50 ms per call. Wall time runs from the first submit to the end of `flush()`. Ideal is
    concurrency / latency = 32 / 0.05 s = 640 scores/s. The CPU time per run is reported
    too, since the background loop shares one interpreter (one core's worth of Python).
(b) Memory: 100,000 submissions against `Runner(max_queue=10_000)` whose judge does not
    answer during the test, so the queue fills and the rest is dropped. Peak traced memory
    (tracemalloc, all threads) during the submissions is compared with the peak for
    10,000 + 1,000 submissions and with what 100,000 queued runs would take.

The judge is `agentscore.testing.ScriptedEndpoint`: the real `openai` client and its HTTP
stack over an in-process mock transport (no sockets, no network); its latency is an
`anyio.sleep` inside the transport, which does not block the loop.

Usage: python benchmarks/throughput.py [--runs N] [--repeat N] [--flood N]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentscore._runtime.hooks import EXIT_TIMEOUT_ENV  # noqa: E402
from agentscore.judges import OpenAIJudge  # noqa: E402
from agentscore.pipeline.runner import Runner, ScoreJob  # noqa: E402
from agentscore.run import ScorerRun  # noqa: E402
from agentscore.scorers import Scorer, create_faithfulness_scorer  # noqa: E402
from agentscore.testing import ScriptedEndpoint, chat_completion  # noqa: E402

CONCURRENCY = 32
LATENCY = 0.05
IDEAL = CONCURRENCY / LATENCY
TARGET_FRACTION = 0.90
MAX_QUEUE = 10_000
CONTEXT = ["Order 42 shipped on May 2 and arrives on May 5.", "Orders ship from Lyon."]


def judge_endpoint(delay: float) -> ScriptedEndpoint:
    def respond(body: dict[str, Any]) -> Any:
        claims = [
            {"claim": "The order shipped on May 2.", "verdict": "yes", "reason": "context"},
            {"claim": "It ships from Lyon.", "verdict": "yes", "reason": "context"},
        ]
        return chat_completion({"claims": claims}, delay=delay)

    return ScriptedEndpoint(respond)


def faithfulness(judge: ScriptedEndpoint) -> Scorer:
    model = OpenAIJudge("judge", client=judge.client(max_retries=0), use_cache=False)
    return create_faithfulness_scorer(model, context=CONTEXT)


def make_run(i: int) -> ScorerRun:
    return ScorerRun(
        input=f"Where is order {i}, and when does it arrive?",
        output=(
            f"Order {i} shipped on May 2 from our Lyon warehouse and should arrive on May 5; "
            f"the tracking number is TRK{i:08d}. Let me know if anything else comes up."
        ),
        agent_name="support",
    )


def mib(n: float) -> str:
    return f"{n / 2**20:8.2f} MiB"


def throughput(runs: int, attempt: int) -> float:
    judge = judge_endpoint(LATENCY)
    scorer = faithfulness(judge)
    runner = Runner(max_queue=MAX_QUEUE, concurrency=CONCURRENCY, run_timeout=60)

    warm = [make_run(-i) for i in range(1, 65)]
    for run in warm:
        runner.submit(ScoreJob(scorer, run))
    runner.flush(60)
    before = runner.stats()

    batch = [make_run(i) for i in range(runs)]
    gc.collect()
    cpu_started = time.process_time()
    started = time.perf_counter()
    for run in batch:
        runner.submit(ScoreJob(scorer, run))
    submitted_s = time.perf_counter() - started
    flushed = runner.flush(120)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    after = runner.stats()

    scored = after.scored - before.scored
    failed = after.failed - before.failed
    rate = scored / wall
    fraction = rate / IDEAL
    requests = len(judge.requests) - len(warm)
    cpu_per_run_ms = cpu / runs * 1000
    print(f"(a) throughput, attempt {attempt}")
    print(
        f"  {runs} runs, concurrency {CONCURRENCY}, judge latency {LATENCY * 1000:.0f} ms, "
        f"max_queue {MAX_QUEUE}; judge requests {requests} (cache off)"
    )
    print(
        f"  submit loop {submitted_s * 1000:.1f} ms; first submit to flush "
        f"{'done' if flushed else 'TIMED OUT'}: {wall:.3f} s (ideal {runs / IDEAL:.3f} s)"
    )
    print(f"  scored {scored}, failed {failed}, dropped {after.dropped - before.dropped}")
    print(
        f"  {rate:.1f} scores/s = {fraction:.1%} of ideal ({IDEAL:.0f}/s = "
        f"{CONCURRENCY} / {LATENCY} s)"
    )
    print(
        f"  process CPU {cpu:.2f} s = {cpu_per_run_ms:.2f} ms per run "
        f"(CPU-bound ceiling ≈ {1000 / cpu_per_run_ms:.0f} runs/s on one interpreter)"
    )
    ok = fraction >= TARGET_FRACTION and scored == runs
    print(
        f"  target >= {TARGET_FRACTION:.0%} of ideal: {'PASS' if ok else 'MISS'} ({fraction:.1%})"
    )
    return rate if scored == runs else 0.0


def flood(count: int, scorer: Scorer) -> tuple[Runner, int, int, float]:
    """Submit `count` fresh runs; the peak and net traced bytes above the start, and time."""
    runner = Runner(max_queue=MAX_QUEUE, concurrency=CONCURRENCY, run_timeout=None)
    gc.collect()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    started = time.perf_counter()
    for i in range(count):
        runner.submit(ScoreJob(scorer, make_run(i)))
    elapsed = time.perf_counter() - started
    time.sleep(0.2)  # let the dispatcher take its first slots
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    return runner, peak - base, current - base, elapsed


def identity(label: str, runner: Runner) -> bool:
    s = runner.stats()
    holds = s.submitted == s.scored + s.failed + s.dropped + s.pending
    print(
        f"  {label}: submitted {s.submitted} = scored {s.scored} + failed {s.failed} "
        f"+ dropped {s.dropped} + pending {s.pending}  ({'holds' if holds else 'BROKEN'})"
    )
    return holds


def memory(flood_count: int) -> bool:
    # The judge never answers while we measure (1 hour latency): the queue stays full.
    scorer = faithfulness(judge_endpoint(3600.0))
    small = MAX_QUEUE + 1_000
    tracemalloc.start()
    small_runner, small_peak, small_net, small_s = flood(small, scorer)
    big_runner, big_peak, big_net, big_s = flood(flood_count, scorer)
    tracemalloc.stop()

    queued = small_runner.stats().pending
    per_run = small_net / queued
    unbounded = per_run * flood_count
    ratio = big_peak / small_peak
    print("(b) memory (tracemalloc, traced bytes above the start of each flood)")
    print(
        f"  judge never answers during the test; max_queue {MAX_QUEUE}, concurrency "
        f"{CONCURRENCY} ({CONCURRENCY} runs in flight, the rest queued or dropped)"
    )
    for count, peak, net, seconds in (
        (small, small_peak, small_net, small_s),
        (flood_count, big_peak, big_net, big_s),
    ):
        print(
            f"  {count:>7} submissions: peak {mib(peak)}, held after {mib(net)}  ({seconds:.1f} s)"
        )
    print(f"  per pending run: {per_run:,.0f} bytes (held / {queued} pending)")
    print(
        f"  {flood_count} runs all held would take ≈ {mib(unbounded)}; "
        f"measured peak is {big_peak / unbounded:.1%} of that"
    )
    print(f"  peak ratio {flood_count} vs {small} submissions: {ratio:.3f}")
    holds = identity(f"{small} flood", small_runner) & identity(f"{flood_count} flood", big_runner)
    print(f"  dropped in the {flood_count} flood: {big_runner.stats().dropped}")
    print(f"  process max RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")
    ok = holds and ratio < 1.25
    print(
        "  target memory bounded by the queue, not by submissions (peak ratio < 1.25): "
        f"{'PASS' if ok else 'MISS'} ({ratio:.3f})"
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="runs for the throughput test")
    parser.add_argument("--repeat", type=int, default=3, help="throughput repetitions")
    parser.add_argument(
        "--flood", type=int, default=100_000, help="submissions for the memory test"
    )
    args = parser.parse_args()
    print(
        f"agentscore throughput benchmark — python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    print("judge: in-process ScriptedEndpoint (real openai client + HTTP stack, no sockets)")
    rates = [throughput(args.runs, attempt) for attempt in range(1, args.repeat + 1)]
    median = statistics.median(rates)
    verdict = "PASS" if median / IDEAL >= TARGET_FRACTION else "MISS"
    print(
        f"  median of {len(rates)}: {median:.1f} scores/s = {median / IDEAL:.1%} of ideal; "
        f"target >= {TARGET_FRACTION:.0%}: {verdict}"
    )
    print()
    memory(args.flood)
    # The flooded runners' judge never answers: exit without the default 5 s drain wait.
    os.environ[EXIT_TIMEOUT_ENV] = "0"
    return 0


if __name__ == "__main__":
    sys.exit(main())

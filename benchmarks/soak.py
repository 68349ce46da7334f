"""Soak: 10,000 agent runs scored through real HTTP while the judge misbehaves.

A judge endpoint on 127.0.0.1 (the benchmark judge of `_judge_server.py`) answers 20% of
requests with a fault: 429, 500, a hang past the client timeout, malformed JSON, or a 200
whose body is not JSON. Agents run on threads (`generate_sync`), asyncio and trio; all share
one runner. Printed: the accounting identity, the judge requests per run as the server saw
them (max), failures by error type, RSS at start, peak and end, and the final flush time.

Usage: python benchmarks/soak.py [--runs 10000] [--fault-rate 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import re
import resource
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import structlog
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _judge_server import JudgeServer

from agentscore import Agent
from agentscore.judges.openai import OpenAIJudge
from agentscore.pipeline.runner import Runner
from agentscore.result import ScoreResult
from agentscore.scorers import create_hallucination_scorer
from agentscore.testing import ScriptedEndpoint, chat_completion

FAULTS = ("429", "500", "hang", "malformed_json", "non_json_200")
_RUN = re.compile(r"ticket T(\d+)")


class FaultyJudge(JudgeServer):
    def __init__(self, fault_rate: float, hang: float) -> None:
        super().__init__(latency=0.0)
        self.fault_rate, self.hang = fault_rate, hang
        self.random = random.Random(7)
        self.per_run: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                headers: dict[str, str] = {}
                while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = header.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                status, data = await self.answer(body)
                writer.write(
                    f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
                del line
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()

    async def answer(self, body: bytes) -> tuple[int, bytes]:
        match = _RUN.search(body.decode("utf-8", "replace"))
        self.per_run[match.group(1) if match else "?"] += 1
        fault = self.random.choice(FAULTS) if self.random.random() < self.fault_rate else None
        if fault:
            self.faults[fault] += 1
        if fault in ("429", "500"):
            return int(fault or 0), b'{"error": {"message": "injected", "type": "soak"}}'
        if fault == "hang":
            await asyncio.sleep(self.hang)
        if fault == "non_json_200":
            return 200, b"<html>502 Bad Gateway from the proxy</html>"
        status, payload = await self.chat({}, body)
        if fault == "malformed_json" and status == 200:
            payload["choices"][0]["message"]["content"] = '{"claims": [{"claim": '
        return status, json.dumps(payload).encode()


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    args = parser.parse_args()
    # Two thousand expected `scorer_failed` warnings would bury the figures.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))

    server = FaultyJudge(args.fault_rate, hang=3.0)
    ready = threading.Event()
    port: list[int] = []

    async def serve() -> None:
        listener = await asyncio.start_server(server.handle, "127.0.0.1", 0, backlog=512)
        port.append(listener.sockets[0].getsockname()[1])
        ready.set()
        await listener.serve_forever()

    threading.Thread(target=lambda: asyncio.run(serve()), daemon=True).start()
    ready.wait()

    rss_start = rss_mb()
    results: Counter[str] = Counter()
    errors: Counter[str] = Counter()

    def record(result: ScoreResult) -> None:
        results[result.status.value] += 1
        if result.error is not None:
            errors[result.error.type] += 1

    runner = Runner(max_queue=10_000, concurrency=32, run_timeout=30.0, on_score=record)
    judge = OpenAIJudge(
        "soak-judge",
        base_url=f"http://127.0.0.1:{port[0]}/v1",
        api_key="soak-key-not-secret",
        timeout=1.0,
        max_retries=2,
        use_cache=False,
    )
    context = ["Order 1042 shipped on Monday.", "Refunds take 5 days."]
    scorer = create_hallucination_scorer(judge, context=context)

    def make_agent(name: str) -> tuple[Agent, ScriptedEndpoint]:
        counter = iter(range(10**9))
        model = ScriptedEndpoint(
            lambda body: chat_completion(
                f"Order 1042 shipped on Monday, ticket T{name}{next(counter)}."
            ),
            keep_requests=False,  # the soak's RSS is agentscore's, not the model's log
        )
        agent = Agent(
            name, "m", client=model.client(), evals={"scorers": [scorer], "runner": runner}
        )
        return agent, model

    share = args.runs // 10
    plan = {"threads": share * 4, "asyncio": share * 3, "trio": args.runs - share * 7}
    peak = [rss_start]
    started = time.perf_counter()

    def thread_worker(index: int, count: int) -> None:
        agent, _ = make_agent(f"1{index}")
        for _ in range(count):
            agent.generate_sync("Where is order 1042?")

    async def async_agents(prefix: str, count: int, parallel: int = 4) -> None:
        agents = [make_agent(f"{prefix}{i}")[0] for i in range(parallel)]
        for start in range(0, count, parallel):
            batch = agents[: min(parallel, count - start)]
            if prefix == "2":
                await asyncio.gather(*(a.generate("Where is order 1042?") for a in batch))
            else:
                async with trio.open_nursery() as nursery:
                    for agent in batch:
                        nursery.start_soon(agent.generate, "Where is order 1042?")
            if start % 500 == 0:
                peak[0] = max(peak[0], rss_mb())

    threads = [
        threading.Thread(target=thread_worker, args=(i, plan["threads"] // 4)) for i in range(4)
    ]
    for thread in threads:
        thread.start()
    asyncio.run(async_agents("2", plan["asyncio"]))
    trio.run(async_agents, "3", plan["trio"])
    for thread in threads:
        thread.join()
    submitted_at = time.perf_counter()
    flush_started = time.perf_counter()
    flushed = runner.flush(timeout=300)
    flush_seconds = time.perf_counter() - flush_started
    peak[0] = max(peak[0], rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    stats = runner.stats()

    print(f"runs: {args.runs} ({plan}), judge fault rate {args.fault_rate:.0%}")
    print(f"agents done in {submitted_at - started:.1f} s; flush {flush_seconds:.2f} s ({flushed})")
    identity = stats.scored + stats.failed + stats.dropped + stats.pending
    print(
        f"submitted {stats.submitted} = scored {stats.scored} + failed {stats.failed} + "
        f"dropped {stats.dropped} + pending {stats.pending} -> "
        f"{'holds' if identity == stats.submitted else 'BROKEN'}"
    )
    per_run = [n for run, n in server.per_run.items() if run != "?"]
    print(
        f"judge requests: {sum(server.per_run.values())}, per run max {max(per_run)}, "
        f"mean {sum(per_run) / len(per_run):.2f}; unattributed {server.per_run['?']}"
    )
    print(f"injected faults: {dict(server.faults)}")
    print(f"failures by error type: {dict(errors.most_common())}")
    print(f"RSS MB: start {rss_start:.0f}, peak {peak[0]:.0f}, end {rss_mb():.0f}")
    if identity != stats.submitted or stats.pending or not flushed:
        sys.exit(1)


if __name__ == "__main__":
    main()

"""The spend budget in `agentscore serve`: a window spent mid-run delays the jobs already on
disk (they wait there, and are judged in the next window), refuses new generations
(`over_budget`, no job row), shows on /healthz, and is set by `--spend-per-hour` /
`--spend-per-day`.

The service runs in this process (its real app under uvicorn on 127.0.0.1, its real worker)
so that the budget's clock can be moved to the next hour instead of waiting one; the
options' wiring is checked on a real `agentscore serve` subprocess.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from agentscore import Evals
from agentscore.judges import OpenAIJudge
from agentscore.pipeline.generation import Generation
from agentscore.run import ScorerRun
from agentscore.scorers import create_faithfulness_scorer
from agentscore.serve.queue import Commit, Job, JobKey, SqliteQueue
from agentscore.serve.readahead import ReadAhead
from agentscore.serve.service import ServeOptions, build_service
from agentscore.telemetry.core import AGENTSCORE_SCOPE, PRICES_ENV
from agentscore.telemetry.ledger import OVER_BUDGET, ledger_for
from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion
from tests.support.http_server import http_server
from tests.support.serve import (
    ANSWER,
    ROOT,
    SERVE_SCORERS,
    free_port,
    protobuf_request,
    recorded_generations,
    serving,
    wait_for,
)

HOUR = 3600.0
TEN_O_CLOCK = 1_700_000_000 - 1_700_000_000 % 86_400 + 10 * 3600
# 1,000 input and 250 output tokens at 1 and 4 per million: 0.002 a request.
PRICES = '{"judge-model": [1.0, 4.0]}'
CALL_COST = 0.002


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def supported(body: dict[str, Any]) -> ScriptedReply:
    reply = {"claims": [{"claim": "Order 1042 shipped.", "verdict": "yes", "reason": "stated"}]}
    return chat_completion(reply, prompt_tokens=1000, completion_tokens=250)


@contextmanager
def service_in_process(options: ServeOptions, evals: Evals, clock: Clock) -> Iterator[str]:
    app = build_service(options, evals, clock=clock)
    config = uvicorn.Config(app, host="127.0.0.1", port=options.port, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{options.port}"
    try:
        wait_for(lambda: server.started, what="the service to start")
        yield url
    finally:
        server.should_exit = True
        thread.join(60)


def post(url: str, answers: list[str]) -> None:
    body = protobuf_request(recorded_generations(answers))
    reply = httpx.post(
        f"{url}/v1/traces",
        content=body,
        headers={"Content-Type": "application/x-protobuf"},
        timeout=10,
    )
    assert reply.status_code == 200, reply.text


def health(url: str) -> dict[str, Any]:
    return dict(httpx.get(f"{url}/healthz", timeout=5).json())


def over_budget_count() -> int:
    counts = ledger_for(None, AGENTSCORE_SCOPE).counts()  # JSONL mode: the global meter
    return sum(n for key, n in counts.items() if key[:2] == (OVER_BUDGET, "faithfulness"))


def test_a_spent_window_delays_jobs_on_disk_and_refuses_new_ones_until_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)  # evaluations go to a JSONL file
    monkeypatch.setenv(PRICES_ENV, PRICES)
    clock = Clock(TEN_O_CLOCK + 60)
    endpoint = ScriptedEndpoint(supported)
    judge = OpenAIJudge("judge-model", client=endpoint.client(max_retries=0), use_cache=False)
    evals = Evals(scorers=[create_faithfulness_scorer(judge)])
    options = ServeOptions(
        scorers="unused",
        port=free_port(),
        grpc_port=None,
        queue=str(tmp_path / "queue.db"),
        jsonl=str(tmp_path / "evaluations.jsonl"),
        concurrency=1,
        spend_per_hour=0.0035,  # the second request reaches it
    )
    before = over_budget_count()
    with service_in_process(options, evals, clock) as url:
        # Three generations on disk in one commit; the budget is reached by the second.
        post(url, [f"{ANSWER} ({n})" for n in range(3)])
        wait_for(lambda: health(url)["scored"] == 2, what="two scores")
        state = health(url)
        assert state["spend"]["hour"] == {
            "budget": 0.0035,
            "spent": pytest.approx(2 * CALL_COST),
            "window_end": TEN_O_CLOCK + HOUR,
            "reached": True,
        }
        assert state["pending_jobs"] == 1  # delayed: it waits on disk, not dropped
        assert state["status"] == "ok"
        # New generations while the window is spent: counted, never queued.
        post(url, [f"{ANSWER} (late {n})" for n in range(2)])
        state = health(url)
        assert (state["over_budget"], state["pending_jobs"]) == (2, 1)
        assert over_budget_count() - before == 2
        # The worker keeps polling (every 50 ms to 1 s); the job on disk is not started.
        time.sleep(1.5)
        assert endpoint.request_count == 2
        assert health(url)["scored"] == 2

        clock.now = TEN_O_CLOCK + HOUR  # the next hour: the delayed job is judged
        wait_for(lambda: health(url)["scored"] == 3, what="the delayed job's score")
        state = health(url)
        assert endpoint.request_count == 3
        assert state["pending_jobs"] == 0
        assert state["spend"]["hour"]["reached"] is False
        assert state["spend"]["hour"]["spent"] == pytest.approx(CALL_COST)
        post(url, [f"{ANSWER} (next hour)"])
        wait_for(lambda: health(url)["scored"] == 4, what="a new generation's score")
        assert health(url)["over_budget"] == 2


def test_serve_takes_the_spend_options_and_shows_the_budget_on_healthz(tmp_path: Path) -> None:
    with (
        http_server() as collector,
        serving(
            tmp_path,
            collector.url,
            "--spend-per-hour",
            "0.5",
            "--spend-per-day",
            "2",
            env={PRICES_ENV: PRICES},
        ) as serve,
    ):
        spend = serve.health()["spend"]
        now = time.time()
        assert spend["hour"]["budget"] == 0.5
        assert spend["day"]["budget"] == 2.0
        assert spend["hour"]["spent"] == 0.0
        assert now < spend["hour"]["window_end"] <= now + HOUR
        assert spend["hour"]["window_end"] % HOUR == 0
        assert spend["day"]["window_end"] % 86_400 == 0


def test_serve_refuses_a_spend_budget_that_is_not_positive(tmp_path: Path) -> None:
    command = ["serve", "--scorers", SERVE_SCORERS, "--spend-per-day", "-1"]
    done = subprocess.run(
        [sys.executable, "-m", "agentscore.cli", *command, "--queue", str(tmp_path / "q.db")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2
    assert "SpendBudget per_day" in done.stderr


@pytest.mark.anyio
async def test_a_spent_budget_reads_only_the_jobs_of_unpriced_judges(tmp_path: Path) -> None:
    queue = SqliteQueue(tmp_path / "queue.db")
    runs = [ScorerRun(run_id=f"r{n}", output=f"answer {n}") for n in range(3)]
    jobs = [
        ((f"{n + 1:032x}", f"{n + 1:016x}", scorer), run)
        for n, run in enumerate(runs)
        for scorer in ("priced", "free")
    ]
    for job in jobs:  # one commit each: each its own age
        queue.commit(Commit(jobs=[job]))
    ahead = ReadAhead(queue, 4, lambda _: {})

    in_flight: set[JobKey] = set()  # as the worker's: what it took is not read again

    def busy() -> set[JobKey]:
        return in_flight

    def named(taken: list[tuple[Job, Generation | None]]) -> list[tuple[str, str]]:
        in_flight.update(job.key for job, _ in taken)
        return [(job.scorer_id, job.run.run_id) for job, _ in taken]

    assert named(await ahead.take(1, busy)) == [("priced", "r0")]  # 3 more read ahead
    # The budget is spent: only the free judge's jobs, the held priced one left in place.
    assert named(await ahead.take(2, busy, frozenset({"free"}))) == [("free", "r0"), ("free", "r1")]
    assert named(await ahead.take(1, busy, frozenset({"free"}))) == [("free", "r2")]  # from disk
    # The next window: the held priced job is first in line, then the rest from disk.
    assert named(await ahead.take(4, busy)) == [("priced", "r1"), ("priced", "r2")]
    queue.close()

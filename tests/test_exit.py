"""Interpreter exit: pending scores get their deadline, and the exit never overruns it.

Each test runs a real Python process that submits work and exits at once.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.chat import judge_reply
from tests.support.http_server import Reply, Request, http_server

VERDICTS = {"claims": [{"claim": "Order 1042 shipped.", "verdict": "yes", "reason": "stated"}]}


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "OTEL_SDK_DISABLED": "", **env},
    )


def test_scores_pending_at_exit_are_scored_when_no_request_had_completed() -> None:
    def slow_judge(request: Request) -> Reply:
        return judge_reply(VERDICTS, delay=0.3)

    with http_server(slow_judge) as server:
        done = run_python(
            """
            import os, sys
            from agentscore.judges.openai import OpenAIJudge
            from agentscore.pipeline.runner import ScoreJob, default_runner
            from agentscore.run import ScorerRun
            from agentscore.scorers import create_faithfulness_scorer

            judge = OpenAIJudge("judge", base_url=os.environ["JUDGE_URL"],
                                api_key="test-key-0123456789")
            scorer = create_faithfulness_scorer(judge, context=["Order 1042 shipped."])
            runner = default_runner()
            # One write per line: sync sinks run in worker threads, side by side.
            runner.add_sink(lambda r: sys.stdout.write(
                f"RESULT {r.status.value} {r.score} {r.error and r.error.type}\\n"))
            for i in range(3):
                runner.submit(ScoreJob(scorer, ScorerRun(output=f"Order 1042 shipped. ({i})")))
            """,
            AGENTSCORE_EXIT_FLUSH_TIMEOUT="5",
            JUDGE_URL=server.base_url,
        )
    results = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    assert results == ["RESULT scored 1.0 None"] * 3, done.stdout + done.stderr
    assert "cannot schedule new futures" not in done.stderr
    assert len(server.requests) == 3


@contextmanager
def silent_endpoint() -> Iterator[str]:
    """Accepts connections, reads what it is sent, and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()


def test_exit_with_an_otlp_endpoint_that_never_answers_keeps_the_deadline() -> None:
    with silent_endpoint() as endpoint:
        done = run_python(
            """
            import atexit, time

            # Registered first, so it runs last: the time every exit hook took together.
            atexit.register(lambda: print("EXIT_SECONDS", time.monotonic() - started))
            from agentscore.scorers import create_hallucination_scorer
            from agentscore.pipeline.runner import ScoreJob, default_runner
            from agentscore.run import ScorerRun
            from agentscore.telemetry.setup import setup_telemetry

            setup = setup_telemetry("exit-test")
            scorer = create_hallucination_scorer("local", context=["Order 1042 shipped."])
            for i in range(3):
                default_runner().submit(
                    ScoreJob(scorer, ScorerRun(output="Order 1042 shipped."), setup.telemetry)
                )
            print("DESTINATION", setup.destination, flush=True)
            started = time.monotonic()
            """,
            OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
            AGENTSCORE_EXIT_FLUSH_TIMEOUT="2",
        )
    assert f"DESTINATION OTLP/HTTP {endpoint}" in done.stdout, done.stdout + done.stderr
    seconds = float(done.stdout.split("EXIT_SECONDS")[1].split()[0])
    # The exporters alone would wait 10 s per signal; the deadline is 2 s (the rest: slack for
    # a busy machine).
    assert seconds < 9, done.stdout + done.stderr

"""After fork() the child scores on its own: fresh loops and runners, nothing pending forever.

Pre-forking servers (gunicorn --preload) import the app, and so start agentscore's threads,
in the parent; the children inherit the state but not the threads.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from agentscore import Agent
from agentscore.pipeline.runner import Runner
from agentscore.scorers import create_hallucination_scorer
from agentscore.testing import ScriptedEndpoint, chat_completion

ANSWER = "Order 1042 shipped."


def make_agent(runner: Runner) -> Agent:
    model = ScriptedEndpoint(lambda body: chat_completion(ANSWER))
    scorer = create_hallucination_scorer("local", context=[ANSWER])
    return Agent(
        "support", "m", client=model.client(), evals={"scorers": [scorer], "runner": runner}
    )


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_child_of_a_bare_fork_scores_and_generate_sync_returns() -> None:
    runner = Runner()
    agent = make_agent(runner)
    agent.generate_sync("Where is order 1042?")  # the warm-up: loops and dispatcher started
    assert runner.flush(timeout=10) and runner.stats().scored == 1

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running the parent's exit hooks
        signal.alarm(30)  # a hang must end the child, not the test run
        try:
            result = agent.generate_sync("Where is order 1042?")
            flushed = runner.flush(timeout=10)
            stats = runner.stats()
            report = {"text": result.text, "flushed": flushed, "stats": list(vars_of(stats))}
            report["score"] = agent.scores[-1].score if agent.scores else None
            os.write(write_end, json.dumps(report).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        report = json.loads(pipe.read() or "{}")
    os.waitpid(pid, 0)
    assert report["text"] == ANSWER and report["flushed"] is True
    # The child's runner starts from zero: the parent's finished run is the parent's.
    assert report["stats"] == [1, 1, 0, 0, 0]
    assert report["score"] == 0.0
    # The parent is untouched by its child's fork.
    agent.generate_sync("Where is order 1042?")
    assert runner.flush(timeout=10) and runner.stats().scored == 2


def vars_of(stats: object) -> list[int]:
    return [
        getattr(stats, name) for name in ("submitted", "scored", "failed", "dropped", "pending")
    ]


APP = """
import os
from agentscore import Agent
from agentscore.pipeline.runner import default_runner
from agentscore.scorers import create_hallucination_scorer
from agentscore.testing import ScriptedEndpoint, chat_completion

model = ScriptedEndpoint(lambda body: chat_completion("Order 1042 shipped."))
scorer = create_hallucination_scorer("local", context=["Order 1042 shipped."])
agent = Agent("support", "m", client=model.client(), evals={"scorers": [scorer]})
agent.generate_sync("warm-up")  # at import: gunicorn --preload runs it in the master
assert default_runner().flush(timeout=10)
MASTER = os.getpid()

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    result = agent.generate_sync("Where is order 1042?")  # blocks, as sync views do
    await agent.aflush(timeout=10)
    stats = default_runner().stats()
    body = (
        f'{{"text": "{result.text}", "pid": {os.getpid()}, "master": {MASTER}, '
        f'"scored": {stats.scored}, "pending": {stats.pending}}}'
    ).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})
"""


def test_gunicorn_preload_workers_score_after_a_warm_up_in_the_master(tmp_path: Path) -> None:
    pytest.importorskip("gunicorn")
    (tmp_path / "forked_app.py").write_text(textwrap.dedent(APP))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--preload",
            "-w",
            "2",
            "-k",
            "uvicorn.workers.UvicornWorker",
            "-b",
            f"127.0.0.1:{port}",
            "forked_app:app",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        replies = [json.loads(get(f"http://127.0.0.1:{port}/")) for _ in range(3)]
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=30)
    for reply in replies:
        assert reply["text"] == ANSWER and reply["pid"] != reply["master"]
        assert reply["scored"] >= 1 and reply["pending"] == 0, errors
    assert b"Traceback" not in errors


def get(url: str) -> bytes:
    deadline = time.monotonic() + 60  # the server's start-up, not a speed claim
    while True:
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                body: bytes = response.read()
                return body
        except (ConnectionError, urllib.error.URLError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)

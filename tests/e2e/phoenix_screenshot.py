"""Look at what `agentscore serve` puts in a real Phoenix, as a user would: screenshots of
the project's trace list and span list, taken with headless Chromium.

It starts Phoenix (the e2e harness's venv, tests/e2e/phoenix.py), starts `agentscore serve`
forwarding to it (the tests' scorers: faithfulness with the local judge, and Phoenix
annotations as the sink), sends one right and one wrong answer over OTLP/gRPC with the
OpenTelemetry SDK's exporter, waits for both evaluations, then saves `<out>/traces.png` (the
trace list) and `<out>/evaluation.png` (the wrong answer's trace, its evaluation span open).

Needs Debian's `chromium` (`apt-get install chromium`). From the repository root:

    .venv/bin/python -m tests.e2e.phoenix_screenshot [--out DIR] [--capture-content]
                                                    [--llm-judge]

With `--llm-judge` the service judges through an `OpenAIJudge` configured by URL (its own
HTTP client) against a scripted endpoint that judges the wrong answer's claim unsupported,
so the evaluation's trace also shows the judge's chat span.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from agentscore.testing import ScriptedEndpoint, ScriptedReply, chat_completion
from tests.e2e.phoenix import PROJECT_NAME_ATTRIBUTE, Span, run_phoenix, spans_named
from tests.support.serve import ANSWER, WRONG, serving, traced_generation

LABEL = "gen_ai.evaluation.score.label"


def scripted_judge(body: dict[str, Any]) -> ScriptedReply:
    """The one-call reply: the answer is one claim, supported unless it is the wrong one."""
    wrong = WRONG in str(body["messages"][-1]["content"])
    claim = {
        "claim": WRONG if wrong else ANSWER,
        "verdict": "no" if wrong else "yes",
        "reason": "the order record says otherwise" if wrong else "stated in the order record",
    }
    return chat_completion({"claims": [claim]})


def screenshot(url: str, path: Path, *, width: int = 1600, height: int = 900) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        sys.exit("needs Chromium: apt-get install chromium")
    subprocess.run(
        [
            browser,
            "--headless=new",
            "--no-sandbox",  # root in a container
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            "--virtual-time-budget=20000",  # let the app fetch and render its data
            f"--screenshot={path}",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=Path("phoenix-screenshots"))
    parser.add_argument("--capture-content", action="store_true")
    parser.add_argument("--llm-judge", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    project = f"agentscore-serve-{uuid.uuid4().hex[:6]}"
    with (
        tempfile.TemporaryDirectory() as directory,
        run_phoenix(Path(directory)) as phoenix,
        contextlib.ExitStack() as stack,
    ):
        otel = {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": phoenix.otlp_traces_endpoint,
            "OTEL_RESOURCE_ATTRIBUTES": f"{PROJECT_NAME_ATTRIBUTE}={project}",
        }
        options = ["--forward", phoenix.otlp_traces_endpoint]
        options += ["--capture-content"] if args.capture_content else []
        env = {"SERVE_TEST_SINK": "phoenix", "PHOENIX_COLLECTOR_ENDPOINT": phoenix.base_url}
        if args.llm_judge:
            judge_url = stack.enter_context(ScriptedEndpoint(scripted_judge).serve())
            env |= {"SERVE_TEST_JUDGE": "http", "SERVE_TEST_JUDGE_URL": judge_url}
        with serving(Path(directory), phoenix.base_url, *options, otel=otel, env=env) as serve:
            app = Resource.create({PROJECT_NAME_ATTRIBUTE: project, "service.name": "support"})
            provider = TracerProvider(resource=app)
            exporter = OTLPSpanExporter(endpoint=f"http://{serve.grpc_target}", insecure=True)
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            for index, answer in enumerate([ANSWER, WRONG]):
                traced_generation(provider, answer, request=index)
            provider.shutdown()

            def scored(spans: list[Span]) -> bool:
                return len(spans_named(spans, "evaluation faithfulness")) == 2

            spans = phoenix.wait_for_spans(project, scored, timeout=60)
        projects = httpx.get(f"{phoenix.base_url}/v1/projects", timeout=10, trust_env=False)
        [project_id] = [p["id"] for p in projects.json()["data"] if p["name"] == project]
        # The wrong answer's evaluation, selected in its trace's view (the Info pane shows
        # the span's input and output).
        [failed] = [
            span
            for span in spans_named(spans, "evaluation faithfulness")
            if span["attributes"].get(LABEL) == "fail"
        ]
        trace = f"traces/{failed['context']['trace_id']}?selectedSpanNodeId={failed['id']}"
        for page, path in (("traces.png", ""), ("evaluation.png", trace)):
            screenshot(f"{phoenix.base_url}/projects/{project_id}/{path}", args.out / page)
            print(args.out / page)


if __name__ == "__main__":
    main()

"""Score sinks for backends with a first-class score API: Phoenix annotations, Langfuse scores.

Off by default: add one to a runner (`runner.add_sink(PhoenixAnnotations())`) or pass it as
`on_score`. Each posts from a worker thread, so the background loop keeps scoring; a failure
is logged (status and error type, never the key) and never raised. The explanation follows
the content rule of the evaluation span: a verdict count unless `capture_content=True`.
"""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.request
from typing import Any

import anyio.to_thread
import structlog

from agentscore.result import ScoreResult
from agentscore.telemetry.evaluations import explanation_for

__all__ = ["LangfuseScores", "PhoenixAnnotations"]

_log = structlog.get_logger("agentscore.backends")


class PhoenixAnnotations:
    """Each result becomes a span annotation on the agent's span (POST /v1/span_annotations),
    named after the scorer, so Phoenix lists it with its other evaluations."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        capture_content: bool = False,
        timeout: float = 10.0,
    ) -> None:
        self.base_url = (
            base_url or os.environ.get("PHOENIX_COLLECTOR_ENDPOINT") or "http://127.0.0.1:6006"
        ).rstrip("/")
        self._api_key = api_key or os.environ.get("PHOENIX_API_KEY")
        self.capture_content = capture_content
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"PhoenixAnnotations({self.base_url!r})"

    async def __call__(self, result: ScoreResult) -> None:
        if not result.span_id:
            return
        annotation = {
            "span_id": result.span_id,
            "name": result.scorer_id,
            "annotator_kind": "LLM",
            "identifier": f"agentscore:{result.run_id}",
            "result": {
                "score": result.score,
                "label": result.label or result.status.value,
                "explanation": explanation_for(result, self.capture_content),
            },
            "metadata": {"status": result.status.value, "judge_model": result.judge_model},
        }
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        await _post(
            f"{self.base_url}/v1/span_annotations",
            {"data": [annotation]},
            headers,
            self.timeout,
        )


class LangfuseScores:
    """Each result becomes a Langfuse score (POST /api/public/scores) on the trace and
    observation that Langfuse derived from the OTel ids. Keys default to LANGFUSE_PUBLIC_KEY,
    LANGFUSE_SECRET_KEY and LANGFUSE_HOST."""

    def __init__(
        self,
        host: str | None = None,
        *,
        public_key: str | None = None,
        secret_key: str | None = None,
        capture_content: bool = False,
        timeout: float = 10.0,
    ) -> None:
        self.host = (
            host or os.environ.get("LANGFUSE_HOST") or "https://cloud.langfuse.com"
        ).rstrip("/")
        self._public_key = public_key or os.environ.get("LANGFUSE_PUBLIC_KEY", "")
        self._secret_key = secret_key or os.environ.get("LANGFUSE_SECRET_KEY", "")
        self.capture_content = capture_content
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"LangfuseScores({self.host!r})"

    async def __call__(self, result: ScoreResult) -> None:
        if result.score is None or not result.trace_id:
            return
        score = {
            "id": f"agentscore-{result.run_id}-{result.scorer_id}",
            "traceId": result.trace_id,
            "observationId": result.span_id,
            "name": result.scorer_id,
            "value": result.score,
            "dataType": "NUMERIC",
            "comment": explanation_for(result, self.capture_content),
        }
        credentials = f"{self._public_key}:{self._secret_key}".encode()
        headers = {"Authorization": "Basic " + base64.b64encode(credentials).decode()}
        await _post(
            f"{self.host}/api/public/scores",
            score,
            headers,
            self.timeout,
        )


async def _post(url: str, payload: Any, headers: dict[str, str], timeout: float) -> None:
    """POST JSON; failures are logged by status or error type only (headers hold keys)."""

    def send() -> None:
        request = urllib.request.Request(
            url,
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json", **headers},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()

    try:
        await anyio.to_thread.run_sync(send)
    except urllib.error.HTTPError as exc:
        _log.warning("score_backend_rejected", url=url, status=exc.code)
    except (OSError, ValueError) as exc:
        _log.warning("score_backend_unreachable", url=url, error_type=type(exc).__name__)

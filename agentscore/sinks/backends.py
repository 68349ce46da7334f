"""Score sinks for backends with a first-class score API: Phoenix annotations, Langfuse scores.

Off by default: add one to a runner (`runner.add_sink(PhoenixAnnotations())`) or pass it as
`on_score`. Each posts through `agentscore._wire.http` (one client per event loop, every phase
within `timeout`, no redirect followed: a 3xx would take the key to the origin it names, and
a redirected POST stored nothing); a failure or a status other than 2xx is logged (status or
error type, never the key) and never raised.

One content switch governs every exporter: the `capture_content` of the `Telemetry` whose
evaluation is delivered (the agent's), or of the `telemetry=` given here. Off, the
explanation is a verdict count; on, it is the reason, with each claim's text, verdict and
reason in the annotation's metadata. A run with no claims posts its label, never a score.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any
from urllib.parse import urlsplit

import structlog

from agentscore._redact import register_secret
from agentscore._wire.clients import LoopLocalClient
from agentscore._wire.http import Deadlines, HttpFailure, async_client, origin, post
from agentscore.result import ScoreResult
from agentscore.sinks.roots import RootSpans
from agentscore.telemetry.core import Telemetry, current_telemetry
from agentscore.telemetry.evaluations import (
    averaged_score,
    claims_for,
    explanation_for,
    label_for,
)

__all__ = ["LangfuseScores", "PhoenixAnnotations"]

_log = structlog.get_logger("agentscore.backends")
# What a score API answers is a few bytes of JSON; nothing more is read of it.
_MAX_REPLY_BYTES = 64 * 1024


class PhoenixAnnotations:
    """Each result becomes a span annotation on the agent's span (POST /v1/span_annotations),
    named after the scorer, so Phoenix lists it with its other evaluations. With
    `root_spans` (a `RootSpans` processor on your tracer provider), the trace's root span
    gets the same annotation, so Phoenix's trace list shows it too."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        telemetry: Telemetry | None = None,
        root_spans: RootSpans | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.base_url = (
            base_url or os.environ.get("PHOENIX_COLLECTOR_ENDPOINT") or "http://127.0.0.1:6006"
        ).rstrip("/")
        self._api_key = api_key or os.environ.get("PHOENIX_API_KEY")
        register_secret(self._api_key)
        self.telemetry = telemetry
        self.root_spans = root_spans
        self.timeout = timeout
        self._clients = LoopLocalClient(lambda: _Client(self.timeout))

    def __repr__(self) -> str:
        return f"PhoenixAnnotations({self.base_url!r})"

    async def __call__(self, result: ScoreResult) -> None:
        if not result.span_id:
            return
        capture = _capture_content(self.telemetry)
        outcome: dict[str, Any] = {
            "label": label_for(result) or result.status.value,
            "explanation": explanation_for(result, capture),
        }
        score = averaged_score(result)
        if score is not None:
            outcome["score"] = score
        metadata: dict[str, Any] = {
            "status": result.status.value,
            "judge_model": result.judge_model,
        }
        if capture:
            metadata["claims"] = claims_for(result)
        span_ids = [result.span_id]
        root = (
            self.root_spans.root_of(result.trace_id)
            if self.root_spans and result.trace_id
            else None
        )
        if root and root != result.span_id:
            span_ids.append(root)
        annotations = [
            {
                "span_id": span_id,
                "name": result.scorer_id,
                "annotator_kind": "LLM",
                "identifier": f"agentscore:{result.run_id}",
                "result": outcome,
                "metadata": metadata,
            }
            for span_id in span_ids
        ]
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        await _post(
            self._clients.get(),
            f"{self.base_url}/v1/span_annotations",
            {"data": annotations},
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
        telemetry: Telemetry | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.host = (
            host or os.environ.get("LANGFUSE_HOST") or "https://cloud.langfuse.com"
        ).rstrip("/")
        self._public_key = public_key or os.environ.get("LANGFUSE_PUBLIC_KEY", "")
        self._secret_key = secret_key or os.environ.get("LANGFUSE_SECRET_KEY", "")
        register_secret(self._secret_key)
        self.telemetry = telemetry
        self.timeout = timeout
        self._clients = LoopLocalClient(lambda: _Client(self.timeout))

    def __repr__(self) -> str:
        return f"LangfuseScores({self.host!r})"

    async def __call__(self, result: ScoreResult) -> None:
        if result.failed or not result.trace_id:
            return
        value = averaged_score(result)
        score = {
            "id": f"agentscore-{result.run_id}-{result.scorer_id}",
            "traceId": result.trace_id,
            "observationId": result.span_id,
            "name": result.scorer_id,
            # A run with no claims is a category, which Langfuse does not average.
            "value": value if value is not None else label_for(result),
            "dataType": "NUMERIC" if value is not None else "CATEGORICAL",
            "comment": explanation_for(result, _capture_content(self.telemetry)),
        }
        credentials = f"{self._public_key}:{self._secret_key}".encode()
        headers = {"Authorization": "Basic " + base64.b64encode(credentials).decode()}
        await _post(
            self._clients.get(),
            f"{self.host}/api/public/scores",
            score,
            headers,
            self.timeout,
        )


def _capture_content(telemetry: Telemetry | None) -> bool:
    # The runner delivers results with the agent's telemetry current.
    return (telemetry or current_telemetry()).capture_content


class _Client:
    """The HTTP client of one event loop, closed by `LoopLocalClient` when that loop ends."""

    def __init__(self, timeout: float) -> None:
        self.http = async_client(_deadlines(timeout), max_body=_MAX_REPLY_BYTES)

    async def close(self) -> None:
        await self.http.aclose()


def _deadlines(timeout: float) -> Deadlines:
    return Deadlines(connect=timeout, read=timeout, write=timeout, pool=timeout, total=timeout)


async def _post(
    client: _Client, url: str, payload: Any, headers: dict[str, str], timeout: float
) -> None:
    """POST JSON; failures are logged by status or error type only (headers hold keys)."""
    try:
        reply = await post(
            client.http,
            url,
            content=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json", **headers},
            deadlines=_deadlines(timeout),
            max_body=_MAX_REPLY_BYTES,
        )
    except HttpFailure as exc:
        cause = type(exc.__cause__ or exc).__name__
        _log.warning("score_backend_unreachable", url=_shown(url), error_type=cause)
        return
    except Exception as exc:  # a URL the HTTP library refuses: logged, never raised
        _log.warning("score_backend_unreachable", url=_shown(url), error_type=type(exc).__name__)
        return
    if not reply.ok:  # a 3xx included: it is not followed
        _log.warning("score_backend_rejected", url=_shown(url), status=reply.status)


def _shown(url: str) -> str:
    """The endpoint without what may carry a credential (user info, query)."""
    try:
        path = urlsplit(url).path
    except ValueError:
        path = ""
    return origin(url) + path

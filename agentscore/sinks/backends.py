"""Score sinks for backends with a first-class score API: Phoenix annotations, Langfuse scores.

Off by default: add one to a runner (`runner.add_sink(PhoenixAnnotations())`) or pass it as
`on_score`. Each result is posted twice: on the agent's span (a span annotation, an
observation score) and on its trace (a trace annotation, a trace score), which is what a
trace list shows whatever span is the trace's root. A trace with several generations shows,
per scorer, the worst verdict among them (`agentscore.sinks.shown`). A conversation scorer's
result (`ScoreResult.conversation_id`) is posted on its session too (a session annotation, a
session score), one per scorer and session: a later conversation under the same id
replaces it.

A sink returns at once: its posts are batched (`agentscore.sinks.batching`): collected for
`flush_interval` seconds or up to `max_batch`, sent together off the scoring loop, at most
`max_buffer` waiting (more are dropped, counted in `dropped` and logged). `flush()` sends what
waits; a runner's `flush()` does it too, and so does interpreter exit. Each post goes through
`agentscore._wire.http` (`agentscore.sinks.posting`): a failure or a status other than 2xx is
logged (status or error type, never the key) and never raised.

One content switch governs every exporter: the `capture_content` of the `Telemetry` whose
evaluation is delivered (the agent's), or of the `telemetry=` given here. Off, the
explanation is a verdict count; on, it is the reason, with each claim's text, verdict and
reason in the annotation's metadata. A run with no claims posts its label, never a score.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import random
import time
from datetime import UTC, datetime
from typing import Any

import structlog

from agentscore._redact import register_secret
from agentscore.result import ScoreResult
from agentscore.sinks.batching import Batcher
from agentscore.sinks.posting import JsonPoster, shown_url
from agentscore.sinks.roots import RootSpans
from agentscore.sinks.shown import TraceVerdicts
from agentscore.telemetry.core import Telemetry, current_telemetry
from agentscore.telemetry.evaluations import (
    averaged_score,
    claims_for,
    explanation_for,
    label_for,
)

__all__ = ["LangfuseScores", "PhoenixAnnotations"]

_log = structlog.get_logger("agentscore.backends")
# The identifier of agentscore's trace annotations: Phoenix keeps one annotation per name,
# trace and identifier, and replaces it when the same three are posted again.
TRACE_IDENTIFIER = "agentscore"


class PhoenixAnnotations:
    """Each result becomes a span annotation on the agent's span (POST /v1/span_annotations)
    and a trace annotation on its trace (POST /v1/trace_annotations), named after the scorer,
    so Phoenix lists it with its other evaluations and shows it on the trace's row; a
    conversation's, a session annotation (POST /v1/session_annotations) on the session whose
    spans carry its id as `session.id`. With `root_spans` (a `RootSpans` processor on your
    tracer provider), the trace's root span gets the span annotation too."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        telemetry: Telemetry | None = None,
        root_spans: RootSpans | None = None,
        timeout: float = 10.0,
        max_batch: int = 100,
        flush_interval: float = 1.0,
        max_buffer: int = 10_000,
        retry_window: float = 60.0,
    ) -> None:
        self.base_url = (
            base_url or os.environ.get("PHOENIX_COLLECTOR_ENDPOINT") or "http://127.0.0.1:6006"
        ).rstrip("/")
        self._api_key = api_key or os.environ.get("PHOENIX_API_KEY")
        register_secret(self._api_key)
        self.telemetry = telemetry
        self.root_spans = root_spans
        self.timeout = timeout
        self._poster = JsonPoster(timeout)
        self._shown = TraceVerdicts()
        self._spans, self._traces, self._sessions = (
            Batcher[dict[str, Any]](
                "PhoenixAnnotations",
                functools.partial(self._send, endpoint),
                max_batch=max_batch,
                interval=flush_interval,
                max_buffer=max_buffer,
                retry_window=retry_window,
            )
            for endpoint in ("span_annotations", "trace_annotations", "session_annotations")
        )

    def __repr__(self) -> str:
        return f"PhoenixAnnotations({self.base_url!r})"

    @property
    def dropped(self) -> int:
        """Annotations dropped because the buffer was full."""
        return self._spans.dropped + self._traces.dropped + self._sessions.dropped

    def flush(self, timeout: float | None = None) -> bool:
        """Post what waits; False if `timeout` (seconds) ran out first."""
        return _flush_all((self._spans, self._traces, self._sessions), timeout)

    async def __call__(self, result: ScoreResult) -> None:
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

        def annotation(identifier: str, extra: dict[str, Any], **target: str) -> dict[str, Any]:
            return {
                **target,
                "name": result.scorer_id,
                "annotator_kind": "LLM",
                "identifier": identifier,
                "result": outcome,
                "metadata": {**metadata, **extra},
            }

        if result.span_id:
            for span_id in self._span_ids(result):
                self._spans.add(annotation(f"agentscore:{result.run_id}", {}, span_id=span_id))
        if result.trace_id and self._shown.replaces(result):
            self._traces.add(
                # Which generation the trace shows.
                annotation(TRACE_IDENTIFIER, {"span_id": result.span_id}, trace_id=result.trace_id),
                # A later result of this trace and scorer replaces a waiting one.
                key=(result.trace_id, result.scorer_id),
            )
        if result.conversation_id:
            self._sessions.add(
                annotation(
                    TRACE_IDENTIFIER,
                    {"trace_id": result.trace_id},
                    session_id=result.conversation_id,
                ),
                key=(result.conversation_id, result.scorer_id),
            )

    def _span_ids(self, result: ScoreResult) -> list[str]:
        span_ids = [result.span_id] if result.span_id else []
        root = (
            self.root_spans.root_of(result.trace_id)
            if self.root_spans and result.trace_id
            else None
        )
        if root and root not in span_ids:
            span_ids.append(root)
        return span_ids

    async def _send(self, endpoint: str, annotations: list[dict[str, Any]]) -> None:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        await self._poster.post(f"{self.base_url}/v1/{endpoint}", {"data": annotations}, headers)


class LangfuseScores:
    """Each result becomes two Langfuse scores: one on the observation (the agent's span)
    and one on the trace (no `observationId`), which the trace list shows; a conversation's,
    a third on its session (`sessionId`, no trace). Sent in batches as `score-create` events
    (POST /api/public/ingestion). Keys default to LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY
    and LANGFUSE_HOST."""

    def __init__(
        self,
        host: str | None = None,
        *,
        public_key: str | None = None,
        secret_key: str | None = None,
        telemetry: Telemetry | None = None,
        timeout: float = 10.0,
        max_batch: int = 100,
        flush_interval: float = 1.0,
        max_buffer: int = 10_000,
        retry_window: float = 60.0,
    ) -> None:
        self.host = (
            host or os.environ.get("LANGFUSE_HOST") or "https://cloud.langfuse.com"
        ).rstrip("/")
        self._public_key = public_key or os.environ.get("LANGFUSE_PUBLIC_KEY", "")
        self._secret_key = secret_key or os.environ.get("LANGFUSE_SECRET_KEY", "")
        register_secret(self._secret_key)
        self.telemetry = telemetry
        self.timeout = timeout
        self._poster = JsonPoster(timeout)
        self._shown = TraceVerdicts()
        self._events: Batcher[dict[str, Any]] = Batcher(
            "LangfuseScores",
            self._send,
            max_batch=max_batch,
            interval=flush_interval,
            max_buffer=max_buffer,
            retry_window=retry_window,
        )

    def __repr__(self) -> str:
        return f"LangfuseScores({self.host!r})"

    @property
    def dropped(self) -> int:
        """Scores dropped because the buffer was full."""
        return self._events.dropped

    def flush(self, timeout: float | None = None) -> bool:
        """Post what waits; False if `timeout` (seconds) ran out first."""
        return _flush_all((self._events,), timeout)

    async def __call__(self, result: ScoreResult) -> None:
        if result.failed:
            return
        value = averaged_score(result)
        verdict: dict[str, Any] = {
            "name": result.scorer_id,
            # A run with no claims is a category, which Langfuse does not average.
            "value": value if value is not None else label_for(result),
            "dataType": "NUMERIC" if value is not None else "CATEGORICAL",
            "comment": explanation_for(result, _capture_content(self.telemetry)),
        }
        if result.conversation_id:
            # One per session and scorer: a later conversation under the same id replaces it.
            session_score_id = f"agentscore-session-{result.conversation_id}-{result.scorer_id}"
            self._events.add(
                _score_event(
                    {"id": session_score_id, "sessionId": result.conversation_id, **verdict}
                ),
                key=session_score_id,
            )
        if not result.trace_id:
            return
        score = {"traceId": result.trace_id, **verdict}
        self._events.add(
            _score_event(
                {
                    "id": f"agentscore-{result.run_id}-{result.scorer_id}",
                    "observationId": result.span_id,
                    **score,
                }
            )
        )
        if self._shown.replaces(result):
            # Langfuse keeps one score per id: each post of this one replaces the last.
            trace_score_id = f"agentscore-trace-{result.trace_id}-{result.scorer_id}"
            self._events.add(_score_event({"id": trace_score_id, **score}), key=trace_score_id)

    async def _send(self, events: list[dict[str, Any]]) -> None:
        credentials = f"{self._public_key}:{self._secret_key}".encode()
        headers = {"Authorization": "Basic " + base64.b64encode(credentials).decode()}
        url = f"{self.host}/api/public/ingestion"
        reply = await self._poster.post(url, {"batch": events}, headers)
        if reply is None:
            return
        # A 207: the batch was read, and each event refused is listed with its own status.
        refused = _refused_events(reply.content)
        if refused:
            _log.warning(
                "score_backend_rejected",
                url=shown_url(url),
                status=reply.status,
                refused=refused,
                sent=len(events),
            )


def _score_event(body: dict[str, Any]) -> dict[str, Any]:
    """A `score-create` event: its own id (Langfuse ignores an event id it has seen) around
    the score, whose id is the one Langfuse keeps."""
    return {
        "id": f"{random.getrandbits(128):032x}",
        "type": "score-create",
        "timestamp": datetime.now(UTC).isoformat(),
        "body": body,
    }


def _refused_events(content: bytes) -> int:
    try:
        errors = json.loads(content).get("errors")
    except (ValueError, AttributeError):
        return 0
    return len(errors) if isinstance(errors, list) else 0


def _flush_all(batchers: tuple[Batcher[dict[str, Any]], ...], timeout: float | None) -> bool:
    deadline = None if timeout is None else time.monotonic() + timeout
    finished = True
    for batcher in batchers:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        finished = batcher.flush(left) and finished
    return finished


def _capture_content(telemetry: Telemetry | None) -> bool:
    # The runner delivers results with the agent's telemetry current.
    return (telemetry or current_telemetry()).capture_content

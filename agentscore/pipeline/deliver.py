"""Results to the user's sinks: sync or async, each bounded by a timeout, none able to stop
another or the pipeline."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import anyio
import structlog

from agentscore._runtime.callbacks import call_user
from agentscore.result import ScoreResult
from agentscore.telemetry.core import Telemetry, reset_telemetry, use_telemetry

__all__ = ["ScoreSink", "deliver"]

_log = structlog.get_logger("agentscore.pipeline")

ScoreSink = Callable[[ScoreResult], object]


async def deliver(
    result: ScoreResult,
    sinks: Iterable[ScoreSink | None],
    *,
    timeout: float,
    telemetry: Telemetry | None = None,
) -> None:
    """Call each sink with `result`; an async sink (or one returning an awaitable) is awaited.

    Sinks that export (PhoenixAnnotations) follow `telemetry`'s content switch.
    """
    token = use_telemetry(telemetry) if telemetry is not None else None
    try:
        for sink in sinks:
            if sink is None:
                continue
            try:
                with anyio.fail_after(timeout):
                    await call_user(sink, result)
            except Exception as exc:  # a sink must not stop the others or the pipeline
                _log.error("score_sink_failed", sink=_name(sink), error_type=type(exc).__name__)
    finally:
        if token is not None:
            reset_telemetry(token)


def _name(sink: ScoreSink) -> str:
    return str(getattr(sink, "__qualname__", type(sink).__name__))

"""`agentscore serve`: wire the queue, span reading, the worker and the HTTP app, then run."""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from agentscore.errors import ConfigurationError
from agentscore.evals import Evals
from agentscore.scorers.base import Scorer
from agentscore.serve.app import ServeApp
from agentscore.serve.budget import JudgeBudget
from agentscore.serve.export import build_exporters
from agentscore.serve.forward import forward_headers
from agentscore.serve.health import ServiceHealth
from agentscore.serve.ingest import Ingestor
from agentscore.serve.queue import SqliteQueue, Synchronous
from agentscore.serve.stats import ServiceStats
from agentscore.serve.worker import ScoringWorker

__all__ = ["ServeOptions", "build_service", "load_evals", "run_service"]

_log = structlog.get_logger("agentscore.serve")


@dataclass(frozen=True, slots=True)
class ServeOptions:
    scorers: str
    host: str = "127.0.0.1"
    port: int = 4318
    queue: str = "agentscore-queue.db"
    max_queue: int = 100_000
    concurrency: int = 16
    idle_timeout: float = 60.0
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    max_age: float | None = None
    drain_timeout: float = 20.0
    synchronous: Synchronous = "FULL"
    jsonl: str = "agentscore-evaluations.jsonl"
    forward: str | None = None


def load_evals(spec: str) -> Evals:
    """`MODULE:ATTR` naming an `Evals` or a list of scorers, imported like an ASGI app."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigurationError(f"--scorers takes MODULE:ATTR, got {spec!r}")
    target: object = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if isinstance(target, Evals):
        evals = target
    elif isinstance(target, Sequence) and all(isinstance(item, Scorer) for item in target):
        evals = Evals(scorers=list(target))
    else:
        raise ConfigurationError(f"{spec} is neither an Evals nor a list of scorers")
    ids = [entry.scorer.id for entry in evals.entries]
    if not ids or len(set(ids)) != len(ids):
        raise ConfigurationError(f"{spec} needs at least one scorer, each with its own id")
    return evals


def build_service(options: ServeOptions, evals: Evals) -> ServeApp:
    """The app, with the worker started and drained by its lifespan."""
    queue = SqliteQueue(Path(options.queue), synchronous=options.synchronous)
    exporters = build_exporters(options.jsonl)
    stats = ServiceStats(
        exporters.meter_provider, depth=lambda: queue.depth, oldest_age=queue.oldest_job_age
    )
    ingestor = Ingestor(queue, evals, stats, idle_timeout=options.idle_timeout)
    health = ServiceHealth()
    worker = ScoringWorker(
        queue,
        ingestor,
        evals,
        exporters,
        stats,
        health=health,
        budget=JudgeBudget(options.requests_per_minute, options.tokens_per_minute),
        concurrency=options.concurrency,
        max_age=options.max_age,
    )

    def shutdown() -> None:
        worker.stop(options.drain_timeout)
        exporters.shutdown()
        _log.info("serve_stopped", left_on_disk=queue.depth, **stats.snapshot())
        queue.close()

    _log.info("serve_configured", destination=exporters.destination, queue=options.queue)
    return ServeApp(
        ingestor,
        queue,
        stats,
        health=health,
        max_queue=options.max_queue,
        on_startup=worker.start,
        on_shutdown=shutdown,
        forward_to=options.forward,
        forward_headers=forward_headers(os.environ) if options.forward else None,
    )


def run_service(options: ServeOptions) -> int:
    import uvicorn  # the `serve` extra

    app = build_service(options, load_evals(options.scorers))
    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        lifespan="on",
        log_level="warning",
        access_log=False,
    )
    uvicorn.Server(config).run()
    return 0

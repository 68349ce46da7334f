"""`agentscore serve`: wire the queue, span reading, the worker and the HTTP app, then run."""

from __future__ import annotations

import gc
import importlib
import ipaddress
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import structlog
import uvicorn

from agentscore._runtime.hooks import flush_buffers
from agentscore.errors import ConfigurationError
from agentscore.evals import Evals
from agentscore.judges.cascade import cascade_health
from agentscore.pipeline.conversations import DEFAULT_CONVERSATION_IDLE
from agentscore.scorers.base import Scorer
from agentscore.serve.app import ServeApp
from agentscore.serve.auth import load_ingest_token
from agentscore.serve.budget import JudgeBudget
from agentscore.serve.connections import ConnectionLimits, connection_limits, guarded_protocol
from agentscore.serve.conversations import DEFAULT_MAX_CONVERSATION_BYTES
from agentscore.serve.export import build_exporters
from agentscore.serve.forward import forward_sender
from agentscore.serve.health import ServiceHealth
from agentscore.serve.ingest import DEFAULT_MAX_OPEN_BYTES, DEFAULT_TRACE_GRACE, Ingestor
from agentscore.serve.listen import (
    DEFAULT_GRPC_PORT,
    DEFAULT_HTTP_PORT,
    HttpListener,
    log_listening,
)
from agentscore.serve.queue import SqliteQueue, Synchronous
from agentscore.serve.stats import ServiceStats
from agentscore.serve.tls import check_tls_files
from agentscore.serve.worker import ScoringWorker
from agentscore.telemetry.core import AGENTSCORE_SCOPE, PRICES_ENV, prices_from_env
from agentscore.telemetry.ledger import ledger_for
from agentscore.telemetry.spend import SpendBudget

__all__ = ["ServeOptions", "build_service", "load_evals", "log_judge_checks", "run_service"]

_log = structlog.get_logger("agentscore.serve")


@dataclass(frozen=True, slots=True)
class ServeOptions:
    scorers: str
    host: str = "127.0.0.1"
    port: int = DEFAULT_HTTP_PORT
    grpc_port: int | None = DEFAULT_GRPC_PORT  # None: OTLP/HTTP only
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
    capture_content: bool = False  # else OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
    ingest_token_file: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 1000  # per port
    connection_idle_timeout: float = 5.0
    max_connection_age: float = 600.0  # gRPC
    grpc_max_calls: int = 64
    max_open_trace_bytes: int = DEFAULT_MAX_OPEN_BYTES
    spend_per_hour: float | None = None  # in the currency of AGENTSCORE_JUDGE_PRICES
    spend_per_day: float | None = None
    trace_grace: float = DEFAULT_TRACE_GRACE
    conversation_idle: float = DEFAULT_CONVERSATION_IDLE
    max_conversation_bytes: int = DEFAULT_MAX_CONVERSATION_BYTES


def load_evals(spec: str) -> Evals:
    """`MODULE:ATTR` naming an `Evals` or a list of scorers, imported like an ASGI app (the
    current directory is searched first, as uvicorn does)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigurationError(f"--scorers takes MODULE:ATTR, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
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


def log_judge_checks(evals: Evals) -> None:
    """One log line per judge model: `judge_check_ok`, or a warning saying what is wrong."""
    for check in evals.check():
        if check.ok:
            _log.info("judge_check_ok", model=check.model, endpoint=check.endpoint)
        else:
            _log.warning(
                "judge_check_failed",
                model=check.model,
                endpoint=check.endpoint,
                problem=check.problem,
                error_type=check.error_type,
            )


def build_service(
    options: ServeOptions,
    evals: Evals,
    *,
    grpc_connections: int | None = None,
    clock: Callable[[], float] = time.time,
) -> ServeApp:
    """The app, with the worker started and drained by its lifespan. `grpc_connections`:
    the gRPC port's connection cap, when the descriptor limit makes it lower than asked.
    `clock` (Unix time) places the spend budget's windows."""
    spend = _spend_budget(options, clock)
    prices = prices_from_env()
    queue = SqliteQueue(Path(options.queue), synchronous=options.synchronous)
    exporters = build_exporters(options.jsonl)
    stats = ServiceStats(
        exporters.meter_provider, depth=lambda: queue.depth, oldest_age=queue.oldest_job_age
    )
    ingestor = Ingestor(
        queue,
        evals,
        stats,
        idle_timeout=options.idle_timeout,
        max_open_bytes=options.max_open_trace_bytes,
        # The ledger of the worker's Telemetry, which has the same meter provider.
        ledger=ledger_for(exporters.meter_provider, AGENTSCORE_SCOPE),
        spend=spend,
        prices=prices,
        trace_grace=options.trace_grace,
        conversation_idle=options.conversation_idle,
        max_conversation_bytes=options.max_conversation_bytes,
    )
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
        capture_content=options.capture_content,
        spend=spend,
    )
    grpc: GrpcIngest | None = None

    def startup() -> None:
        worker.start()
        if grpc is not None:
            grpc.start()

    def shutdown() -> None:
        worker.stop(options.drain_timeout)  # at once when `ServeApp.drain` already ran it
        # What the worker delivered to sinks that batch their posts (PhoenixAnnotations).
        flush_buffers(options.drain_timeout)
        if grpc is not None:  # it answered UNAVAILABLE during the drain; now it goes
            grpc.stop(grace=1.0)
        exporters.shutdown()
        _log.info("serve_stopped", left_on_disk=queue.depth, **stats.snapshot())
        queue.close()

    _log.info("serve_configured", destination=exporters.destination, queue=options.queue)
    judges = {entry.scorer.id: entry.scorer.judge for entry in evals.entries}
    app = ServeApp(
        ingestor,
        queue,
        stats,
        health=health,
        max_queue=options.max_queue,
        on_startup=startup,
        on_drain=worker.stop,
        on_shutdown=shutdown,
        forward_to=forward_sender(options.forward, os.environ) if options.forward else None,
        ingest_token=load_ingest_token(os.environ, options.ingest_token_file),
        body_timeout=options.body_timeout,
        judge_health=lambda: {
            "cascades": cascade_health(judges),
            **({"spend": spend.snapshot()} if spend is not None else {}),
        },
    )
    if options.grpc_port is not None:
        from agentscore.serve.grpc_ingest import GrpcIngest, GrpcLimits  # the `serve` extra

        certificate, key = options.ssl_certfile, options.ssl_keyfile
        grpc = GrpcIngest(
            app,
            stats,
            host=options.host,
            port=options.grpc_port,
            tls=(certificate, key) if certificate and key else None,
            limits=GrpcLimits(
                max_calls=options.grpc_max_calls,
                max_connections=grpc_connections or options.max_connections,
                handshake_timeout=options.header_timeout,
                idle_timeout=options.connection_idle_timeout,
                max_age=options.max_connection_age,
                grace=options.body_timeout,
            ),
        )
    return app


def _spend_budget(options: ServeOptions, clock: Callable[[], float]) -> SpendBudget | None:
    if options.spend_per_hour is None and options.spend_per_day is None:
        return None
    spend = SpendBudget(options.spend_per_hour, options.spend_per_day, clock=clock)
    if not prices_from_env():
        _log.warning(
            "spend_budget_without_prices",
            hint=f"no judge has a price, so nothing is charged to the budget: set {PRICES_ENV}",
        )
    return spend


def run_service(options: ServeOptions) -> int:
    if (options.ssl_certfile is None) != (options.ssl_keyfile is None):
        raise ConfigurationError("--ssl-certfile and --ssl-keyfile go together")
    if options.ssl_certfile is not None and options.ssl_keyfile is not None:
        check_tls_files(options.ssl_certfile, options.ssl_keyfile)
    timeouts = (
        options.header_timeout,
        options.body_timeout,
        options.connection_idle_timeout,
        options.max_connection_age,
    )
    if options.trace_grace < 0 or options.conversation_idle <= 0:
        raise ConfigurationError(
            "--trace-grace must not be negative and --conversation-idle must be positive"
        )
    if min(timeouts) <= 0 or min(options.max_connections, options.grpc_max_calls) < 1:
        raise ConfigurationError(
            "--header-timeout, --body-timeout, --connection-idle-timeout and "
            "--max-connection-age must be positive, --max-connections and --grpc-max-calls "
            "at least 1"
        )
    if options.port != 0 and options.grpc_port == options.port:
        raise ConfigurationError(
            f"--port and --grpc-port are both {options.port}: give each its own "
            "(or --grpc-port off)"
        )
    evals = load_evals(options.scorers)
    limits = connection_limits(options.max_connections, grpc=options.grpc_port is not None)
    if limits.http < options.max_connections:
        _log.warning(
            "serve_connections_capped",
            max_connections=limits.http,
            hint="the file descriptor limit (ulimit -n) is too low for --max-connections",
        )
    # Before the queue opens and anything starts: a taken port stops the start (exit 2).
    listener = HttpListener(options.host, options.port, backlog=limits.backlog)
    try:
        return _serve(options, evals, limits, listener)
    finally:
        listener.close()  # uvicorn closes them at its shutdown; this covers a refused start


def _serve(
    options: ServeOptions, evals: Evals, limits: ConnectionLimits, listener: HttpListener
) -> int:
    app = build_service(options, evals, grpc_connections=limits.grpc)
    if not _loopback(options.host) and app.ingest_token is None:
        _log.warning(
            "serve_ingest_open",
            host=options.host,
            hint="anyone who reaches the port can make the service call the judge; "
            "set AGENTSCORE_INGEST_TOKEN or --ingest-token-file",
        )
    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        lifespan="on",
        log_level="warning",
        access_log=False,
        http=guarded_protocol(max_connections=limits.http, header_timeout=options.header_timeout),
        timeout_keep_alive=math.ceil(options.connection_idle_timeout),  # whole seconds
        ssl_certfile=options.ssl_certfile,
        ssl_keyfile=options.ssl_keyfile,
        backlog=limits.backlog,
    )
    # What start-up left (the SDK's types, the scorers, the app: ~90,000 objects) lives as
    # long as the process; out of the collector's sight, a full collection walks only what
    # scoring made since.
    gc.collect()
    gc.freeze()
    # A score allocates thousands of short-lived containers; at the default 700 the young
    # generation was collected every few scores (docs/benchmarks.md has the GC time saved).
    # Cycles wait a little longer to be freed; nothing else does.
    gc.set_threshold(10_000, 10, 10)
    # In the background: a judge that is down at start may be up a minute later, and the
    # queue keeps the work until then, so the service starts whatever the check finds.
    # Started only once the configuration has held: a daemon thread still writing its log
    # line while a refused start exits makes the interpreter abort at shutdown (exit -6,
    # not the documented 2), since it holds stdout's lock.
    judge_checks = threading.Thread(
        target=log_judge_checks, args=(evals,), name="agentscore-judge-check", daemon=True
    )
    judge_checks.start()
    try:
        tls = options.ssl_certfile is not None
        _DrainingServer(
            config,
            app,
            options.drain_timeout,
            on_serving=lambda: _log_http_listening(listener, tls=tls),
        ).run(sockets=listener.sockets)
    finally:
        # The same hazard at a stop right after the start (an early signal, a failed start-up):
        # the check's own bound is 20 s a judge, so wait a little and no longer.
        judge_checks.join(timeout=1.0)
    return 0


def _log_http_listening(listener: HttpListener, *, tls: bool) -> None:
    for address in listener.endpoints(tls=tls):
        log_listening("OTLP/HTTP", f"{address}/v1/traces", health=f"{address}/healthz")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


class _DrainingServer(uvicorn.Server):
    """uvicorn stops listening as soon as it is signalled; this one drains first, still
    answering (503 to ingest, `draining` on /healthz), and then lets uvicorn shut down. A
    second signal goes straight to uvicorn."""

    def __init__(
        self,
        config: uvicorn.Config,
        app: ServeApp,
        drain_timeout: float,
        *,
        on_serving: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__(config)
        self._app = app
        self._drain_timeout = drain_timeout
        self._drainer: threading.Thread | None = None
        self._on_serving = on_serving

    async def main_loop(self) -> None:
        # uvicorn enters it once its start-up has run and the port serves: the moment to
        # say where (its own line is left out when it is handed the sockets).
        self._on_serving()
        await super().main_loop()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._drainer is not None:
            super().handle_exit(sig, frame)
            return
        self._drainer = threading.Thread(
            target=self._drain_then_exit, args=(sig,), name="agentscore-serve-drain", daemon=True
        )
        self._drainer.start()

    def _drain_then_exit(self, sig: int) -> None:
        self._app.drain(self._drain_timeout)
        super().handle_exit(sig, None)

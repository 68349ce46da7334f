"""The `agentscore serve` subcommand's arguments; `agentscore.cli` only hands them over."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agentscore.errors import ConfigurationError
from agentscore.serve.listen import DEFAULT_GRPC_PORT, DEFAULT_HTTP_PORT

__all__ = ["add_serve_command", "serve_command"]


def add_serve_command(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="score the generations in OTLP traces sent to it (out of process)",
        description="Receives OTLP/HTTP traces at POST /v1/traces; exports evaluations through "
        "the OTEL_EXPORTER_OTLP_* settings.",
    )
    serve.add_argument("--scorers", required=True, help="MODULE:ATTR, an Evals or scorer list")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_HTTP_PORT,
        help=f"OTLP/HTTP, where apps' exporters send by default (default {DEFAULT_HTTP_PORT}; "
        "0: any free port)",
    )
    serve.add_argument(
        "--grpc-port",
        type=_port_or_off,
        default=DEFAULT_GRPC_PORT,
        help=f"OTLP/gRPC (the Collector's loadbalancing exporter speaks it; default "
        f"{DEFAULT_GRPC_PORT}, off the 4317 of Phoenix and Collectors); 'off' for none",
    )
    serve.add_argument("--queue", default="agentscore-queue.db", help="SQLite queue file")
    serve.add_argument("--max-queue", type=int, default=100_000, help="rows before 503")
    serve.add_argument("--concurrency", type=int, default=16, help="jobs scored at once")
    serve.add_argument("--idle-timeout", type=float, default=60.0, help="seconds")
    serve.add_argument("--requests-per-minute", type=float, help="judge request budget")
    serve.add_argument("--tokens-per-minute", type=float, help="judge token budget")
    serve.add_argument(
        "--spend-per-hour",
        type=float,
        metavar="AMOUNT",
        help="judge spend budget per clock hour (UTC), in the currency of "
        "AGENTSCORE_JUDGE_PRICES; past it, priced judges wait for the next hour",
    )
    serve.add_argument(
        "--spend-per-day",
        type=float,
        metavar="AMOUNT",
        help="judge spend budget per day (UTC midnight to midnight), likewise",
    )
    serve.add_argument("--max-age", type=float, help="expire unjudged jobs older than this (s)")
    serve.add_argument("--drain-timeout", type=float, default=20.0, help="seconds at shutdown")
    serve.add_argument("--synchronous", choices=["NORMAL", "FULL"], default="FULL")
    serve.add_argument(
        "--forward",
        metavar="URL",
        help="also pass every received request on unchanged to this OTLP/HTTP traces URL",
    )
    serve.add_argument(
        "--ingest-token-file",
        metavar="PATH",
        help="file holding the bearer token ingest requests must carry "
        "(or set AGENTSCORE_INGEST_TOKEN)",
    )
    serve.add_argument("--ssl-certfile", metavar="PATH", help="serve HTTPS with this certificate")
    serve.add_argument("--ssl-keyfile", metavar="PATH", help="the certificate's private key")
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        help="seconds to send headers (408), or to open a gRPC connection",
    )
    serve.add_argument(
        "--body-timeout", type=float, default=30.0, help="seconds to send the body (408)"
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=1000,
        help="open connections at most, on each port (lowered to fit the descriptor limit)",
    )
    serve.add_argument(
        "--connection-idle-timeout",
        type=float,
        default=5.0,
        help="seconds a connection with no request in progress stays open (both ports)",
    )
    serve.add_argument(
        "--max-connection-age",
        type=float,
        default=600.0,
        help="seconds a gRPC connection lives; its calls then get --body-timeout to finish",
    )
    serve.add_argument(
        "--grpc-max-calls",
        type=int,
        default=64,
        help="gRPC calls with the token read or processed at once; past it "
        "RESOURCE_EXHAUSTED with a retry delay",
    )
    serve.add_argument(
        "--max-open-trace-bytes",
        type=_bytes,
        metavar="BYTES",
        help="what open traces may hold, in memory and on disk, before 503 "
        "(e.g. 268435456, 256MiB, 1GiB; default 256MiB)",
    )
    serve.add_argument(
        "--trace-grace",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="trace scorers judge a trace this long after its root span ended, so late "
        "spans join it (a trace whose root never comes: --idle-timeout)",
    )
    serve.add_argument(
        "--conversation-idle",
        type=float,
        default=900.0,
        metavar="SECONDS",
        help="a conversation is over, and scored, once no turn came for this long",
    )
    serve.add_argument(
        "--max-conversation-bytes",
        type=_bytes,
        metavar="BYTES",
        help="what open conversations may hold on disk; a conversation past it is not "
        "scored, and counted dropped (default 256MiB)",
    )
    serve.add_argument(
        "--jsonl",
        default="agentscore-evaluations.jsonl",
        help="where evaluations go when no OTEL_EXPORTER_OTLP_* endpoint is set",
    )
    serve.add_argument(
        "--capture-content",
        action="store_true",
        help="put the evaluated answer and the judge's reasons on evaluations "
        "(also OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)",
    )


def _port_or_off(value: str) -> int | None:
    if value.strip().lower() == "off":
        return None
    try:
        return _port(value)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"a port number or 'off', not {value!r}") from None


def _port(value: str) -> int:
    """0 to 65535; 0 lets the system choose (the start-up log says which it chose)."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a port number, not {value!r}") from None
    if not 0 <= port < 65536:
        raise argparse.ArgumentTypeError(f"a port number, not {value!r}")
    return port


_UNITS = {"": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def _bytes(text: str) -> int:
    number = text.rstrip("KMGiB")
    unit = text[len(number) :]
    if unit not in _UNITS or not number.isdigit() or int(number) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a positive whole number, then KiB, MiB or GiB")
    return int(number) * _UNITS[unit]


def serve_command(args: argparse.Namespace) -> int:
    from agentscore.serve.conversations import DEFAULT_MAX_CONVERSATION_BYTES
    from agentscore.serve.ingest import DEFAULT_MAX_OPEN_BYTES
    from agentscore.serve.service import ServeOptions, run_service

    try:
        return run_service(
            ServeOptions(
                scorers=args.scorers,
                host=args.host,
                port=args.port,
                grpc_port=args.grpc_port,
                queue=args.queue,
                max_queue=args.max_queue,
                concurrency=args.concurrency,
                idle_timeout=args.idle_timeout,
                requests_per_minute=args.requests_per_minute,
                tokens_per_minute=args.tokens_per_minute,
                max_age=args.max_age,
                drain_timeout=args.drain_timeout,
                synchronous=args.synchronous,
                jsonl=args.jsonl,
                forward=args.forward,
                capture_content=args.capture_content,
                ingest_token_file=args.ingest_token_file,
                ssl_certfile=args.ssl_certfile,
                ssl_keyfile=args.ssl_keyfile,
                header_timeout=args.header_timeout,
                body_timeout=args.body_timeout,
                max_connections=args.max_connections,
                connection_idle_timeout=args.connection_idle_timeout,
                max_connection_age=args.max_connection_age,
                grpc_max_calls=args.grpc_max_calls,
                max_open_trace_bytes=args.max_open_trace_bytes or DEFAULT_MAX_OPEN_BYTES,
                spend_per_hour=args.spend_per_hour,
                spend_per_day=args.spend_per_day,
                trace_grace=args.trace_grace,
                conversation_idle=args.conversation_idle,
                max_conversation_bytes=args.max_conversation_bytes
                or DEFAULT_MAX_CONVERSATION_BYTES,
            )
        )
    except (ConfigurationError, ImportError, AttributeError) as exc:
        print(f"agentscore serve: {exc}", file=sys.stderr)
        return 2

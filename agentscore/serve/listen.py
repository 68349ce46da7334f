"""The service's ports: the OTLP/HTTP one bound before anything starts, a failed bind said in
the terms of the option that moves it ("port 4318 is in use: choose another with --port"),
and the log line naming each address once it serves.

uvicorn binds its port only after the app's start-up has run (the worker started, the gRPC
port serving) and reports a taken one as a log line and exit status 3. Bound here first, a
taken port stops the start before anything runs, with the documented exit status 2; uvicorn
then serves on these sockets.
"""

from __future__ import annotations

import asyncio
import errno

import structlog

from agentscore.errors import ConfigurationError

__all__ = [
    "DEFAULT_GRPC_PORT",
    "DEFAULT_HTTP_PORT",
    "HttpListener",
    "check_port",
    "grpc_endpoint",
    "log_listening",
]

# OTLP/HTTP on the standard port, where an app's exporter sends by default: the service is
# then the app's first hop with nothing to configure. OTLP/gRPC beside it, off the standard
# 4317, which Phoenix and a Collector on the same host already hold (docs/deploy.md).
DEFAULT_HTTP_PORT = 4318
DEFAULT_GRPC_PORT = 4319

_log = structlog.get_logger("agentscore.serve")


class HttpListener:
    """Listening at construction on every address `host` resolves to, with the listen
    backlog uvicorn is configured with; raises ConfigurationError. uvicorn serves `sockets`
    and closes them at its shutdown."""

    def __init__(self, host: str, port: int, *, backlog: int) -> None:
        loop = asyncio.new_event_loop()
        try:
            bound = loop.run_until_complete(
                loop.create_server(asyncio.Protocol, host, port, start_serving=False)
            )
            # Copies that outlive this loop: uvicorn serves them on its own.
            self.sockets = [listener.dup() for listener in bound.sockets]
            bound.close()
            loop.run_until_complete(bound.wait_closed())
        except OSError as exc:
            raise _refusal(exc, host, port, "--port") from None
        finally:
            loop.close()
        try:
            for listener in self.sockets:
                listener.listen(backlog)
        except OSError as exc:  # taken between the bind and here by a socket that listens
            self.close()
            raise _refusal(exc, host, port, "--port") from None

    def endpoints(self, *, tls: bool) -> list[str]:
        """`scheme://address:port` of each socket, with the port the system chose for 0."""
        scheme = "https" if tls else "http"
        found = []
        for listener in self.sockets:
            address, port = listener.getsockname()[:2]
            found.append(f"{scheme}://{_bracketed(address)}:{port}")
        return found

    def close(self) -> None:
        for listener in self.sockets:
            listener.close()


def check_port(host: str, port: int, option: str) -> None:
    """Raise the ConfigurationError a listener on (`host`, `port`) would meet now, if any.
    For servers that bind by themselves and say little when they cannot (gRPC); port 0
    always binds."""
    if port == 0:
        return
    loop = asyncio.new_event_loop()
    try:
        probe = loop.run_until_complete(
            loop.create_server(asyncio.Protocol, host, port, start_serving=False)
        )
        probe.close()
        loop.run_until_complete(probe.wait_closed())
    except OSError as exc:
        raise _refusal(exc, host, port, option) from None
    finally:
        loop.close()


def grpc_endpoint(host: str, port: int, *, tls: bool) -> str:
    """What an OTLP/gRPC exporter's endpoint setting takes to reach it."""
    return f"{'https' if tls else 'http'}://{_bracketed(host)}:{port}"


def log_listening(protocol: str, endpoint: str, health: str | None = None) -> None:
    """One line per listening address: what an exporter's traces endpoint is set to."""
    if health is None:
        _log.info("serve_listening", protocol=protocol, endpoint=endpoint)
    else:
        _log.info("serve_listening", protocol=protocol, endpoint=endpoint, health=health)


def _refusal(exc: OSError, host: str, port: int, option: str) -> ConfigurationError:
    if exc.errno == errno.EADDRINUSE:
        return ConfigurationError(f"port {port} is in use: choose another with {option}")
    if exc.errno == errno.EACCES:
        return ConfigurationError(
            f"port {port} needs privileges this user lacks: choose another with {option}"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return ConfigurationError(f"--host {host} is not an address of this machine")
    # A name that does not resolve, most likely.
    return ConfigurationError(
        f"cannot listen on {_bracketed(host)}:{port} ({exc.strerror or exc}): "
        f"check --host and {option}"
    )


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host

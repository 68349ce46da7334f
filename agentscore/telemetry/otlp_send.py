"""POST OTLP/HTTP requests: the service's exports, what `--forward` passes on, and the
exporters of `agentscore.telemetry.otlp`.

agentscore encodes its OTLP itself (`agentscore.telemetry.otlp_encode`, 0.05 ms of CPU per
evaluation; the SDK's encoders, building a protobuf object per field, took 0.18 ms), so it
sends the bytes itself too. A sender is configured as the SDK's exporters are,
per signal over the common variable: `OTEL_EXPORTER_OTLP_{,TRACES_,LOGS_}` ENDPOINT, HEADERS,
TIMEOUT, COMPRESSION (gzip, deflate, none), CERTIFICATE, CLIENT_CERTIFICATE and CLIENT_KEY.
It goes through `requests`, as those exporters do, so proxies and CA bundles from the
environment apply alike; redirects are not followed, and the reply's status line and headers,
then its body, each come within the timeout or the POST counts as unanswered. A refused or
failed POST is not retried here: the service's worker retries the whole export with backoff
and keeps the job rows on disk until a backend took them; the in-process exporters retry
within their timeout.
"""

from __future__ import annotations

import gzip
import os
import re
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

import requests
import structlog
from opentelemetry.util.re import parse_env_headers
from urllib3.exceptions import HTTPError

from agentscore._redact import redact_library_logs
from agentscore.errors import ConfigurationError
from agentscore.telemetry.header_deadline import HeaderDeadlineAdapter

__all__ = [
    "MAX_REPLY_BYTES",
    "MAX_REQUEST_BYTES",
    "OtlpSender",
    "OtlpUnanswered",
    "Signal",
    "endpoint_configured",
    "sendable_header",
    "without_credentials",
]

_log = structlog.get_logger("agentscore.otlp")

Signal = Literal["TRACES", "LOGS", "METRICS"]
_PATHS: dict[Signal, str] = {"TRACES": "v1/traces", "LOGS": "v1/logs", "METRICS": "v1/metrics"}
_DEFAULT_TIMEOUT = 10.0
_DEFAULT_ENDPOINT = "http://localhost:4318"
# Below common receivers' bounds (the Collector's OTLP/HTTP default is 20 MiB).
MAX_REQUEST_BYTES = 4 * 1024 * 1024
_TOO_LARGE = 413
MAX_REPLY_BYTES = 64 * 1024
_READ_BYTES = 8192
_Item = TypeVar("_Item")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# The header parser logs a malformed OTEL_EXPORTER_OTLP_HEADERS value whole, credential and all.
redact_library_logs("opentelemetry.util.re")


class OtlpUnanswered(Exception):
    """No HTTP answer at all (refused, reset, TLS, the timeout); names only the error type."""

    def __init__(self, error_type: str) -> None:
        super().__init__(error_type)
        self.error_type = error_type


class OtlpSender:
    """POSTs to one OTLP/HTTP endpoint over kept-alive connections (thread-safe, as
    `requests` sessions are for posting). `compression` applies to what `deliver` encodes."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        timeout: float = _DEFAULT_TIMEOUT,
        compression: str = "none",
        verify: str | bool = True,
        cert: str | tuple[str, str] | None = None,
    ) -> None:
        self.url = url
        self.headers = {"User-Agent": "agentscore", **headers}
        self.timeout = timeout
        self.compression = compression
        self._session = _session()
        self._pid = os.getpid()
        # Per request, not on the session: requests lets REQUESTS_CA_BUNDLE override a
        # session's `verify`, and the OTLP variable must win.
        self._verify = verify
        self._cert = cert

    @classmethod
    def from_environment(
        cls, signal: Signal, environ: Mapping[str, str] = os.environ
    ) -> OtlpSender:
        """Configured by the OTEL_EXPORTER_OTLP_* variables, as the SDK's exporters are."""

        def setting(name: str) -> str:
            return environ.get(f"OTEL_EXPORTER_OTLP_{signal}_{name}") or environ.get(
                f"OTEL_EXPORTER_OTLP_{name}", ""
            )

        # A per-signal endpoint is used as it is; the common one gets the signal's path.
        # Neither: the SDK's default, a Collector on this host.
        own = environ.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
        common = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or _DEFAULT_ENDPOINT
        url = own or f"{common.rstrip('/')}/{_PATHS[signal]}"
        compression = setting("COMPRESSION").strip().lower() or "none"
        if compression not in ("gzip", "deflate", "none"):
            _log.warning("otlp_compression_unknown", compression=compression[:20])
            compression = "none"
        certificate, key = setting("CLIENT_CERTIFICATE"), setting("CLIENT_KEY")
        headers = dict(parse_env_headers(setting("HEADERS"), liberal=True))
        for position, (name, value) in enumerate(headers.items(), start=1):
            # Sent as is, every export would fail in `requests` and the service would stall
            # degraded: refused at start instead, naming the entry, never its text.
            if not sendable_header(name, value):
                variable = f"OTEL_EXPORTER_OTLP_{signal}_HEADERS"
                raise ConfigurationError(
                    f"{variable if environ.get(variable) else 'OTEL_EXPORTER_OTLP_HEADERS'}: "
                    f"entry {position} has a control character in its value"
                )
        return cls(
            url,
            headers=headers,
            timeout=_seconds(setting("TIMEOUT")),
            compression=compression,
            verify=setting("CERTIFICATE") or True,
            cert=((certificate, key) if key else certificate) if certificate else None,
        )

    def post(
        self,
        body: bytes,
        content_type: str = "application/x-protobuf",
        content_encoding: str = "",
    ) -> int:
        """The backend's status for `body`, sent as it is; raises OtlpUnanswered."""
        headers = {**self.headers, "Content-Type": content_type}
        if content_encoding:
            headers["Content-Encoding"] = content_encoding
        try:
            if self._pid != os.getpid():
                # A forked child (a pre-forking server's worker): its copy of the pool holds
                # the parent's kept-alive sockets, and two processes writing one connection
                # interleave their requests. The child opens its own.
                self._session, self._pid = _session(), os.getpid()
            reply = self._session.post(
                self.url,
                data=body,
                headers=headers,
                timeout=self.timeout,
                verify=self._verify,
                cert=self._cert,
                # A 3xx is a failure: following it would hand the headers (often a
                # credential) to another origin, and a backend that redirects stored nothing.
                allow_redirects=False,
                # Not read whole by `requests`: a backend's endless or huge reply would be
                # held in memory, and a dripping one would hold the export past any timeout.
                stream=True,
            )
        except (requests.RequestException, ValueError, OSError) as exc:
            raise OtlpUnanswered(type(exc).__name__) from None
        with reply:
            self._discard_body(reply)
        return reply.status_code

    def _discard_body(self, reply: requests.Response) -> None:
        """Read the reply's body away (a partial-success notice at most, never needed), so the
        connection can carry the next request; past `MAX_REPLY_BYTES` or the timeout, the
        connection is closed instead."""
        deadline = time.monotonic() + self.timeout
        read = 0
        try:
            # read1: what one read of the socket gives (`read` fills its size first, and a
            # reply dripping a byte at a time would keep it reading, each read in time).
            while chunk := reply.raw.read1(_READ_BYTES, decode_content=False):
                read += len(chunk)
                if read > MAX_REPLY_BYTES or time.monotonic() > deadline:
                    reply.raw.close()
                    return
        except (requests.RequestException, OSError, ValueError, HTTPError):
            reply.raw.close()  # the status came: what follows it does not change it

    def deliver(
        self, items: Sequence[_Item], encode: Callable[[Sequence[_Item]], bytes]
    ) -> list[_Item]:
        """POST `items`, encoded, in requests of at most `MAX_REQUEST_BYTES` (a larger
        batch is halved until it fits, or until one item is left); returns the items the
        backend did not take, to be sent again.

        A 413 halves the request too (the backend's bound may be lower than ours). One item
        refused as too large on its own can never be delivered: it is logged and left out,
        so it does not hold every later export back (its score was kept and delivered to
        the sinks; only the backend lacks it)."""
        body = encode(items)
        if len(items) > 1 and len(body) > MAX_REQUEST_BYTES:
            return self._halves(items, encode)
        try:
            status = self._post_compressed(body)
        except OtlpUnanswered as exc:
            _log.warning(
                "otlp_export_unanswered",
                endpoint=without_credentials(self.url),
                error_type=exc.error_type,
            )
            return list(items)
        if 200 <= status < 300:
            return []
        if status == _TOO_LARGE:
            if len(items) > 1:
                return self._halves(items, encode)
            _log.error(
                "otlp_export_item_too_large",
                endpoint=without_credentials(self.url),
                bytes=len(body),
                hint="the backend refuses this one evaluation as too large (413); it is "
                "not exported. Raise the backend's request size limit, or turn content "
                "capture off",
            )
            return []
        _log.warning("otlp_export_refused", endpoint=without_credentials(self.url), status=status)
        return list(items)

    def _post_compressed(self, body: bytes) -> int:
        if self.compression == "gzip":
            return self.post(gzip.compress(body, compresslevel=6, mtime=0), content_encoding="gzip")
        if self.compression == "deflate":
            return self.post(zlib.compress(body), content_encoding="deflate")
        return self.post(body)

    def _halves(
        self, items: Sequence[_Item], encode: Callable[[Sequence[_Item]], bytes]
    ) -> list[_Item]:
        middle = len(items) // 2
        left = self.deliver(items[:middle], encode)
        if left:  # the backend is failing: the other half waits for the next export
            return left + list(items[middle:])
        return self.deliver(items[middle:], encode)

    def close(self) -> None:
        self._session.close()


def _session() -> requests.Session:
    session = requests.Session()
    adapter = HeaderDeadlineAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def sendable_header(name: str, value: str) -> bool:
    """A header name that is a token, and a value without control characters (a CR or LF
    would end the header and start another)."""
    return bool(_HEADER_NAME.fullmatch(name)) and not _CONTROL.search(value)


def endpoint_configured(signal: Signal, environ: Mapping[str, str] = os.environ) -> bool:
    return bool(
        environ.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    )


def without_credentials(url: str) -> str:
    """`url` as it may be logged: no user:password@, no query."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return "a URL that does not parse"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _seconds(raw: str) -> float:
    # Seconds, as the SDK's exporters read it (not the milliseconds the spec says).
    try:
        value = float(raw) if raw else _DEFAULT_TIMEOUT
    except ValueError:
        return _DEFAULT_TIMEOUT
    return value if value > 0 else _DEFAULT_TIMEOUT

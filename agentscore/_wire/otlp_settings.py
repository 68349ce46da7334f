"""Where and how OTLP goes out, read from the standard OTEL_EXPORTER_OTLP_* variables as the
SDK's exporters read them: per signal over the common variable, for ENDPOINT, HEADERS,
TIMEOUT, COMPRESSION (gzip, deflate, none), CERTIFICATE, CLIENT_CERTIFICATE and CLIENT_KEY.

Written here because no library offers it apart from sending: the SDK reads these
variables inside its OTLP/HTTP exporters (in private helpers of a package that brings
`requests`), and those exporters send through `requests`, follow a redirect (a POST
answered 302 goes on, headers and all, to wherever `Location` points) and count a 3xx as
delivered. The header list itself is parsed by OpenTelemetry's own parser, and every value
means what the SDK says.
"""

from __future__ import annotations

import os
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

import structlog
from opentelemetry.util.re import parse_env_headers

from agentscore._redact import redact_library_logs
from agentscore.errors import ConfigurationError

__all__ = [
    "OtlpSettings",
    "Signal",
    "endpoint_configured",
    "sendable_header",
    "without_credentials",
]

_log = structlog.get_logger("agentscore.otlp")

Signal = Literal["TRACES", "LOGS", "METRICS"]
_PATHS: dict[Signal, str] = {"TRACES": "v1/traces", "LOGS": "v1/logs", "METRICS": "v1/metrics"}
DEFAULT_TIMEOUT = 10.0
_DEFAULT_ENDPOINT = "http://localhost:4318"
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# The header parser logs a malformed OTEL_EXPORTER_OTLP_HEADERS value whole, credential and all.
redact_library_logs("opentelemetry.util.re")


@dataclass(frozen=True)
class OtlpSettings:
    """One endpoint and what every request to it carries. `headers` are secrets: the
    redaction covers them because they come from a credential-named variable."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    compression: Literal["gzip", "deflate", "none"] = "none"
    certificate: str | None = None  # a CA bundle to trust instead of the system's
    client_certificate: str | None = None
    client_key: str | None = None

    @classmethod
    def from_environment(
        cls, signal: Signal, environ: Mapping[str, str] = os.environ
    ) -> OtlpSettings:
        """Raises ConfigurationError for a header no request can carry, naming its position
        and variable, never its text."""

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
        headers = dict(parse_env_headers(setting("HEADERS"), liberal=True))
        for position, (name, value) in enumerate(headers.items(), start=1):
            # Sent as is, every export would fail and the service would stall degraded:
            # refused at start instead.
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
            compression=compression,  # type: ignore[arg-type]  # one of the three, checked
            certificate=setting("CERTIFICATE") or None,
            client_certificate=setting("CLIENT_CERTIFICATE") or None,
            client_key=setting("CLIENT_KEY") or None,
        )

    def tls(self) -> ssl.SSLContext | bool:
        """What the client verifies the server with (and proves itself with): True for the
        system's trust store when no file is named. A file that cannot be read is a
        ConfigurationError naming the setting."""
        if not (self.certificate or self.client_certificate):
            return True
        try:
            context = ssl.create_default_context(cafile=self.certificate)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigurationError(
                f"OTEL_EXPORTER_OTLP_CERTIFICATE: cannot load it ({type(exc).__name__})"
            ) from None
        if self.client_certificate:
            try:
                context.load_cert_chain(self.client_certificate, self.client_key)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigurationError(
                    "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE / _CLIENT_KEY: cannot load them "
                    f"({type(exc).__name__})"
                ) from None
        return context


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
        value = float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if value > 0 else DEFAULT_TIMEOUT

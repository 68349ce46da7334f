"""`--forward URL`: pass each received OTLP request on unchanged, so the service can sit inline
between the app and its backend.

The request is forwarded before it is read and queued, and answered 200 only when both the
backend and the queue took it. A backend that refuses makes the service answer 503, which the
app's exporter retries: no span reaches the scorer that the backend did not get, and the
backend may see a request twice (the same span ids) only when queueing failed after it.

A backend that wants credentials gets them from `AGENTSCORE_FORWARD_HEADERS`, in the format
of `OTEL_EXPORTER_OTLP_HEADERS` ("authorization=Bearer%20...,x-team=a"): an environment
variable, not a flag, so the secret stays out of `ps` and shell history; its values are
redacted like every key the process knows. The request goes through the one HTTP stack
(`agentscore._wire.otlp_out`, over `agentscore._wire.http`): a deadline on the whole
exchange, and redirects never followed. A 3xx is a failed forward, since following it would
send those credentials to another origin (and a backend that answers 3xx to a POST has
stored nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import unquote

from agentscore._wire.otlp_out import OtlpSender, OtlpUnanswered
from agentscore._wire.otlp_settings import OtlpSettings, sendable_header
from agentscore.errors import ConfigurationError

__all__ = [
    "FORWARD_HEADERS_ENV",
    "FORWARD_USER_AGENT",
    "ForwardError",
    "forward",
    "forward_headers",
    "forward_sender",
]

FORWARD_HEADERS_ENV = "AGENTSCORE_FORWARD_HEADERS"
# Tells a backend (and its logs) which requests the service passed on, not made itself.
FORWARD_USER_AGENT = "agentscore-serve (forward)"


class ForwardError(Exception):
    """The backend did not accept the forwarded request."""


def forward_headers(environ: Mapping[str, str]) -> dict[str, str]:
    """The extra headers `environ` asks the forwarded requests to carry.

    Parsed here rather than by OpenTelemetry's helper, which logs a malformed value whole:
    this one holds a credential, so an error names the position, never the text."""
    headers: dict[str, str] = {}
    raw = environ.get(FORWARD_HEADERS_ENV, "")
    for position, pair in enumerate(raw.split(",") if raw.strip() else (), start=1):
        name, equals, value = pair.partition("=")
        name, value = name.strip(), unquote(value.strip())
        if not equals or not sendable_header(name, value):
            raise ConfigurationError(
                f"{FORWARD_HEADERS_ENV}: entry {position} is not name=value (a header name, "
                "then a URL-encoded value without control characters)"
            )
        headers[name] = value
    return headers


def forward_sender(url: str, environ: Mapping[str, str]) -> OtlpSender:
    """The sender `--forward URL` posts through, with the headers `environ` asks for."""
    return OtlpSender(
        OtlpSettings(url, headers=forward_headers(environ)), user_agent=FORWARD_USER_AGENT
    )


def forward(sender: OtlpSender, body: bytes, content_type: str, content_encoding: str) -> None:
    """Pass one received request on, same bytes, type and encoding; raises ForwardError."""
    try:
        status, _ = sender.post(body, content_type, content_encoding)
    except OtlpUnanswered as exc:
        raise ForwardError(f"backend unreachable: {exc.error_type}") from None
    if not 200 <= status < 300:
        raise ForwardError(f"backend answered {status}")

"""`--forward URL`: pass each received OTLP request on unchanged, so the service can sit inline
between the app and its backend.

The request is forwarded before it is read and queued, and answered 200 only when both the
backend and the queue took it. A backend that refuses makes the service answer 503, which the
app's exporter retries: no span reaches the scorer that the backend did not get, and the
backend may see a request twice (the same span ids) only when queueing failed after it.

A backend that wants credentials gets them from `AGENTSCORE_FORWARD_HEADERS`, in the format
of `OTEL_EXPORTER_OTLP_HEADERS` ("authorization=Bearer%20...,x-team=a"): an environment
variable, not a flag, so the secret stays out of `ps` and shell history; its values are
redacted like every key the process knows. Redirects are never followed: a 3xx is a failed
forward, since following it would send those credentials to another origin (and a backend
that answers 3xx to a POST has stored nothing).
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from urllib.parse import unquote

from agentscore.errors import ConfigurationError

__all__ = ["FORWARD_HEADERS_ENV", "ForwardError", "forward", "forward_headers"]

FORWARD_HEADERS_ENV = "AGENTSCORE_FORWARD_HEADERS"


class ForwardError(Exception):
    """The backend did not accept the forwarded request."""


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def forward_headers(environ: Mapping[str, str]) -> dict[str, str]:
    """The extra headers `environ` asks the forwarded requests to carry.

    Parsed here rather than by OpenTelemetry's helper, which logs a malformed value whole:
    this one holds a credential, so an error names the position, never the text."""
    headers: dict[str, str] = {}
    raw = environ.get(FORWARD_HEADERS_ENV, "")
    for position, pair in enumerate(raw.split(",") if raw.strip() else (), start=1):
        name, equals, value = pair.partition("=")
        name, value = name.strip(), unquote(value.strip())
        if not equals or not _HEADER_NAME.fullmatch(name) or _CONTROL.search(value):
            raise ConfigurationError(
                f"{FORWARD_HEADERS_ENV}: entry {position} is not name=value (a header name, "
                "then a URL-encoded value without control characters)"
            )
        headers[name] = value
    return headers


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # urllib then raises the 3xx as an HTTPError


_opener = urllib.request.build_opener(_NoRedirect)


def forward(
    url: str,
    body: bytes,
    content_type: str,
    content_encoding: str,
    extra_headers: Mapping[str, str],
) -> None:
    headers = {**extra_headers, "Content-Type": content_type}
    if content_encoding:
        headers["Content-Encoding"] = content_encoding
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with _opener.open(request, timeout=10) as reply:
            reply.read()
    except urllib.error.HTTPError as exc:
        raise ForwardError(f"backend answered {exc.code}") from None
    except OSError as exc:
        raise ForwardError(f"backend unreachable: {type(exc).__name__}") from None

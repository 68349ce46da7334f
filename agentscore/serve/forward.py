"""`--forward URL`: pass each received OTLP request on unchanged, so the service can sit inline
between the app and its backend.

The request is forwarded before it is read and queued, and answered 200 only when both the
backend and the queue took it. A backend that refuses makes the service answer 503, which the
app's exporter retries: no span reaches the scorer that the backend did not get, and the
backend may see a request twice (the same span ids) only when queueing failed after it.

A backend that wants credentials gets them from `AGENTSCORE_FORWARD_HEADERS`, in the format
of `OTEL_EXPORTER_OTLP_HEADERS` ("authorization=Bearer%20...,x-team=a"): an environment
variable, not a flag, so the secret stays out of `ps` and shell history; its values are
redacted like every key the process knows.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping

from opentelemetry.util.re import parse_env_headers

__all__ = ["FORWARD_HEADERS_ENV", "ForwardError", "forward", "forward_headers"]

FORWARD_HEADERS_ENV = "AGENTSCORE_FORWARD_HEADERS"


class ForwardError(Exception):
    """The backend did not accept the forwarded request."""


def forward_headers(environ: Mapping[str, str]) -> dict[str, str]:
    """The extra headers `environ` asks the forwarded requests to carry."""
    return dict(parse_env_headers(environ.get(FORWARD_HEADERS_ENV, ""), liberal=True))


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
        with urllib.request.urlopen(request, timeout=10) as reply:
            reply.read()
    except urllib.error.HTTPError as exc:
        raise ForwardError(f"backend answered {exc.code}") from None
    except OSError as exc:
        raise ForwardError(f"backend unreachable: {type(exc).__name__}") from None

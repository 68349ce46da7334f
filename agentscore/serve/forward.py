"""`--forward URL`: pass each received OTLP request on unchanged, so the service can sit inline
between the app and its backend.

The request is forwarded before it is read and queued, and answered 200 only when both the
backend and the queue took it. A backend that refuses makes the service answer 503, which the
app's exporter retries: no span reaches the scorer that the backend did not get, and the
backend may see a request twice (the same span ids) only when queueing failed after it.
"""

from __future__ import annotations

import urllib.error
import urllib.request

__all__ = ["ForwardError", "forward"]


class ForwardError(Exception):
    """The backend did not accept the forwarded request."""


def forward(url: str, body: bytes, content_type: str, content_encoding: str) -> None:
    headers = {"Content-Type": content_type}
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

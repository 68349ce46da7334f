"""Scrub secrets from text before it reaches a span, a log line or an error message."""

from __future__ import annotations

import re

__all__ = ["redact"]

# Shapes of common API credentials: OpenAI/Anthropic style keys, bearer tokens, key=value pairs.
_SECRET_PATTERNS = (
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-]{8,}"),
    re.compile(
        r"(?i)\b(api[_-]?key|authorization|token|secret)([\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{6,}"
    ),
)
_MAX_LENGTH = 2000


def redact(text: str, *secrets: str | None) -> str:
    """Return `text` with known secrets and credential-shaped substrings replaced, and bounded."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[REDACTED]")
    text = _SECRET_PATTERNS[0].sub("[REDACTED]", text)
    text = _SECRET_PATTERNS[1].sub("Bearer [REDACTED]", text)
    text = _SECRET_PATTERNS[2].sub(r"\1\2[REDACTED]", text)
    if len(text) > _MAX_LENGTH:
        text = text[:_MAX_LENGTH] + "…"
    return text

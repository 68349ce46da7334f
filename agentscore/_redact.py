"""Scrub secrets from text before it reaches a span, a log line, a result or an error message.

Patterns alone miss keys of unknown shape (`gsk_...`, a proxy's token), so the keys the
process knows are removed verbatim first: those passed to judges and agents
(`register_secret`) and the values of credential-named environment variables, read at
redaction time so a key set late is still covered.

Redaction runs on every judge reply a service scores, so it is kept cheap: the known keys are
worked out again only when the environment or the registered keys changed, and data with
nothing to redact (the usual case) is checked with one search per key and pattern, not
rewritten string by string.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Mapping, Sequence

__all__ = [
    "known_secrets",
    "redact",
    "redact_exception",
    "redact_library_logs",
    "register_secret",
    "scrub",
    "scrub_data",
]

_REPLACEMENT = "[REDACTED]"
# Shorter values ("1", "true") would blank out ordinary words and numbers.
_MIN_SECRET_LENGTH = 8
_SECRET_ENV = re.compile(
    r"(?i)(?:_API_KEY|_TOKEN|_SECRET|_SECRET_KEY|^OTEL_EXPORTER_OTLP(?:_\w+)?_HEADERS"
    r"|^AGENTSCORE_FORWARD_HEADERS)$"
)
# Shapes of common API credentials: OpenAI/Anthropic style keys, bearer tokens, key=value
# pairs. Base64 keys carry `/`, `+` and `=`; a token class without them stops halfway.
_TOKEN = r"[A-Za-z0-9_\-/+=.~]"
_SECRET_PATTERNS = (
    (re.compile(rf"\b(?:sk|pk|rk|gsk|xai)[-_]{_TOKEN}{{8,}}"), _REPLACEMENT),
    (re.compile(rf"(?i)\bbearer\s+{_TOKEN}{{8,}}"), "Bearer " + _REPLACEMENT),
    # A credential-named field or parameter, its name whole ("access_token", "X-Api-Key",
    # "client_secret", "password"), up to the end of its value ("&" ends a query parameter).
    (
        re.compile(
            r"(?i)(?<![A-Za-z0-9_\-])((?:[a-z0-9]+[_-])*"
            r"(?:api[_-]?key|authorization|token|secret|password|passwd|pwd|credentials?))"
            r"([\"']?\s*[:=]\s*[\"']?)[^\s\"',}&]{6,}"
        ),
        r"\1\2" + _REPLACEMENT,
    ),
    # The user-info part of a URL ("https://user:password@proxy").
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/:@]+:[^\s/@]+@"), r"\1" + _REPLACEMENT + "@"),
)
# What each pattern cannot match without, in the lower-cased text: a substring search (C
# speed) rules most text out before a pattern scans it, so a clean reply costs little.
_PATTERN_NEEDS = (
    ("sk-", "sk_", "pk-", "pk_", "rk-", "rk_", "xai-", "xai_"),
    ("bearer",),
    ("key", "authorization", "token", "secret", "passw", "pwd", "credential"),
    ("://",),
)
_MAX_LENGTH = 2000

_registered: set[str] = set()
_lock = threading.Lock()
# (registered keys, a copy of the environment's raw mapping, the known secrets they give).
_known: tuple[frozenset[str], dict[object, object], tuple[str, ...]] | None = None


def register_secret(secret: str | None) -> None:
    """Remember `secret` (an API key given to a judge or an agent) so `redact` removes it."""
    if secret and len(secret) >= _MIN_SECRET_LENGTH:
        with _lock:
            _registered.add(secret)


def known_secrets() -> tuple[str, ...]:
    """Every key the process knows, longest first so a key inside another goes with it.

    Reading the environment decodes every variable (tens of microseconds), and this runs for
    every reply scored: the answer is kept until the registered keys or the environment change.
    The environment is compared through `os.environ`'s own mapping of raw values, which a
    dict comparison checks in C; where it is missing, the environment is read every time."""
    global _known
    with _lock:
        registered = frozenset(_registered)
    raw: Mapping[object, object] | None = getattr(os.environ, "_data", None)
    cached = _known
    if cached is not None and raw is not None and cached[0] == registered and cached[1] == raw:
        return cached[2]
    secrets = set(registered)
    for name, value in os.environ.items():
        if _SECRET_ENV.search(name):
            secrets.update(_env_secret_parts(value))
    known = tuple(sorted(secrets, key=len, reverse=True))
    if raw is not None:
        _known = (registered, dict(raw), known)
    return known


def redact(text: str, *secrets: str | None) -> str:
    """Return `text` with known secrets and credential-shaped substrings replaced, and bounded."""
    text = scrub(text, *secrets)
    if len(text) > _MAX_LENGTH:
        text = text[:_MAX_LENGTH] + "…"
    return text


def scrub(text: str, *secrets: str | None, known: Sequence[str] | None = None) -> str:
    """`redact` without the length bound, for text that is kept whole (a verdict's reason).
    `known`: `known_secrets()` read once by a caller scrubbing many strings."""
    known = known_secrets() if known is None else known
    for secret in (*(s for s in secrets if s and len(s) >= 4), *known):
        text = text.replace(secret, _REPLACEMENT)
    for pattern, replacement in _patterns_for(text):
        text = pattern.sub(replacement, text)
    return text


def scrub_data(data: object) -> object:
    """Every string in JSON-like data (dicts, lists, tuples) scrubbed; the rest as it is.
    Data with nothing to scrub comes back as it is (the same object)."""
    known = known_secrets()
    if not _needs_scrubbing(_strings(data), known):
        return data

    def walk(item: object) -> object:
        if isinstance(item, str):
            return scrub(item, known=known)
        if isinstance(item, dict):
            return {key: walk(value) for key, value in item.items()}
        if isinstance(item, list | tuple):
            return [walk(value) for value in item]
        return item

    return walk(data)


def _needs_scrubbing(text: str, known: Sequence[str]) -> bool:
    """Whether `scrub` would change `text`: a known key in it, or a credential-shaped part.
    Searching is much cheaper than rewriting, and most text holds neither."""
    return any(secret in text for secret in known) or any(
        pattern.search(text) for pattern, _ in _patterns_for(text)
    )


def _patterns_for(text: str) -> list[tuple[re.Pattern[str], str]]:
    """The patterns that may match `text`: each needs one of its substrings in it. Only for
    ASCII: a case-insensitive pattern takes "ſ" for "s" and "İ" for "i", which `lower` does
    not turn into them."""
    if not text.isascii():
        return list(_SECRET_PATTERNS)
    lowered = text.lower()
    return [
        entry
        for entry, needs in zip(_SECRET_PATTERNS, _PATTERN_NEEDS, strict=True)
        if any(need in lowered for need in needs)
    ]


def _strings(data: object) -> str:
    """The strings in `data`, one a line. A line break stands where a string starts or ends
    for the patterns (it is no token character, as the start of a string is none), so a
    search of the whole finds whatever a search of each string would, and a match across two
    strings only costs a needless scrub."""
    parts: list[str] = []

    def collect(item: object) -> None:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict):
            for value in item.values():
                collect(value)
        elif isinstance(item, list | tuple):
            for value in item:
                collect(value)

    collect(data)
    return "\n".join(parts)


def redact_exception(exc: BaseException) -> BaseException:
    """Remove secrets from an exception's text in place, so it can be raised as it is (its
    type and traceback kept): its arguments, and the `message` and `body` of API errors (a
    provider's 401 often quotes the key it refused), along its cause and context chain."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.args = tuple(scrub_data(arg) for arg in current.args)
        for name in ("message", "body"):
            value = getattr(current, name, None)
            if isinstance(value, str | dict | list):
                # A read-only property gets its text from the arguments, scrubbed above.
                with contextlib.suppress(AttributeError):
                    setattr(current, name, scrub_data(value))
        current = current.__cause__ or current.__context__
    return exc


def _env_secret_parts(value: str) -> list[str]:
    # OTLP headers are "name=value,name2=value2": the values are the secrets.
    parts = [value.strip()]
    if "=" in value:
        parts += [item.partition("=")[2].strip() for item in value.split(",")]
    return [part for part in parts if len(part) >= _MIN_SECRET_LENGTH]


class _RedactingFilter(logging.Filter):
    """Scrubs a library's log record before any handler sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: leave it
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def redact_library_logs(*names: str) -> None:
    """Redact what the named loggers of other libraries write: OpenTelemetry's header parser
    logs a malformed `OTEL_EXPORTER_OTLP_HEADERS` value whole, credential included."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _RedactingFilter) for f in logger.filters):
            logger.addFilter(_RedactingFilter())

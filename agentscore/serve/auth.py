"""Ingest credentials: the bearer token every ingest request must carry when one is set.

The token comes from `AGENTSCORE_INGEST_TOKEN` or from a file (`--ingest-token-file`, for
mounted secrets), never from a flag's value, so it stays out of `ps` and shell history. The
check is one function of the `Authorization` value, so OTLP/HTTP headers and gRPC metadata
share it; it compares in constant time and never echoes what it was given.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from pathlib import Path

from agentscore._redact import register_secret
from agentscore.errors import ConfigurationError

__all__ = ["INGEST_TOKEN_ENV", "bearer_allowed", "load_ingest_token"]

INGEST_TOKEN_ENV = "AGENTSCORE_INGEST_TOKEN"

# RFC 6750's token68 characters: anything else could not travel in a header unchanged.
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_MIN_LENGTH = 16


def load_ingest_token(environ: Mapping[str, str], token_file: str | None = None) -> bytes | None:
    """The token ingest requests must present, or None when ingest is open.

    A file's one trailing newline is dropped (`echo` and Kubernetes secrets add one). Errors
    name where the token came from, never its text."""
    from_env = environ.get(INGEST_TOKEN_ENV)
    if token_file is not None and from_env is not None:
        raise ConfigurationError(
            f"both {INGEST_TOKEN_ENV} and --ingest-token-file are set; use one"
        )
    if token_file is not None:
        source = f"--ingest-token-file {token_file}"
        try:
            token = Path(token_file).read_text(encoding="utf-8").removesuffix("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(f"{source}: cannot read it ({type(exc).__name__})") from None
    elif from_env is not None:
        source, token = INGEST_TOKEN_ENV, from_env
    else:
        return None
    if len(token) < _MIN_LENGTH or not _TOKEN68.fullmatch(token):
        raise ConfigurationError(
            f"{source}: the token must be at least {_MIN_LENGTH} characters of "
            "A-Z a-z 0-9 - . _ ~ + / (then optional '='), e.g. `openssl rand -hex 32`"
        )
    register_secret(token)  # a token read from a file is unknown to redaction otherwise
    return token.encode("ascii")


def bearer_allowed(expected: bytes | None, authorization: str | bytes | None) -> bool:
    """Whether an `Authorization` value lets a request in: always when no token is set,
    otherwise only `Bearer <expected>` (the scheme's case is free, RFC 7235)."""
    if expected is None:
        return True
    if authorization is None:
        return False
    if isinstance(authorization, str):
        try:
            authorization = authorization.encode("ascii")
        except UnicodeEncodeError:
            return False
    scheme, _, presented = authorization.strip().partition(b" ")
    # Both sides are compared whole even for a wrong scheme, so timing tells nothing apart.
    scheme_ok = hmac.compare_digest(scheme.lower(), b"bearer")
    token_ok = hmac.compare_digest(presented.strip(), expected)
    return scheme_ok and token_ok

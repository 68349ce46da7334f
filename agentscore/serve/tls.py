"""The TLS certificate and key, checked before anything listens.

uvicorn and gRPC each load them only when they bind, and say what is wrong in their own way:
a traceback from uvicorn, a port that "cannot be bound" from gRPC, or, for a key encrypted
with a pass phrase, OpenSSL asking for it at the terminal and waiting. Here each problem is
one line naming the file and what is wrong with it (a `ConfigurationError`: exit 2). Nothing
of a file's text is ever quoted.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from agentscore.errors import ConfigurationError

__all__ = ["check_tls_files"]

_ENCRYPTED_MARKERS = (b"-----BEGIN ENCRYPTED PRIVATE KEY-----", b"Proc-Type: 4,ENCRYPTED")


class _PassPhraseAsked(Exception):
    pass


def check_tls_files(certfile: str, keyfile: str) -> None:
    """Raise `ConfigurationError` unless `certfile` holds PEM certificates and `keyfile` the
    unencrypted PEM private key of the first."""
    certificate = _read(certfile, "--ssl-certfile")
    key = _read(keyfile, "--ssl-keyfile")
    if not _pem_certificates(certificate):
        raise ConfigurationError(f"--ssl-certfile {certfile}: not a PEM certificate")
    if any(marker in key for marker in _ENCRYPTED_MARKERS):
        raise _encrypted(keyfile)
    if b"-----BEGIN" not in key or b"PRIVATE KEY-----" not in key:
        raise ConfigurationError(f"--ssl-keyfile {keyfile}: not a PEM private key")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(certfile, keyfile, password=_refuse_pass_phrase)
    except _PassPhraseAsked:
        raise _encrypted(keyfile) from None
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            raise ConfigurationError(
                f"--ssl-keyfile {keyfile}: does not match the certificate in {certfile}"
            ) from None
        reason = exc.reason or type(exc).__name__
        raise ConfigurationError(
            f"--ssl-keyfile {keyfile}: not a PEM private key OpenSSL can read ({reason})"
        ) from None


def _read(path: str, option: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"{option} {path}: cannot read it ({exc.strerror})") from None


def _pem_certificates(data: bytes) -> bool:
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return False
    if "-----BEGIN CERTIFICATE-----" not in text:
        return False
    try:  # parses every certificate in the text
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=text)
    except (ssl.SSLError, ValueError):
        return False
    return True


def _refuse_pass_phrase() -> bytes:
    # Called by OpenSSL only for an encrypted key; without it, OpenSSL prompts on the terminal.
    raise _PassPhraseAsked


def _encrypted(keyfile: str) -> ConfigurationError:
    return ConfigurationError(
        f"--ssl-keyfile {keyfile}: the key is encrypted (it needs a pass phrase); give the "
        "service an unencrypted key, e.g. from `openssl pkey -in KEY -out PLAIN_KEY`"
    )

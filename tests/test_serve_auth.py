"""The ingest token check on its own: where the token comes from, and what lets a request in."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentscore._redact import redact
from agentscore.errors import ConfigurationError
from agentscore.serve.auth import INGEST_TOKEN_ENV, bearer_allowed, load_ingest_token

TOKEN = "s3cr3t-ingest-token-0123456789"


def test_no_token_set_leaves_ingest_open() -> None:
    assert load_ingest_token({}) is None
    assert bearer_allowed(None, None)
    assert bearer_allowed(None, b"Bearer anything")


def test_only_the_exact_bearer_token_is_allowed() -> None:
    expected = load_ingest_token({INGEST_TOKEN_ENV: TOKEN})
    assert expected == TOKEN.encode()
    assert bearer_allowed(expected, f"Bearer {TOKEN}".encode())
    assert bearer_allowed(expected, f"bearer {TOKEN}")  # gRPC metadata arrives as str
    for wrong in (
        None,
        b"",
        TOKEN.encode(),  # no scheme
        f"Basic {TOKEN}".encode(),
        f"Bearer {TOKEN}x".encode(),
        f"Bearer {TOKEN[:-1]}".encode(),
        b"Bearer \xff\xfe",
        "Bearer s3cr3t-ingest-tokén-0123456789",
    ):
        assert not bearer_allowed(expected, wrong), wrong


def test_a_mounted_secret_file_loses_its_trailing_newline_and_is_redacted(
    tmp_path: Path,
) -> None:
    secret = "mounted-ingest-secret-abcdef0123"
    path = tmp_path / "token"
    path.write_text(secret + "\n")
    assert load_ingest_token({}, str(path)) == secret.encode()
    assert secret not in redact(f"the request carried {secret}")


@pytest.mark.parametrize(
    ("environ", "file_text", "message"),
    [
        ({INGEST_TOKEN_ENV: "short"}, None, "at least 16"),
        ({INGEST_TOKEN_ENV: "has spaces in the middle of it"}, None, "at least 16"),
        ({INGEST_TOKEN_ENV: TOKEN}, TOKEN, "use one"),
        ({}, None, "cannot read it (FileNotFoundError)"),
    ],
)
def test_a_bad_token_setting_is_refused_without_echoing_it(
    tmp_path: Path, environ: dict[str, str], file_text: str | None, message: str
) -> None:
    path = tmp_path / "token"
    if file_text is not None:
        path.write_text(file_text)
    token_file = str(path) if file_text is not None or not environ else None
    with pytest.raises(ConfigurationError, match=re.escape(message)) as caught:
        load_ingest_token(environ, token_file)
    for value in environ.values():
        assert value not in str(caught.value)

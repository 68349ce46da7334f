"""TLS files that cannot work stop `agentscore serve` at start: exit 2, and a line on stderr
naming the file and what is wrong with it (never a port error, a traceback, or a prompt for a
pass phrase). Certificates are made with trustme; the service is a real subprocess with its
standard input closed and no terminal."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
import trustme
from cryptography.hazmat.primitives import serialization

from tests.support.serve import ROOT, SERVE_SCORERS, free_port


def _pair(folder: Path, name: str) -> tuple[Path, Path]:
    issued = trustme.CA().issue_cert("127.0.0.1")
    cert, key = folder / f"{name}.crt", folder / f"{name}.key"
    issued.cert_chain_pems[0].write_to_path(str(cert))
    issued.private_key_pem.write_to_path(str(key))
    return cert, key


def _serve(folder: Path, cert: Path, key: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agentscore.cli", "serve"]
    command += ["--scorers", SERVE_SCORERS, "--queue", str(folder / "q.db")]
    command += ["--port", str(free_port()), "--grpc-port", str(free_port())]
    command += ["--ssl-certfile", str(cert), "--ssl-keyfile", str(key)]
    return subprocess.run(
        command,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=folder,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # no terminal to prompt on
        capture_output=True,
        text=True,
        timeout=60,
    )


def _mismatched(folder: Path) -> tuple[Path, Path, Path, str]:
    cert, _ = _pair(folder, "one")
    _, key = _pair(folder, "other")
    return cert, key, key, "does not match the certificate"


def _not_pem_certificate(folder: Path) -> tuple[Path, Path, Path, str]:
    cert, key = _pair(folder, "one")
    der = trustme.CA().issue_cert("127.0.0.1").cert_chain_pems[0].bytes()
    cert.write_bytes(ssl.PEM_cert_to_DER_cert(der.decode()))
    return cert, key, cert, "not a PEM certificate"


def _encrypted_key(folder: Path) -> tuple[Path, Path, Path, str]:
    cert, key = _pair(folder, "one")
    private = serialization.load_pem_private_key(key.read_bytes(), password=None)
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"a pass phrase"),
        )
    )
    return cert, key, key, "encrypted"


def _not_a_key(folder: Path) -> tuple[Path, Path, Path, str]:
    cert, key = _pair(folder, "one")
    key.write_bytes(cert.read_bytes())  # the certificate again
    return cert, key, key, "not a PEM private key"


@pytest.mark.parametrize("make", [_mismatched, _not_pem_certificate, _encrypted_key, _not_a_key])
def test_tls_files_that_cannot_work_are_named_with_their_problem_and_exit_2(
    tmp_path: Path, make: object
) -> None:
    cert, key, culprit, problem = make(tmp_path)  # type: ignore[operator]
    done = _serve(tmp_path, cert, key)
    assert done.returncode == 2, done.stderr
    assert str(culprit) in done.stderr
    assert problem in done.stderr
    assert "Traceback" not in done.stderr
    assert "cannot listen" not in done.stderr
    assert "PRIVATE KEY" not in done.stderr  # nothing of the key's text


def test_a_missing_tls_file_is_named(tmp_path: Path) -> None:
    cert, _ = _pair(tmp_path, "one")
    done = _serve(tmp_path, cert, tmp_path / "absent.key")
    assert done.returncode == 2
    assert str(tmp_path / "absent.key") in done.stderr
    assert "Traceback" not in done.stderr

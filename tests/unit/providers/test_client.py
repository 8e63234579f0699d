"""The model client's TLS: the system's certificates for https, a context trusting nothing for
plain http (never used, and failing closed if it were), the default again behind a proxy."""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import threading
from pathlib import Path

import pytest

from comal.providers.client import tls_for


def test_https_servers_are_verified_with_the_system_certificates() -> None:
    assert tls_for("https://api.example.com/v1") is True


def test_a_plain_http_server_gets_a_context_that_trusts_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    context = tls_for("HTTP://127.0.0.1:8080/v1")
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.get_ca_certs() == []


def test_behind_a_proxy_the_default_verification_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "https://proxy.example:3128")
    assert tls_for("http://127.0.0.1:8080/v1") is True


def test_the_context_that_trusts_nothing_fails_a_real_handshake_closed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Against a real TLS server (a self-signed certificate for 127.0.0.1, made by openssl), the
    handshake fails at the certificate: nothing passes unverified."""
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    context = tls_for("http://127.0.0.1:1")
    assert isinstance(context, ssl.SSLContext)
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    request = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    names = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    files = ["-keyout", str(key), "-out", str(cert)]
    subprocess.run([*request, *names, *files], check=True, capture_output=True)
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with contextlib.suppress(ssl.SSLError, OSError):
            server_side.wrap_socket(conn, server_side=True).close()
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        pytest.raises(ssl.SSLCertVerificationError),
    ):
        context.wrap_socket(raw, server_hostname="127.0.0.1")
    listener.close()
    # The same certificate trusted, the same handshake passes: the failure was the trust.
    trusting = ssl.create_default_context(cafile=str(cert))
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    threading.Thread(target=serve, daemon=True).start()
    with socket.create_connection(("127.0.0.1", port)) as raw:
        trusting.wrap_socket(raw, server_hostname="127.0.0.1").close()
    listener.close()

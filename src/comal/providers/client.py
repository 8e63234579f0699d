"""The HTTP client a session talks to its model server through.

httpx builds its default TLS context when the client is made, loading the system's
certificate bundle: about 70 ms of CPU, a sixth of what `comal -p` spends before its first
request, and spent for nothing when the server is plain `http://` (llama.cpp's server, Ollama,
a loopback proxy). For such a server, with no proxy in the environment, the client gets a TLS
context that verifies as the default one does (certificate required, host name checked) but
trusts no certificate: the client follows no redirect, so it never opens TLS, and if it ever
did, the handshake would fail rather than pass unverified.
"""

from __future__ import annotations

import os
import ssl

import httpx2

TIMEOUT = httpx2.Timeout(600.0, connect=10.0)
"""A reply may stream for minutes; a server that does not accept the connection is down."""

_PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def tls_for(base_url: str) -> ssl.SSLContext | bool:
    """What the client verifies TLS with: True (the system's certificates) unless the server
    is plain http with no proxy in the environment, then a context trusting nothing."""
    plain = base_url.lower().startswith("http://")
    if plain and not any(os.environ.get(name) for name in _PROXY_VARIABLES):
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED, hostname checked
    return True


def model_client(base_url: str) -> httpx2.AsyncClient:
    """A client for the model server at `base_url` (see the module's docstring)."""
    return httpx2.AsyncClient(timeout=TIMEOUT, verify=tls_for(base_url), follow_redirects=False)

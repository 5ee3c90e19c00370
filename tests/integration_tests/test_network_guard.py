"""The integration tests' network guard: loopback connects work, nothing else does."""

from __future__ import annotations

import socket
import warnings

import pytest
from pytest_socket import SocketConnectBlockedError


def test_non_loopback_connect_is_blocked() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pytest-socket also warns; filterwarnings=error
        with pytest.raises(SocketConnectBlockedError, match='host "203.0.113.1"'):
            sock.connect(("203.0.113.1", 80))


def test_dns_lookups_are_blocked() -> None:
    with pytest.raises(RuntimeError, match="tests are offline: resolving 'api.openai.com'"):
        socket.getaddrinfo("api.openai.com", 443)


def test_loopback_connections_work() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            conn, _ = server.accept()
            conn.close()

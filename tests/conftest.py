"""Suite-wide guards: no real provider clients, no network beyond loopback."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_socket import socket_allow_hosts

pytest_plugins = ["pytester", "langchain_om.testing.pytest_plugin"]

LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1"]
_RESOLUTION_CACHE: dict[str, set[str]] = {}
_real_getaddrinfo = socket.getaddrinfo


class NetworkBlockedError(RuntimeError):
    """A test tried to resolve a non-loopback host name."""


def _is_offline_host(host: Any) -> bool:
    if host is None:
        return True
    name = host.decode() if isinstance(host, bytes) else str(host)
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True  # an IP literal needs no DNS; connect() is guarded separately


def _loopback_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if not _is_offline_host(host):
        msg = f"tests are offline: resolving {host!r} is blocked (only loopback is allowed)"
        raise NetworkBlockedError(msg)
    return _real_getaddrinfo(host, *args, **kwargs)


@pytest.fixture(autouse=True)
def _loopback_only_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Allow sockets to loopback (PostgreSQL, local servers) and Unix sockets; block the rest."""
    monkeypatch.setattr(socket.socket, "connect", socket.socket.connect)  # restored afterwards
    socket_allow_hosts(LOOPBACK_HOSTS, allow_unix_socket=True, resolution_cache=_RESOLUTION_CACHE)
    monkeypatch.setattr(socket, "getaddrinfo", _loopback_getaddrinfo)
    yield

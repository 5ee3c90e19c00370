"""Integration tests: loopback only. Connecting elsewhere or resolving a remote name fails."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest

# tests.helpers is imported inside the fixtures: this conftest may load before
# tests/conftest.py has chosen the PostgreSQL server (and set LANGCHAIN_OM_POSTGRES_URL).

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
    return True  # an IP literal needs no DNS; pytest-socket's allow_hosts guards connect()


def _loopback_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if not _is_offline_host(host):
        msg = f"tests are offline: resolving {host!r} is blocked (only loopback is allowed)"
        raise NetworkBlockedError(msg)
    return _real_getaddrinfo(host, *args, **kwargs)


@pytest.fixture(autouse=True)
def _no_remote_name_resolution(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Resolve only loopback names and IP literals (pytest-socket leaves DNS open here)."""
    monkeypatch.setattr(socket, "getaddrinfo", _loopback_getaddrinfo)
    yield


@pytest.fixture
def postgres() -> Iterator[tuple[Any, Any]]:
    """A ``PostgresSaver`` and a ``PostgresStore`` on the test database, set up."""
    from tests.helpers import POSTGRES_URL, require_postgres  # noqa: PLC0415 - see above

    require_postgres()
    saver_cls = pytest.importorskip("langgraph.checkpoint.postgres").PostgresSaver
    store_cls = pytest.importorskip("langgraph.store.postgres").PostgresStore
    with (
        saver_cls.from_conn_string(POSTGRES_URL) as saver,
        store_cls.from_conn_string(POSTGRES_URL) as store,
    ):
        saver.setup()
        store.setup()
        yield saver, store

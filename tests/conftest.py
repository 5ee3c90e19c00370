"""Suite-wide setup: the provider-client guard, sockets by directory, shared fixtures.

Sockets: pytest runs with ``--disable-socket --allow-unix-socket`` (see ``addopts`` in
pyproject.toml), so a unit test cannot open a network socket or resolve a host name; Unix
sockets stay allowed because asyncio's event loop needs a socket pair. Tests collected under
``tests/integration_tests/`` are marked ``allow_hosts(["127.0.0.1"])``: they may connect to
loopback (PostgreSQL, the local model server) and nowhere else, and their conftest blocks the
resolution of any non-loopback host name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from langchain_om.models import clear_model_cache

pytest_plugins = ["pytester", "langchain_om.testing.pytest_plugin"]

INTEGRATION_TESTS = Path(__file__).resolve().parent / "integration_tests"
LOOPBACK = ["127.0.0.1"]
"""The only address integration tests may connect to."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Let integration tests reach loopback; unit tests keep every network socket blocked."""
    for item in items:
        if INTEGRATION_TESTS in item.path.resolve().parents:
            item.add_marker(pytest.mark.allow_hosts(LOOPBACK))


@pytest.fixture
def fresh_model_cache() -> Iterator[None]:
    """Models built from strings are cached per process: start and end the test with none."""
    clear_model_cache()
    yield
    clear_model_cache()

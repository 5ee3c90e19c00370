"""Suite-wide setup: the provider-client guard, sockets by directory, shared fixtures.

Sockets: pytest runs with ``--disable-socket --allow-unix-socket`` (see ``addopts`` in
pyproject.toml), so a unit test cannot open a network socket or resolve a host name; Unix
sockets stay allowed because asyncio's event loop needs a socket pair. Tests collected under
``tests/integration_tests/`` are marked ``allow_hosts(["127.0.0.1"])``: they may connect to
loopback (PostgreSQL, the local model server) and nowhere else, and their conftest blocks the
resolution of any non-loopback host name.

PostgreSQL: a run that includes the integration tests gets a server (see
``tests/postgres_server.py``): the one ``LANGCHAIN_OM_POSTGRES_URL`` names, else the system
server on 127.0.0.1:5432, else an embedded one started for the run. Unit-test runs start none.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from langchain_om.models import clear_model_cache
from tests import postgres_server

pytest_plugins = ["pytester", "langchain_om.testing.pytest_plugin"]

INTEGRATION_TESTS = Path(__file__).resolve().parent / "integration_tests"
LOOPBACK = ["127.0.0.1"]
"""The only address integration tests may connect to."""


_POSTGRES = postgres_server.Postgres("none")


def _runs_integration_tests(config: pytest.Config) -> bool:
    """Whether this run may collect integration tests (its paths, or ``testpaths``)."""
    if "not postgres" in (config.option.markexpr or ""):
        return False
    root = Path(str(config.invocation_params.dir))
    paths = [arg.split("::")[0] for arg in config.args] or [str(config.rootpath / "tests")]
    for arg in paths:
        path = (root / arg).resolve()
        if path == INTEGRATION_TESTS or INTEGRATION_TESTS in path.parents:
            return True
        if path in INTEGRATION_TESTS.parents:
            return True
    return False


def pytest_configure(config: pytest.Config) -> None:
    """Choose (or start) the PostgreSQL server before any test module reads its URL."""
    global _POSTGRES
    if _runs_integration_tests(config) and _POSTGRES.kind == "none":
        _POSTGRES = postgres_server.choose(os.environ)


def pytest_unconfigure(config: pytest.Config) -> None:
    postgres_server.stop(_POSTGRES)


def pytest_report_header(config: pytest.Config) -> str | None:
    return _POSTGRES.header if _runs_integration_tests(config) else None


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

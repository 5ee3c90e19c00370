"""With no PostgreSQL answering, a test run starts an embedded one and the PostgreSQL tests run
on it (not skipped); a named database always wins. Run as pytest itself, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT
from tests.postgres_server import SYSTEM_URL_ENV, URL_ENV

pytestmark = pytest.mark.slow

TEST = "tests/integration_tests/test_postgres.py::test_agent_on_postgres_resumes_with_memory"
NOWHERE = "postgresql://postgres@127.0.0.1:1/test"
"""A URL nothing answers at (port 1)."""


def _pytest(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", TEST],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_no_system_server_runs_the_postgres_tests_on_an_embedded_one() -> None:
    pytest.importorskip("pgserver")
    env = {k: v for k, v in os.environ.items() if k not in (URL_ENV, "CI")}
    env[SYSTEM_URL_ENV] = NOWHERE  # as if no server answered on 127.0.0.1:5432
    done = _pytest(env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "PostgreSQL: an embedded server (pgserver)" in done.stdout
    assert "1 passed" in done.stdout and "skipped" not in done.stdout


def test_a_named_database_is_never_replaced() -> None:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env[URL_ENV] = NOWHERE  # pointed away on purpose: the tests skip, nothing is started
    done = _pytest(env)
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"PostgreSQL: {URL_ENV} (as given)" in done.stdout
    assert "1 skipped" in done.stdout and f"no PostgreSQL at {NOWHERE}" in done.stdout

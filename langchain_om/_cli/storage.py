"""Where a command-line session's memory lives: a SQLite file or a PostgreSQL URL (``--db``).

Each is checked before memory opens it, so that a mistake is one line naming the fix: a path
that is a folder or not a SQLite file, a database ``inspect`` finds no memory in, a server that
does not answer (within a few seconds), a missing ``postgres`` extra. ``inspect`` never
creates or migrates anything; ``chat`` and ``replay`` create the file or the tables.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from langchain_om.engine import ObservationalMemory
from langchain_om.errors import ObservationalMemoryError

CONNECT_TIMEOUT_S = 3
"""Seconds a PostgreSQL server (or a ``--base-url`` server) may take to accept a connection."""
POOL_TIMEOUT_S = 10.0
"""Seconds a command waits for a connection of its PostgreSQL pool."""
_SQLITE_HEADER = b"SQLite format 3\x00"
_MEMORY_TABLES = ("checkpoints", "store")
_PASSWORD = re.compile(r"(://[^:/@]+:)[^@]*@")


class CLIError(ObservationalMemoryError):
    """A command-line mistake or an unreachable resource; printed as one line, exit code 2."""


def is_postgres_url(db: str) -> bool:
    """Whether ``--db`` names a PostgreSQL database rather than a SQLite file."""
    return db.startswith(("postgresql://", "postgres://"))


def shown(db: str) -> str:
    """``--db`` as printed: a URL's password masked."""
    return _PASSWORD.sub(r"\1***@", db)


def _check_sqlite(path: str, *, existing: bool) -> bool:
    """Check a SQLite ``--db``; return whether it holds memory's tables.

    Raises:
        CLIError: it is missing (when ``existing``), a folder, or not a SQLite file.
    """
    file = Path(path)
    if not file.exists():
        if existing:
            raise CLIError(
                f"No memory database at {path}: run `langchain-om replay FILE` or `chat` first, "
                "or pass --db with an existing .db file or a postgresql:// URL."
            )
        return False
    if file.is_dir():
        raise CLIError(f"{path} is a folder, not a SQLite file: pass --db FILE.db.")
    with file.open("rb") as handle:
        head = handle.read(len(_SQLITE_HEADER))
    if head and head != _SQLITE_HEADER:
        raise CLIError(
            f"{path} is not a SQLite database: pass --db with the .db file langchain-om wrote "
            "(or a postgresql:// URL)."
        )
    if not head:
        return False  # an empty file is an empty SQLite database
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
        try:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise CLIError(f"{path} cannot be read as a SQLite database ({exc}).") from None
    return any(table in names for table in _MEMORY_TABLES)


def _check_postgres(url: str) -> bool:
    """Connect once (a few seconds at most); return whether memory's tables are there.

    Raises:
        CLIError: the ``postgres`` extra is missing or the server does not accept the URL.
    """
    try:
        import psycopg  # noqa: PLC0415 - the optional postgres extra
    except ImportError:
        raise CLIError(
            f'--db {shown(url)} needs the postgres extra: pip install "langchain-om[postgres]"'
        ) from None
    try:
        with psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True) as conn:
            found = conn.execute(
                "SELECT " + ", ".join(f"to_regclass('{t}') IS NOT NULL" for t in _MEMORY_TABLES)
            ).fetchone()
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise CLIError(f"Cannot connect to PostgreSQL at {shown(url)}: {reason}") from None
    return bool(found and any(found))


def check_db(db: str, *, read_only: bool) -> None:
    """Check ``--db`` before anything else starts (models, servers): one line if it is wrong.

    Raises:
        CLIError: the database is missing or empty (read-only), not a database, or
            unreachable.
    """
    postgres = is_postgres_url(db)
    has_memory = _check_postgres(db) if postgres else _check_sqlite(db, existing=read_only)
    if read_only and not has_memory:
        raise CLIError(
            f"{shown(db)} holds no langchain-om memory yet: run `langchain-om replay FILE` or "
            "`chat` on it first (or an app using this database)."
        )


def open_db(db: str, *, read_only: bool, **options: Any) -> ObservationalMemory:
    """Open the memory at ``db`` (``options`` as for :class:`ObservationalMemory`).

    Args:
        db: a SQLite file or a ``postgresql://`` URL.
        read_only: ``inspect``: the database must exist and hold memory; nothing is created.
        **options: memory options and engine arguments.

    Raises:
        CLIError: as :func:`check_db`.
    """
    check_db(db, read_only=read_only)
    if is_postgres_url(db):
        return ObservationalMemory.from_postgres(
            db, pool={"timeout": POOL_TIMEOUT_S}, setup=not read_only, **options
        )
    return ObservationalMemory.from_sqlite(db, **options)
